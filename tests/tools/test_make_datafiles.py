"""Tests of tools/make_datafiles.py: .story files and JSONL to the original's finished_files.

The .bin files it writes are walked here with struct and tf.train.Example directly (the original's
own layout), and the vocab is counted again from them as the original counted it.
"""

import collections
import hashlib
import io
import json
import os
import struct

from absl import flags
import pytest
import tensorflow as tf

from helpers import finish_tool_runs, load_tool, start_tool_runs
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import bin_format
from pointer_gen.formats import skips as skips_lib

md = load_tool("make_datafiles")

# Hand-written stories and the article / abstract the original pipeline makes of them
# (CoreNLP's tokens, ASCII lower-casing, " ." added to a line that does not end a sentence).
HAND_STORIES = {
    "full": ("Hello, world\n\nIt's fine.\n\n@highlight\n\nFirst point\n\n@highlight\n\n"
             "Second one.",
             "hello , world . it 's fine .",
             "<s> first point . </s> <s> second one . </s>"),
    "no_highlights": ("Only an article here.\n",
                      "only an article here .", ""),
    "blank_lines": ("\n\n  First para  \n\n\n\nSecond para!\n\n@highlight\n\n\n\nA highlight\n",
                    "first para . second para !", "<s> a highlight . </s>"),
    # Non-ASCII letters keep their case; curly quotes become `` and ''; the pound sign is #.
    "non_ascii": ("Café owner said \u201cno\u201d.\n\n@highlight\n\n\u00c9cole costs \u00a35",
                  "café owner said `` no '' .", "<s> \u00c9cole costs # 5 . </s>"),
    # Text after the first @highlight line that is not a marker is a highlight, line by line.
    "two_after_one_marker": ("Body text.\n@highlight\nOne.\nTwo.",
                             "body text .", "<s> one . </s> <s> two . </s>"),
}
# The original writes it as it is; the project's reader skips it.
EMPTY_ARTICLE = ("\n\n@highlight\n\nOnly a highlight", "", "<s> only a highlight . </s>")
N_TRAIN = 2300  # three chunks of the default 1,000: 1,000, 1,000 and 300


def _url(name):
  return f"http://www.example.com/news/{name}.html"


def _story_name(url):
  return hashlib.sha1(url.encode("utf-8")).hexdigest() + ".story"


def _filler(i):
  return (f"Story number {i} is short\n\n@highlight\n\nPoint {i}",
          f"story number {i} is short .", f"<s> point {i} . </s>")


