"""Raw text is served as the data was prepared: the paper's path from raw .story files through
tools/make_datafiles.py (ptb, lower-cased) and training on its .bin files to a SavedModel and a
raw-JSONL decode that tokenise raw English as the .bin files were made, with no tokenizer flag;
a run recorded before this was known works with a statement of it; a statement that contradicts
what is known is an error naming both.
"""

import glob
import hashlib
import io
import json
import os
import shutil

import pytest
import tensorflow as tf

from pointer_gen.base.errors import DataError
from pointer_gen.data import run_record
from pointer_gen.formats import bin_format
from pointer_gen.formats import skips as skips_lib
from pointer_gen.formats import tfrecord_format

from helpers import load_tool
from helpers import run_main
from helpers import settle

md = load_tool("make_datafiles")

MAX_ENC_STEPS = 30
TINY = ("--vocab_size=0", "--hidden_dim=8", "--emb_dim=8", "--batch_size=2",
        f"--max_enc_steps={MAX_ENC_STEPS}", "--max_dec_steps=6", "--seed=1")
DECODE = ("--mode=decode", "--single_pass", "--beam_size=2", "--min_dec_steps=1",
          "--max_dec_steps=5", "--batch_size=2", "--nocompiled_attention")
# Brackets, n't, 's, quotes, U.S., $ and lines without a final period: ptb's tokens differ from
# whitespace-split words and keep their case only when not lower-cased.
ARTICLES = [
    "The mayor (who was elected in 2010) said he didn't know.\n\nOfficials said the U.S. plan "
    "isn't ready, and it costs $5.5m \"at least\" according to the council's report",
    "Police can't say why the bridge (built in 1890) closed on Monday.\n\nDrivers weren't told;"
    " some said it's \"a scandal\" and others didn't care",
    "A new school opens in London's east end.\n\nParents say they're happy (mostly) but fees "
    "aren't low: about $3,000 a year, the head teacher said",
    "The team won't play on Sunday after storms hit the U.K.\n\nFans (many from abroad) "
    "weren't refunded yet and the club's chairman didn't comment",
]
HIGHLIGHTS = [["Mayor didn't know", "U.S. plan isn't ready."], ["Bridge (1890) closed"],
              ["School opens in London"], ["Team won't play", "Fans weren't refunded"]]
SPLITS = {"train": [0, 1, 2, 3], "val": [0], "test": [1, 3]}


def _story(i):
  return ARTICLES[i] + "".join(f"\n\n@highlight\n\n{h}" for h in HIGHLIGHTS[i])


def _write_stories(root):
  """The .story files of every split in one directory, and their url lists."""
  stories, lists = root / "stories", root / "url_lists"
  stories.mkdir()
  lists.mkdir()
  for split, indices in SPLITS.items():
    urls = [f"http://www.example.com/{split}/{i}.html" for i in indices]
    for url, i in zip(urls, indices):
      name = hashlib.sha1(url.encode("utf-8")).hexdigest() + ".story"
      (stories / name).write_text(_story(i), encoding="utf-8")
    (lists / f"all_{split}.txt").write_text("\n".join(urls) + "\n", encoding="utf-8")
  return [str(stories)], str(lists)


def _decode_dir(run_dir, data_name):
  [directory] = glob.glob(os.path.join(run_dir, f"decode_{data_name}_{MAX_ENC_STEPS}maxenc_*"))
  return directory


def _decoded(run_dir, data_name, kind="decoded"):
  """{file name: text} of a decode's `kind` (decoded or reference) files."""
  directory = _decode_dir(run_dir, data_name)
  return {os.path.basename(p): open(p, encoding="utf-8").read()
          for p in sorted(glob.glob(os.path.join(directory, kind, "*.txt")))}


class _NoCapture:
  """run_main's capsys for a module fixture (output is not checked there)."""

  @staticmethod
  def readouterr():
    return "", ""


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
  """Stories -> make_datafiles -> 2 training steps on its .bin -> export and decodes, all with
  no tokenizer or case flag."""
  root = tmp_path_factory.mktemp("raw_text")
  out = root / "finished_files"
  md.make_datafiles(md.story_sources(*_write_stories(root), lowercase=True), str(out), "ptb",
                    True, out=io.StringIO())
  # The test split's stories as raw JSONL: the same data set as test.bin, raw.
  raw = root / "test.jsonl"
  raw.write_text("".join(json.dumps({"article": ARTICLES[i], "abstract_sentences": HIGHLIGHTS[i]})
                         + "\n" for i in SPLITS["test"]), encoding="utf-8")
  log_root = root / "runs"
  run = ("--exp_name=stories", f"--log_root={log_root}")
  for args in (
      ("--mode=train", f"--data_path={out}/chunked/train_*", f"--vocab_path={out}/vocab", *TINY,
       "--num_train_steps=2", "--checkpoint_secs=1000"),
      ("--mode=export", f"--export_dir={root}/exports", "--beam_size=2", "--min_dec_steps=1",
       "--max_dec_steps=5"),
      (*DECODE, f"--data_path={raw}"),
      (*DECODE, f"--data_path={out}/test.bin")):
    code, _, err = run_main(_NoCapture(), *run, *args)
    assert code == 0, err
  [saved] = glob.glob(str(root / "exports" / "*"))
  return {"root": root, "out": out, "raw": raw, "log_root": log_root, "run_dir": log_root /
          "stories", "saved": saved, "run": run}


def test_export_tokenises_raw_articles_as_make_datafiles_made_the_bin(prepared):
  # The run records what the vocab's .tokenization.json says, without a flag.
  recorded = run_record.read(prepared["run_dir"])
  assert (recorded.settings["tokenizer"], recorded.settings["lowercase"],
          recorded.raw_tokenizer, recorded.raw_lowercase) == ("whitespace", False, "ptb", True)
  loaded = tf.saved_model.load(prepared["saved"])
  articles = [ARTICLES[i] for i in SPLITS["test"]]
  got = loaded.signatures["attention"](article=tf.constant(articles))["article_tokens"]
  got = [[t.decode("utf-8") for t in row if t] for row in got.numpy()]
  made = [r.article.split(" ") for r in bin_format.BIN.read(str(prepared["out"] / "test.bin"),
                                                           skips_lib.SkipCounter())]
  assert got == [tokens[:MAX_ENC_STEPS] for tokens in made]
  # The comparison means something: the articles are cut, and split on whitespace with case
  # kept they would be other tokens.
  assert all(len(tokens) > MAX_ENC_STEPS for tokens in made)
  assert "-lrb-" in got[0] and "n't" in got[1]
  assert all(a.split()[:MAX_ENC_STEPS] != g for a, g in zip(articles, got))
  settings = {k: v.numpy().decode("utf-8") if v.dtype == tf.string else v.numpy().item()
              for k, v in loaded.signatures["settings"]().items()}
  with open(os.path.join(prepared["saved"], "assets.extra", "pointer_gen_export.json"),
            encoding="utf-8") as f:
    reported = json.load(f)
  expected = {"raw_tokenizer": "ptb", "raw_lowercase": True, "tokenizer": "whitespace",
              "lowercase": False}
  assert {k: reported[k] for k in expected} == expected
  assert {k: settings[k] for k in expected} == expected