def _write_stories(root, splits, dirs=("cnn", "dailymail")):
  """Writes {split: {name: text}} as .story files spread over `dirs` and the url lists, a
  story of its own for each split not given; returns (stories dirs, url lists dir)."""
  story_dirs = [root / d / "stories" for d in dirs]
  for d in story_dirs:
    d.mkdir(parents=True)
  lists = root / "url_lists"
  lists.mkdir()
  splits = {s: splits.get(s, {f"{s}_filler": _filler(0)[0]}) for s in md.SPLITS}
  for split, stories in splits.items():
    urls = []
    for i, (name, body) in enumerate(stories.items()):
      url = _url(name)
      (story_dirs[i % len(story_dirs)] / _story_name(url)).write_text(body, encoding="utf-8")
      urls.append(url)
    (lists / f"all_{split}.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
  return [str(d) for d in story_dirs], str(lists)


def _run(sources, out_dir, **kwargs):
  out = io.StringIO()
  md.make_datafiles(sources, str(out_dir), "ptb", True, out=out, **kwargs)
  return out.getvalue()


def _walk(path):
  """(article, abstract) of each record of a .bin file, read as the original's layout."""
  data = path.read_bytes()
  pairs = []
  pos = 0
  while pos < len(data):
    (n,) = struct.unpack("q", data[pos:pos + 8])
    example = tf.train.Example.FromString(data[pos + 8:pos + 8 + n])
    feature = example.features.feature
    assert sorted(feature) == ["abstract", "article"]
    pairs.append(tuple(feature[k].bytes_list.value[0].decode("utf-8")
                       for k in ("article", "abstract")))
    pos += 8 + n
  assert pos == len(data)
  return pairs


def _original_vocab(pairs):
  """The original's vocab counts: article and abstract split on spaces, tags removed."""
  counts = collections.Counter()
  for article, abstract in pairs:
    tokens = article.split(" ") + [t for t in abstract.split(" ") if t not in ("<s>", "</s>")]
    counts.update(t for t in tokens if t.strip())
  return counts


# ---------------------------------------------------------------- stories

@pytest.fixture(scope="module")
def story_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("stories")
  train = {f"filler{i}": _filler(i)[0] for i in range(N_TRAIN - len(HAND_STORIES))}
  # The hand-written stories go in the middle of the second chunk.
  items = list(train.items())
  items[1500:1500] = [(name, body) for name, (body, _, _) in HAND_STORIES.items()]
  splits = {"train": dict(items),
            "val": {"val_full": HAND_STORIES["full"][0], "val_filler": _filler(7)[0]},
            "test": {"test_no_highlights": HAND_STORIES["no_highlights"][0],
                     "empty_article": EMPTY_ARTICLE[0]}}
  dirs, lists = _write_stories(root, splits)
  # val_filler is in dailymail/stories; a copy in the first --stories_dir takes precedence.
  # Its 3 invalid bytes (a lone one, two of a three-byte sequence) are dropped.
  bad = root / "cnn" / "stories" / _story_name(_url("val_filler"))
  bad.write_bytes(b"Story \xe2\x82number 7 \xff is short\n\n@highlight\n\nPoint 7")
  out_dir = root / "finished_files"
  output = _run(md.story_sources(dirs, lists, lowercase=True), out_dir)
  return out_dir, output, items


def test_stories_records_are_the_original_processing(story_run):
  out_dir, _, items = story_run
  expected = []
  for name, _ in items:
    if name in HAND_STORIES:
      expected.append(HAND_STORIES[name][1:])
    else:
      expected.append(_filler(int(name[len("filler"):]))[1:])
  assert _walk(out_dir / "train.bin") == expected
  assert _walk(out_dir / "val.bin") == [HAND_STORIES["full"][1:], _filler(7)[1:]]
  assert _walk(out_dir / "test.bin") == [HAND_STORIES["no_highlights"][1:], EMPTY_ARTICLE[1:]]


def test_stories_chunks_of_1000_and_whole_split_files(story_run):
  out_dir, _, _ = story_run
  chunked = out_dir / "chunked"
  assert sorted(os.listdir(chunked)) == ["test_000.bin", "train_000.bin", "train_001.bin",
                                         "train_002.bin", "val_000.bin"]
  train_chunks = [chunked / f"train_{i:03d}.bin" for i in range(3)]
  assert [len(_walk(p)) for p in train_chunks] == [1000, 1000, 300]
  assert b"".join(p.read_bytes() for p in train_chunks) == (out_dir / "train.bin").read_bytes()
  assert (chunked / "val_000.bin").read_bytes() == (out_dir / "val.bin").read_bytes()
  # Nothing else is left in the output directory (no staging or temporary files).
  assert sorted(os.listdir(out_dir)) == ["chunked", "test.bin", "train.bin", "val.bin", "vocab",
                                         "vocab.tokenization.json"]


def test_stories_read_back_by_the_project_reader(story_run):
  out_dir, _, _ = story_run
  skips = skips_lib.SkipCounter()
  back = list(bin_format.BIN.read(str(out_dir / "chunked" / "train_001.bin"), skips))
  assert skips.total == 0
  pairs = _walk(out_dir / "chunked" / "train_001.bin")
  assert [(r.article, r.abstract_sentences) for r in back] == [
      (a, base.abstract_to_sentences(b)) for a, b in pairs]
  full = next(r for r in back if r.article == HAND_STORIES["full"][1])
  assert full.abstract_sentences == ["first point .", "second one ."]


def test_stories_vocab_is_the_original_count(story_run):
  out_dir, _, _ = story_run
  counts = _original_vocab(_walk(out_dir / "train.bin"))
  lines = (out_dir / "vocab").read_text(encoding="utf-8").splitlines()
  assert lines == [f"{w} {c}" for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
  # Read from the .bin files by splitting on whitespace; made from raw text by ptb, lower-cased.
  assert json.loads((out_dir / "vocab.tokenization.json").read_text(encoding="utf-8")) == {
      "tokenizer": "whitespace", "lowercase": False, "raw_tokenizer": "ptb",
      "raw_lowercase": True}
  # Spot checks by hand: every filler story has "story", "is", "short", "point" and two "."
  # (the article's and the highlight's); the hand-written ones add more.
  got = dict(line.split(" ") for line in lines)
  assert got["short"] == str(N_TRAIN - len(HAND_STORIES))
  assert got["café"] == "1" and got["\u00c9cole"] == "1" and got["#"] == "1"
  assert "<s>" not in got and "</s>" not in got


def test_stories_without_highlights_or_article_are_counted_and_named(story_run):
  out_dir, output, _ = story_run
  no_highlights = _story_name(_url("no_highlights"))
  assert (f"train: 1 stories without highlights (written with an empty abstract): "
          f"{out_dir.parent}/dailymail/stories/{no_highlights}\n") in output
  assert "test: 1 stories without highlights" in output
  assert (f"test: 1 stories with an empty article (written as it is): {out_dir.parent}/"
          f"dailymail/stories/{_story_name(_url('empty_article'))}\n") in output
  assert (f"val: 1 stories not valid UTF-8 (their invalid bytes dropped, as the original's "
          f"CoreNLP step did):\n  {out_dir.parent}/cnn/stories/"
          f"{_story_name(_url('val_filler'))}: 3 bytes\n") in output
  assert output.count("not valid UTF-8") == 1
  assert "train: 2300 stories in " in output and " stories/s)" in output
  assert "vocab: " in output and f"Wrote train.bin, val.bin, test.bin, vocab, " \
      f"vocab.tokenization.json and 5 chunked files to {out_dir}" in output


def test_missing_stories_are_all_named_and_nothing_is_written(tmp_path):
  dirs, lists = _write_stories(tmp_path, {
      "train": {"a": "A.\n\n@highlight\n\nB", "gone1": "x"},
      "test": {"gone2": "y", "b": "B."}})
  for name in ("gone1", "gone2"):
    for d in dirs:
      path = os.path.join(d, _story_name(_url(name)))
      if os.path.exists(path):
        os.remove(path)
  with pytest.raises(DataError) as e:
    md.story_sources(dirs, lists, lowercase=True)
  message = str(e.value)
  assert message.startswith(f"2 of the 5 stories listed in --url_lists={lists} are in no "
                            f"--stories_dir ({dirs[0]}, {dirs[1]})")
  assert f"all_train.txt: {_url('gone1')} -> {_story_name(_url('gone1'))}" in message
  assert f"all_test.txt: {_url('gone2')} -> {_story_name(_url('gone2'))}" in message
  assert _url("a") not in message


def test_unreadable_story_is_named_and_leaves_no_output(tmp_path):
  dirs, lists = _write_stories(tmp_path, {
      "train": {f"s{i}": f"Story {i}.\n\n@highlight\n\nH" for i in range(5)}})
  broken = os.path.join(dirs[1], _story_name(_url("s3")))
  os.remove(broken)
  os.mkdir(broken)  # a directory where the story should be: cannot be read
  out_dir = tmp_path / "out"
  with pytest.raises(DataError, match=f"{broken}: cannot read the story of {_url('s3')} "
                     r"\(Is a directory\)"):
    _run(md.story_sources(dirs, lists, lowercase=True), out_dir)
  assert os.listdir(out_dir) == []


def test_interrupted_run_leaves_no_finished_file(tmp_path):
  dirs, lists = _write_stories(tmp_path, {
      "train": {f"s{i}": f"Story {i}.\n\n@highlight\n\nH" for i in range(30)}})
  source = md.story_sources(dirs, lists, lowercase=True)[0]

  def interrupted():
    for i, story in enumerate(source.stories):
      if i == 25:
        raise KeyboardInterrupt
      yield story

  out_dir = tmp_path / "out"
  with pytest.raises(KeyboardInterrupt):
    _run([source._replace(stories=interrupted())], out_dir, chunk_size=10)
  assert os.listdir(out_dir) == []


def test_refuses_an_out_dir_with_finished_files_of_its_splits(tmp_path):
  path = tmp_path / "val.jsonl"
  path.write_text(json.dumps({"article": "Aa.", "abstract": "Bb"}) + "\n", encoding="utf-8")
  out_dir = tmp_path / "out"
  out_dir.mkdir()
  # Another split's files and the vocab (made from train) do not stand in the way of val.
  (out_dir / "train.bin").write_bytes(b"old train")
  (out_dir / "vocab").write_bytes(b"old vocab")

  def sources():
    return md.jsonl_sources({"val": str(path)}, skips_lib.SkipCounter(), "article", "")

  _run(sources(), out_dir)
  assert _walk(out_dir / "val.bin") == [("aa .", "<s> bb . </s>")]
  before = {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
  with pytest.raises(DataError, match=rf"--out_dir={out_dir} already holds 2 finished files "
                     rf"\(e\.g\. {out_dir}/val\.bin\); remove them or choose another directory"):
    _run(sources(), out_dir)
  assert {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()} == before
  assert (out_dir / "train.bin").read_bytes() == b"old train"


def test_progress_line_gives_rate_and_eta():
  now = [100.0]
  out = io.StringIO()
  progress = md.Progress("train", 1000, every=10, clock=lambda: now[0], out=out)
  now[0] = 105.0
  progress.step(100)  # before the first interval: silent
  now[0] = 120.0
  progress.step(100)  # 200 stories in 20 s: 10/s, 800 left: 80 s
  now[0] = 200.0
  progress.finish()
  assert out.getvalue().splitlines() == [
      "train: 200/1000 stories, 10.0 stories/s, ETA 0:01:20",
      "train: 200 stories in 0:01:40 (2.0 stories/s)"]


# ---------------------------------------------------------------- JSONL


def test_jsonl_gives_byte_identical_files(tmp_path):
  stories = {name: body for name, (body, _, _) in HAND_STORIES.items()}
  dirs, lists = _write_stories(tmp_path, {"train": stories})
  from_stories = tmp_path / "from_stories"
  _run(md.story_sources(dirs, lists, lowercase=True), from_stories)
  # The same stories as Hugging Face CNN/DM has them: the article and the highlights as one
  # newline-separated string, read without --abstract_key; and as a list of sentences.
  hf, listed = [], []
  for body in stories.values():
    lines = body.split("\n")
    marker = next((i for i, line in enumerate(lines) if line.strip() == "@highlight"),
                  len(lines))
    article = "\n".join(lines[:marker])
    highlights = [line for line in lines[marker:] if line.strip() not in ("", "@highlight")]
    hf.append({"id": "x", "article": article, "highlights": "\n".join(highlights)})
    listed.append({"article": article, "abstract_sentences": highlights})
  for name, rows, key in (("hf", hf, ""), ("listed", listed, "")):
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    out_dir = tmp_path / f"from_{name}"
    _run(md.jsonl_sources({"train": str(path)}, skips_lib.SkipCounter(), "article", key), out_dir)
    for f in ("train.bin", "chunked/train_000.bin", "vocab"):
      assert (out_dir / f).read_bytes() == (from_stories / f).read_bytes(), (name, f)


def test_jsonl_first_record_without_the_fields_is_an_error_naming_them(tmp_path):
  path = tmp_path / "xsum.jsonl"
  path.write_text("\n{broken\n" + json.dumps({"article": "A", "summary": "S", "id": 1}) + "\n",
                  encoding="utf-8")
  with pytest.raises(DataError) as e:
    md.jsonl_sources({"train": str(path)}, skips_lib.SkipCounter(), "article", "")
  assert str(e.value) == (f"{path}: line 3 has the fields article, id, summary, none of "
                          "abstract_sentences, abstract or highlights: give the field of the "
                          "summary with --abstract_key")
  with pytest.raises(DataError) as e:
    md.jsonl_sources({"train": str(path)}, skips_lib.SkipCounter(), "article", "highlights")
  assert str(e.value) == (f"{path}: line 3 has the fields article, id, summary, no "
                          "--abstract_key=highlights: give the field of the summary")


def test_a_split_without_records_is_an_error_and_nothing_is_written(tmp_path):
  dirs, lists = _write_stories(tmp_path, {})
  (tmp_path / "url_lists" / "all_test.txt").write_text("\n", encoding="utf-8")
  out_dir = tmp_path / "out"
  with pytest.raises(DataError) as e:
    _run(md.story_sources(dirs, lists, lowercase=True), out_dir)
  assert str(e.value) == f"test: no records from {lists}/all_test.txt; nothing written"
  # train and val were complete: neither is kept.
  assert os.listdir(out_dir) == []


def test_jsonl_max_size_and_chunk_size(tmp_path):
  path = tmp_path / "val.jsonl"
  path.write_text("".join(json.dumps({"article": f"A{i} bb cc.", "highlights": "Hi."}) + "\n"
                          for i in range(5)), encoding="utf-8")
  out_dir = tmp_path / "out"
  output = _run(md.jsonl_sources({"train": str(path)}, skips_lib.SkipCounter(), "article",
                                 "highlights"), out_dir, chunk_size=2, max_size=4)
  assert [len(_walk(out_dir / "chunked" / f"train_{i:03d}.bin")) for i in range(3)] == [2, 2, 1]
  # Hand count: "." 10 (5 articles, 5 highlights), "bb" 5, "cc" 5, "hi" 5, then a0..a4 once.
  assert (out_dir / "vocab").read_text(encoding="utf-8").splitlines() == [
      ". 10", "bb 5", "cc 5", "hi 5"]
  assert "vocab: 4 words (of 9 distinct in train)" in output


# ---------------------------------------------------------------- against the oracle


# The share of articles and of abstracts that must come out exactly as the original pipeline
# wrote them. CoreNLP tokenised a whole story, and a few paragraphs' last tokens depend on the
# next paragraph; the tokenizer sees one line at a time, as a served article's paragraphs.
ORACLE_MATCH = 0.995


def _oracle_stories(rows):
  """The oracle's .story layout: paragraphs separated by a blank line, then a blank line,
  `@highlight`, a blank line and the sentence for each summary sentence."""
  return {row["id"]: "\n\n".join(row["article_raw"].split("\n")) + "".join(
      f"\n\n@highlight\n\n{s}" for s in row["abstract_sentences_raw"]) for row in rows}


@pytest.mark.parametrize("lowercase, suffix", [(True, ""), (False, "_cased")])
def test_oracle_val_matches_the_original_pipeline(ptb_oracle, tmp_path, lowercase, suffix):
  with open(ptb_oracle / "bbc_val.jsonl", encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
  dirs, lists = _write_stories(tmp_path, {"val": _oracle_stories(rows)})
  out = io.StringIO()
  md.make_datafiles(md.story_sources(dirs, lists, lowercase), str(tmp_path / "out"), "ptb",
                    lowercase, out=out)
  got = _walk(tmp_path / "out" / "val.bin")
  assert len(got) == len(rows) == 200
  wrong_articles = [row["id"] for (a, _), row in zip(got, rows)
                    if a != row["article_tokens" + suffix]]
  wrong_abstracts = [row["id"] for (_, b), row in zip(got, rows) if b != row["abstract" + suffix]]
  assert len(wrong_articles) <= (1 - ORACLE_MATCH) * len(rows), wrong_articles
  assert len(wrong_abstracts) <= (1 - ORACLE_MATCH) * len(rows), wrong_abstracts
  if not lowercase:
    return
  # The same stories as Hugging Face-style JSONL give the same bytes.
  path = tmp_path / "val.jsonl"
  path.write_text("".join(json.dumps({"article": row["article_raw"], "highlights": "\n".join(
      row["abstract_sentences_raw"])}) + "\n" for row in rows), encoding="utf-8")
  _run(md.jsonl_sources({"val": str(path)}, skips_lib.SkipCounter(), "article", "highlights"),
       tmp_path / "jsonl")
  assert ((tmp_path / "jsonl" / "val.bin").read_bytes()
          == (tmp_path / "out" / "val.bin").read_bytes())


# ---------------------------------------------------------------- command line


def test_importing_the_tool_defines_no_flags():
  # The project's flags of the same names (pointer_gen.config's, which importing run defines)
  # can be defined beside it.
  from pointer_gen import run  # pylint: disable=g-import-not-at-top,unused-import
  assert "stories_dir" not in flags.FLAGS
  assert flags.FLAGS["tokenizer"].default == "whitespace"


@pytest.mark.slow
def test_command_line(tmp_path):
  dirs, lists = _write_stories(tmp_path, {"test": {
      "a": HAND_STORIES["full"][0], "b": HAND_STORIES["non_ascii"][0]}})
  (tmp_path / "val.jsonl").write_text(
      json.dumps({"document": "Two words", "summary": "One\nTwo"}) + "\n{broken\n",
      encoding="utf-8")
  # Failing runs: each must fail before writing anything.
  no_test_list = tmp_path / "no_test_list"
  no_test_list.mkdir()
  for split in ("train", "val"):
    (no_test_list / f"all_{split}.txt").write_text(_url("a") + "\n", encoding="utf-8")
  a_file = tmp_path / "a_file"
  a_file.write_text("x", encoding="utf-8")
  (tmp_path / "empty.jsonl").write_text(
      json.dumps({"document": "A", "summary": 5}) + "\n", encoding="utf-8")
  failing = {
      "both": [f"--stories_dir={dirs[0]}", f"--url_lists={lists}",
               f"--test_jsonl={tmp_path}/val.jsonl", f"--out_dir={tmp_path}/out_both"],
      # Checked before anything is read: the missing stories and url lists go unnoticed.
      "out_dir": [f"--stories_dir={tmp_path}/none", f"--url_lists={tmp_path}/none",
                  f"--out_dir={a_file}/out"],
      "url_list": [f"--stories_dir={dirs[0]}", f"--url_lists={no_test_list}",
                   f"--out_dir={tmp_path}/out_url_list"],
      "fields": [f"--val_jsonl={tmp_path}/val.jsonl", f"--out_dir={tmp_path}/out_fields"],
      "empty": [f"--train_jsonl={tmp_path}/val.jsonl", "--article_key=document",
                "--abstract_key=summary", f"--val_jsonl={tmp_path}/empty.jsonl",
                f"--out_dir={tmp_path}/out_empty"],
  }
  runs = {
      "stories": [f"--stories_dir={dirs[0]}", f"--stories_dir={dirs[1]}", f"--url_lists={lists}",
                  f"--out_dir={tmp_path}/out"],
      "jsonl": [f"--val_jsonl={tmp_path}/val.jsonl", "--article_key=document",
                "--abstract_key=summary", "--lowercase=false", f"--out_dir={tmp_path}/out_jsonl"],
      **failing,
  }
  # One process, the stories as the command line runs them.
  results = dict(zip(runs, finish_tool_runs(start_tool_runs("make_datafiles.py",
                                                            list(runs.values())), timeout=300)))
  code, out, err = results.pop("stories")
  assert code == 0, err
  assert (f"Wrote train.bin, val.bin, test.bin, vocab, vocab.tokenization.json and 3 chunked "
          f"files to {tmp_path}/out" in out)
  assert _walk(tmp_path / "out" / "test.bin") == [HAND_STORIES["full"][1:],
                                                  HAND_STORIES["non_ascii"][1:]]
  code, out, err = results.pop("jsonl")
  assert code == 0, err
  assert "JSONL: skipped 1 records (invalid JSON: 1)" in out
  assert _walk(tmp_path / "out_jsonl" / "val.bin") == [
      ("Two words .", "<s> One . </s> <s> Two . </s>")]
  # The error each ends with, the last line of its stderr.
  results = {name: [code, err.splitlines()[-1]] for name, (code, _, err) in results.items()}
  error = "make_datafiles: error: "
  assert results == {
      "both": [1, f"{error}give either --stories_dir and --url_lists or --train_jsonl/"
               "--val_jsonl/--test_jsonl, not both"],
      "out_dir": [1, f"{error}--out_dir={a_file}/out: {a_file} is a file, not a directory"],
      "url_list": [1, f"{error}--url_lists={no_test_list}: no {no_test_list}/all_test.txt (the "
                   "url lists of the train, val and test splits, all three needed)"],
      "fields": [1, f"{error}{tmp_path}/val.jsonl: line 1 has the fields document, summary, no "
                 "--article_key=article: give the field of the article"],
      "empty": [1, f"{error}val: no records from --val_jsonl={tmp_path}/empty.jsonl: skipped 1 "
                "records (wrong type for 'summary': 1); nothing written"],
  }
  assert sorted(os.listdir(tmp_path)) == [
      "a_file", "cnn", "dailymail", "empty.jsonl", "no_test_list", "out", "out_empty",
      "out_jsonl", "url_lists", "val.jsonl"]
  # The train split was complete when val came out empty: it is not kept either.
  assert os.listdir(tmp_path / "out_empty") == []