def test_decode_of_raw_jsonl_gives_the_summaries_references_and_rouge_of_its_bin(prepared):
  """Two data sets of one split, in two directories; the raw references are tokenised and
  lower-cased as make_datafiles made the .bin's, so the figures are the same."""
  run_dir = prepared["run_dir"]
  from_raw = _decoded(run_dir, "test_jsonl")
  assert len(from_raw) == len(SPLITS["test"])
  assert from_raw == _decoded(run_dir, "test")
  references = _decoded(run_dir, "test_jsonl", "reference")
  assert references == _decoded(run_dir, "test", "reference")
  # The .bin's abstracts, independently: their sentences between the tags, one a line.
  made = [r.abstract_sentences for r in bin_format.BIN.read(str(prepared["out"] / "test.bin"),
                                                          skips_lib.SkipCounter())]
  assert list(references.values()) == ["\n".join(sentences) + "\n" for sentences in made]
  assert "-lrb- 1890 -rrb-" in references["000000_reference.txt"]
  metrics = {}
  for name in ("test_jsonl", "test"):
    with open(os.path.join(_decode_dir(run_dir, name), "metrics.json"), encoding="utf-8") as f:
      metrics[name] = json.load(f)
  assert metrics["test_jsonl"]["rouge"] == metrics["test"]["rouge"]
  assert metrics["test_jsonl"]["ngrams"] == metrics["test"]["ngrams"]
  used = metrics["test_jsonl"]["flags"]
  assert (used["tokenizer"], used["raw_tokenizer"], used["raw_lowercase"]) == (
      "whitespace", "ptb", True)


def test_a_run_recorded_before_works_with_the_statement_which_it_records(prepared, capsys,
                                                                         tmp_path):
  """As a run trained on the original's finished_files before raw text was recorded: a vocab
  without .tokenization.json and a run_config.json without raw_tokenizer."""
  vocab = tmp_path / "original" / "vocab"
  vocab.parent.mkdir()
  shutil.copy(prepared["out"] / "vocab", vocab)
  run_dir = tmp_path / "runs" / "stories"
  shutil.copytree(prepared["run_dir"], run_dir,
                  ignore=shutil.ignore_patterns("decode_*", "trainer.lock"))
  old = json.loads((run_dir / "run_config.json").read_text(encoding="utf-8"))
  del old["raw_tokenizer"], old["raw_lowercase"]
  old["vocab_path"] = str(vocab)
  (run_dir / "run_config.json").write_text(json.dumps(old), encoding="utf-8")
  run = (f"--log_root={tmp_path / 'runs'}", "--exp_name=stories")

  with pytest.raises(DataError) as raised:
    settle("--mode=export", *run, "--export_dir=x")
  assert str(raised.value) == (
      "--mode=export needs to know how raw text became this model's tokens, and nothing says "
      "it: the run reads its data with --tokenizer=whitespace --lowercase=false (pre-tokenised "
      f"text, such as the original's .bin files), and neither {run_dir}/run_config.json nor the "
      f"vocab's {vocab}.tokenization.json records how that text was tokenised. State it once "
      "with --raw_tokenizer and --raw_lowercase (then recorded in run_config.json): "
      "--raw_tokenizer=ptb --raw_lowercase for CNN/DailyMail's finished_files and the original's "
      "pretrained models; --raw_tokenizer=whitespace if raw text is to be split on whitespace "
      "only")

  code, _, err = run_main(capsys, *DECODE, *run, f"--data_path={prepared['raw']}",
                          "--raw_tokenizer=ptb", "--raw_lowercase")
  assert code == 0, err
  assert _decoded(run_dir, "test_jsonl") == _decoded(prepared["run_dir"], "test_jsonl")
  recorded = run_record.read(run_dir)
  assert (recorded.raw_tokenizer, recorded.raw_lowercase) == ("ptb", True)
  hps = settle("--mode=export", *run, "--export_dir=x")
  assert (hps.raw_tokenizer, hps.raw_lowercase) == ("ptb", True)


@pytest.mark.parametrize("statement, given, flags", [
    (("--raw_tokenizer=whitespace",), "raw_tokenizer=whitespace", "--raw_tokenizer"),
    (("--raw_tokenizer=ptb", "--noraw_lowercase"), "raw_tokenizer=ptb, raw_lowercase=false",
     "--raw_tokenizer and --raw_lowercase"),
])
def test_a_statement_that_contradicts_the_record_is_an_error(prepared, statement, given, flags):
  """The message shows and names only what the user stated."""
  with pytest.raises(DataError) as raised:
    settle("--mode=export", *prepared["run"], "--export_dir=x", *statement)
  assert str(raised.value) == (
      f"how raw text became this run's tokens: {given} (given as {flags}) contradicts "
      f"raw_tokenizer=ptb, raw_lowercase=true (recorded in {prepared['run_dir']}/"
      f"run_config.json); leave {flags} out to use the known value, or start a new run "
      "(another --exp_name)")


def test_a_statement_of_the_tokenizer_alone_takes_the_recorded_case(prepared):
  hps = settle("--mode=export", *prepared["run"], "--export_dir=x", "--raw_tokenizer=ptb")
  assert (hps.raw_tokenizer, hps.raw_lowercase) == ("ptb", True)


def test_a_new_run_on_raw_jsonl_contradicting_its_statement_is_an_error(prepared, tmp_path):
  with pytest.raises(DataError) as raised:
    settle("--mode=train", f"--log_root={tmp_path}", "--exp_name=new",
           f"--data_path={prepared['raw']}", f"--vocab_path={prepared['out']}/vocab",
           "--tokenizer=ptb", "--lowercase", "--raw_tokenizer=punct", "--raw_lowercase")
  assert str(raised.value) == (
      "how raw text became this run's tokens: raw_tokenizer=punct, raw_lowercase=true (given as "
      "--raw_tokenizer and --raw_lowercase) contradicts raw_tokenizer=ptb, raw_lowercase=true "
      f"(recorded in {prepared['out']}/vocab.tokenization.json); leave --raw_tokenizer and "
      "--raw_lowercase out to use the known value, or start a new run (another --exp_name)")


def test_training_on_the_bin_with_ptb_is_refused(prepared, tmp_path):
  """ptb on its own output is not the same tokens (`-lrb-` -> `- lrb -`): tokenising the .bin
  files again would train on other tokens than the raw text's."""
  out = prepared["out"]
  with pytest.raises(DataError) as raised:
    settle("--mode=train", f"--log_root={tmp_path}", "--exp_name=new",
           f"--data_path={out}/chunked/train_*", f"--vocab_path={out}/vocab", "--tokenizer=ptb",
           "--lowercase")
  assert str(raised.value) == (
      f"--tokenizer=ptb --lowercase=true would tokenise the .bin files of --data_path={out}/"
      f"chunked/train_* again: {out}/vocab.tokenization.json says their text is already "
      "tokenised that way from raw text, and is read with --tokenizer=whitespace "
      "--lowercase=false. Leave --tokenizer and --lowercase out: the run records how raw text "
      "became the tokens and applies it to raw text (export, decode of JSONL)")


def test_a_tfrecord_twin_is_read_as_its_bin_and_raw_jsonl_as_raw_text(prepared, tmp_path):
  """Whether text is raw is its format's to say, settled once into the HParams: a TFRecord twin
  of test.bin holds its tokens, read as the .bin's (whitespace, case kept), the JSONL raw text,
  tokenised as make_datafiles made the .bin (ptb, lower-cased); a glob of both is refused."""
  out = prepared["out"]
  twin = tmp_path / "test.tfrecord"
  tfrecord_format.TFRECORD.write(str(twin), bin_format.BIN.read(str(out / "test.bin"),
                                                                skips_lib.SkipCounter()))
  shutil.copy(prepared["raw"], tmp_path / "test.jsonl")

  def reads(data_path):
    return settle(*prepared["run"], *DECODE, f"--data_path={data_path}").reads

  assert reads(out / "test.bin") == reads(twin) == ("whitespace", False)
  assert reads(prepared["raw"]) == ("ptb", True)
  with pytest.raises(DataError) as raised:
    reads(f"{tmp_path}/test.*")
  assert str(raised.value) == (
      f"--data_path={tmp_path}/test.* mixes TFRecord files (pre-tokenised, read with "
      "--tokenizer=whitespace) and JSONL files (raw text, tokenised as the data was prepared): "
      "give one format at a time")
