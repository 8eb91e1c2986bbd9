"""Bad input as users meet it on a fresh clone (a file that is no vocab, records without the
summary, a vocab of other data or another tokenisation, a failing training or decode), each
case run as the user ran it: the one error line they get, naming the file, record or flag at
fault, and that nothing was written where the message says nothing was. The raw JSONL
decode's references and directory are checked in test_raw_text.py, a bad record met on every
pass in test_data.py, the contradiction messages in test_raw_text.py."""

import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest
import tensorflow as tf

from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import OutputError
from pointer_gen.data import pipeline as data
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.formats import tfrecord_format
from pointer_gen.inference import decode
from pointer_gen.text import vocab as vocab_lib

from helpers import REPO
from helpers import project_error_lines
from helpers import run_main
from helpers import settle
from helpers import tiny_flags


def _tree(root):
  """Every path under `root` with its bytes (None for a directory); {} when it does not exist."""
  found = {}
  for directory, dirs, names in os.walk(root):
    for name in dirs:
      found[os.path.relpath(os.path.join(directory, name), root)] = None
    for name in names:
      path = os.path.join(directory, name)
      with open(path, "rb") as f:
        found[os.path.relpath(path, root)] = f.read()
  return found


def _train(capsys, demo_corpus, log_root, *args):
  """(exit code, stderr) of a tiny training of the demo corpus with `args` last."""
  code, _, err = run_main(capsys, f"--data_path={demo_corpus['train']}",
                          f"--vocab_path={demo_corpus['vocab']}", f"--log_root={log_root}",
                          *tiny_flags(num_train_steps=1, checkpoint_secs=1000), *args)
  return code, err


@pytest.mark.parametrize("not_a_vocab, first_bad_line", [
    ("train.jsonl", 1),
    ("README.md", 1),
])
def test_a_file_that_is_not_a_vocab_stops_before_anything_is_written(
    demo_corpus, tmp_path, capsys, not_a_vocab, first_bad_line):
  path = tmp_path / not_a_vocab
  if not_a_vocab == "README.md":
    shutil.copy(REPO / "README.md", path)
  else:
    path.write_text("".join(json.dumps({"article": f"article {i} .", "abstract": "a ."}) + "\n"
                            for i in range(40)), encoding="utf-8")
  code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--vocab_path={path}")
  assert code == 1
  assert f"error: {path}:{first_bad_line}: not a vocab file: " in err
  if not_a_vocab == "train.jsonl":
    assert "40 of the 40 non-blank lines read are not 'word count' lines" in err
  assert "skipping vocab line" not in err
  assert not (tmp_path / "runs").exists()


def test_a_vocab_check_keeps_the_originals_warnings_for_a_few_bad_lines(tmp_path, caplog):
  path = tmp_path / "vocab"
  path.write_text("the 10\nbroken line here\nof 5\na 3\n\n", encoding="utf-8")
  with caplog.at_level("WARNING"):
    vocab = vocab_lib.Vocab.from_file(str(path), 0)
  assert vocab.words[4:] == ["the", "of", "a"]
  assert [m for m in caplog.messages if "skipping vocab line" in m] == [
      f"{path}:2: skipping vocab line that is not 'word count': 'broken line here'",
      f"{path}:5: skipping vocab line that is not 'word count': ''"]
  path.write_text("\n\n", encoding="utf-8")
  with pytest.raises(DataError, match=rf"^--vocab_path={path}: not a vocab file: it holds no "
                     "'word count' line"):
    vocab_lib.Vocab.from_file(str(path), 0)


def test_jsonl_records_without_the_summary_field_stop_before_anything_is_written(
    demo_corpus, tmp_path, capsys):
  path = tmp_path / "missing_all.jsonl"
  path.write_text("".join(json.dumps({"article": f"a {i} .", "highlights": "h ."}) + "\n"
                          for i in range(5)), encoding="utf-8")
  code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--data_path={path}")
  assert code == 1
  assert (f"error: {path}: line 1 has the fields article, highlights, none of "
          "abstract_sentences or abstract: give the field of the summary with --abstract_key"
          in err)
  assert "skipped" not in err
  assert not (tmp_path / "runs").exists()


def _bin_without_abstracts(path, count):
  """A .bin file of `count` tf.Examples that have an article and no abstract: each is skipped."""
  with open(path, "wb") as f:
    for i in range(count):
      feature = {"article": tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[f"article {i} .".encode("utf-8")]))}
      payload = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
      f.write(struct.pack("<q", len(payload)) + payload)


def test_training_that_fails_before_its_first_step_leaves_the_run_directory_as_found(
    demo_corpus, tiny_run, tmp_path, capsys):
  bad = tmp_path / "no_abstracts.bin"
  _bin_without_abstracts(bad, 3)
  # A new run: nothing is left, not even the directories above it.
  code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--data_path={bad}")
  assert code == 1
  assert f"error: --data_path: no usable example in {bad}" in err
  assert not (tmp_path / "runs").exists()
  # A resumed run: its record, checkpoints, events and lock files are as they were, and nothing
  # new (the data is refused before the trainer takes the lock).
  log_root = tmp_path / "resumed"
  shutil.copytree(tiny_run, log_root / "run")
  before = _tree(log_root)
  code, err = _train(capsys, demo_corpus, log_root, f"--data_path={bad}",
                     "--num_train_steps=10")
  assert code == 1
  assert f"error: --data_path: no usable example in {bad}" in err
  assert _tree(log_root) == before


def test_a_vocab_size_equal_in_effect_to_the_recorded_one_is_accepted(demo_corpus, tiny_run,
                                                                      tmp_path):
  log_root = tmp_path / "runs"
  shutil.copytree(tiny_run, log_root / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  record_path = log_root / "run" / "run_config.json"
  record = json.loads(record_path.read_text(encoding="utf-8"))
  record["vocab_size"] = 0  # the whole file
  record_path.write_text(json.dumps(record), encoding="utf-8")
  with open(demo_corpus["vocab"], encoding="utf-8") as f:
    whole = sum(1 for _ in f) + len(vocab_lib.SPECIALS)
  run = (f"--log_root={log_root}", "--exp_name=run", "--mode=export", "--export_dir=x",
         "--raw_tokenizer=whitespace")
  for size in (whole, whole + 100):
    assert settle(*run, f"--vocab_size={size}").vocab_size == size
  with pytest.raises(DataError, match=rf"^--vocab_size={whole - 1} conflicts with vocab_size=0 "
                     f"recorded in {record_path}"):
    settle(*run, f"--vocab_size={whole - 1}")


def _oov_warnings(caplog, hps, vocab):
  caplog.clear()
  with caplog.at_level("WARNING"):
    data.check_unknown_words(hps, vocab)
  return [m for m in caplog.messages if "out of the vocabulary" in m]


def test_the_oov_warning_names_a_small_vocab_when_the_vocab_records_the_datas_tokenization(
    demo_corpus, tmp_path, caplog):
  """The demo data with a vocab of its 100 most frequent words: neither another tokenisation nor
  other data would explain the rate, so the cause is its size, and the record of its
  tokenisation, when there is one, is named."""
  path = tmp_path / "vocab"
  with open(demo_corpus["vocab"], encoding="utf-8") as f:
    path.write_text("".join(next(f) for _ in range(100)), encoding="utf-8")
  vocab = vocab_lib.Vocab.from_file(str(path), 0)
  hps = settle(f"--data_path={demo_corpus['val']}", f"--vocab_path={path}",
               f"--log_root={tmp_path}", "--exp_name=small", "--vocab_size=0")
  [without_record] = _oov_warnings(caplog, hps, vocab)
  assert without_record.endswith(
      "--lowercase=false: the vocab holds too few of this data's words (104 entries): make it "
      "from more of the training data (tools/make_vocab.py).")
  vocab_lib.write_tokenization(str(path), "whitespace", False)
  [with_record] = _oov_warnings(caplog, hps, vocab)
  assert with_record.endswith(
      f"--lowercase=false: the vocab, made with this tokenisation ({path}.tokenization.json "
      "records it), holds too few of this data's words (104 entries): make it from more of "
      "the training data (tools/make_vocab.py).")


# The flags of the documented commands that name where they write, and the tools' --json_out
# defaults: each written path, relative to the checkout, must be ignored by git.
_WRITTEN_BY_FLAG = re.compile(
    r"--(?:log_root|out_dir|output|export_dir)=([A-Za-z0-9_.][^\s`'\"\\]*)")
_JSON_OUT_DEFAULT = re.compile(r'(?:DEFINE_string\(|set_default\()"json_out", "([^"]+)"')


@pytest.mark.slow
def test_what_the_documented_commands_write_in_the_checkout_is_ignored_by_git():
  if not (REPO / ".git").exists():
    pytest.skip("not a git checkout")
  docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
  written = {m.group(1) for doc in docs for m in _WRITTEN_BY_FLAG.finditer(doc.read_text("utf-8"))}
  written |= {m.group(1) for tool in (REPO / "tools").rglob("*.py")
              for m in _JSON_OUT_DEFAULT.finditer(tool.read_text("utf-8"))}
  # A directory's contents, for the values that name one; the README's own list besides.
  paths = sorted({f"{w}/train/checkpoint" if "." not in w else w for w in written} | {
      "runs/demo/train/checkpoint", "exports/pgen/1/saved_model.pb", "attention.html",
      ".venv/bin/python", "runs/demo_data/vocab", "vocab.tokenization.json"})
  assert {"logs/train/checkpoint", "data/chunked/train/checkpoint"} <= set(paths)
  result = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO,
                          capture_output=True, text=True, check=False)
  assert sorted(result.stdout.split()) == paths


@pytest.mark.parametrize("case", ["directory", "unreadable", "missing"])
def test_a_vocab_path_that_is_no_readable_file_is_named_for_what_it_is_in_one_line(
    demo_corpus, tiny_run, tmp_path, capsys, monkeypatch, case):
  path = tmp_path / "vocab"
  expected = {
      "directory": f"error: --vocab_path={path}: a directory, not a vocab file: give the vocab "
                   "file ('word count' lines) itself, e.g. the file named vocab in it",
      "unreadable": f"error: --vocab_path={path}: cannot read the file (Permission denied)",
      "missing": f"error: --vocab_path={path}: no such file"}[case]
  if case == "directory":
    path.mkdir()
  elif case == "unreadable":
    shutil.copy(demo_corpus["vocab"], path)
    path.chmod(0)
    if os.geteuid() == 0:  # root reads any file: the refusal it would get, for this path only
      real_open = open

      def refusing_open(name, *args, **kwargs):
        if os.fspath(name) == str(path):
          raise PermissionError(13, "Permission denied", str(path))
        return real_open(name, *args, **kwargs)

      monkeypatch.setattr(vocab_lib, "open", refusing_open, raising=False)
  code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--vocab_path={path}")
  assert code == 1
  # The error once: no log line repeats it.
  assert project_error_lines(err) == [expected]
  assert err.count(str(path)) == 1
  assert not (tmp_path / "runs").exists()
  # A run with a recorded vocab, which is compared with the one given, says the same.
  shutil.copytree(tiny_run, tmp_path / "trained" / "run",
                  ignore=shutil.ignore_patterns("trainer.lock"))
  code, _, err = run_main(capsys, f"--log_root={tmp_path / 'trained'}", "--exp_name=run",
                          "--mode=decode", "--single_pass", f"--data_path={demo_corpus['val']}",
                          f"--vocab_path={path}")
  assert code == 1
  assert project_error_lines(err) == [expected]


@pytest.mark.slow
def test_an_error_is_printed_once_by_the_command(demo_corpus, tmp_path):
  """As the user runs it (absl's logging set up by app.run, which the in-process runs lack):
  the `error:` line alone, no log line repeating it."""
  vocab_dir = tmp_path / "demo_data"
  vocab_dir.mkdir()
  result = subprocess.run(
      [sys.executable, "-m", "pointer_gen.run", f"--data_path={demo_corpus['train']}",
       f"--vocab_path={vocab_dir}", f"--log_root={tmp_path / 'runs'}", "--exp_name=run"],
      cwd=REPO, capture_output=True, text=True, check=False)
  assert result.returncode == 1
  assert project_error_lines(result.stderr) == [
      f"error: --vocab_path={vocab_dir}: a directory, not a vocab file: give the vocab file "
      "('word count' lines) itself, e.g. the file named vocab in it"]
  assert result.stderr.count(f"--vocab_path={vocab_dir}") == 1


def _jsonl_with_a_cut_line(demo_corpus, path, count, bad_index):
  """The first `count` records of the demo corpus as JSONL, the line `bad_index` (0-based) cut
  short of its closing brace; returns that line's length."""
  recs = itertools.islice(data_formats.read_records(
      data_files.expand_glob(demo_corpus["train"]), "auto", skips_lib.SkipCounter()), count)
  lines = [json.dumps({"article": r.article, "abstract_sentences": r.abstract_sentences})
           for r in recs]
  lines[bad_index] = lines[bad_index][:-1]
  path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
  return len(lines[bad_index])


def test_a_bad_record_is_logged_and_counted_once_with_the_files_line_number(
    demo_corpus, tmp_path, capsys, caplog):
  """Read by the start-up check of unknown words and by the training, in several epochs."""
  path = tmp_path / "train.jsonl"
  length = _jsonl_with_a_cut_line(demo_corpus, path, 24, 5)
  with caplog.at_level("INFO"):
    code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--data_path={path}",
                       "--num_train_steps=12", "--log_every_n_steps=1")
  assert code == 0, err
  assert [m for m in caplog.messages if "skipped" in m] == [
      f"{path}: record 5: skipped, invalid JSON (line 6, column {length + 1}: Expecting ',' "
      "delimiter)"]


def test_a_bad_record_is_logged_and_counted_once_by_a_decode(
    demo_corpus, tiny_run, tmp_path, capsys, caplog):
  """Read by the start-up check, the decode and its n-gram figures' reading of the articles."""
  path = tmp_path / "test.jsonl"
  length = _jsonl_with_a_cut_line(demo_corpus, path, 8, 5)
  shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  with caplog.at_level("INFO"):
    code, _, err = run_main(capsys, f"--log_root={tmp_path}", "--exp_name=run", "--mode=decode",
                            "--single_pass", f"--data_path={path}", "--max_dec_steps=4",
                            "--min_dec_steps=1", "--raw_tokenizer=whitespace")
  assert code == 0, err
  assert [m for m in caplog.messages if "skipped" in m] == [
      f"{path}: record 5: skipped, invalid JSON (line 6, column {length + 1}: Expecting ',' "
      "delimiter)",
      "Data: skipped 1 records (invalid JSON: 1)"]
  [decode_dir] = (tmp_path / "run").glob("decode_test_jsonl_*")
  result = json.loads((decode_dir / "metrics.json").read_text(encoding="utf-8"))
  assert result["skipped_records"] == {"invalid JSON": 1}
  assert result["num_examples"] == 7


def _decode(capsys, log_root, data_path, *args):
  """(exit code, stderr) of a single-pass decode of the tiny run copied to `log_root`/run."""
  code, _, err = run_main(capsys, f"--log_root={log_root}", "--exp_name=run", "--mode=decode",
                          "--single_pass", f"--data_path={data_path}", "--max_dec_steps=4",
                          "--min_dec_steps=1", *args)
  return code, err


def test_a_decode_that_fails_before_its_first_summary_leaves_nothing_behind(
    demo_corpus, tiny_run, tmp_path, capsys):
  shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  before = _tree(tmp_path / "run")
  # The last record damaged, past the examples the start-up check of unknown words reads: the
  # decode's own count of the records, after it has chosen its directory, finds it.
  path = tmp_path / "test.tfrecord"
  count = data.OOV_CHECK_EXAMPLES + 5
  recs = itertools.islice(data_formats.read_records(data_files.expand_glob(demo_corpus["train"]),
                                                    "auto", skips_lib.SkipCounter()), count)
  tfrecord_format.TFRECORD.write(str(path), list(recs))
  damaged = bytearray(path.read_bytes())
  damaged[-10] ^= 0xFF
  path.write_bytes(bytes(damaged))
  code, err = _decode(capsys, tmp_path, path)
  assert code == 1
  [line] = project_error_lines(err)
  assert line.startswith(f"error: {path}: record {count - 1} at byte "), line
  assert "corrupted record" in line
  assert _tree(tmp_path / "run") == before
  # The original's endless decode, whose directory is <run>/decode.
  code, err = _decode(capsys, tmp_path, path, "--nosingle_pass", "--max_decode_examples=1")
  assert code == 1
  assert "corrupted record" in project_error_lines(err)[0]
  assert _tree(tmp_path / "run") == before


def test_a_decode_that_fails_after_its_first_summary_keeps_what_it_wrote(
    demo_corpus, tiny_run, tmp_path, capsys, monkeypatch):
  shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  write_example = decode.SinglePassDecoder._write_example

  def full_after_two(self, index, summary):
    if index == 2:
      raise OutputError(f"{self.dec_dir}: no space left on device")
    write_example(self, index, summary)

  monkeypatch.setattr(decode.SinglePassDecoder, "_write_example", full_after_two)
  code, err = _decode(capsys, tmp_path, demo_corpus["val"])
  assert code == 1
  [decode_dir] = (tmp_path / "run").glob("decode_*")
  assert project_error_lines(err) == [f"error: {decode_dir}/decoded: no space left on device"]
  assert sorted(os.listdir(decode_dir / "decoded")) == ["000000_decoded.txt",
                                                         "000001_decoded.txt"]
  assert sorted(os.listdir(decode_dir / "reference")) == ["000000_reference.txt",
                                                           "000001_reference.txt"]
  assert len((decode_dir / "per_example.jsonl").read_text(encoding="utf-8").splitlines()) == 3


_REFUSED = ("Training on articles mostly unknown to the vocab is refused (over 50 %); "
            "--allow_unknown_words trains anyway.")
_OTHER_DATA = ("the vocab seems made from other data: only {} of its 100 most frequent words "
               "occur in these articles. Give the vocab of this data (tools/make_vocab.py makes "
               "one).")


def test_training_with_a_vocab_of_other_data_is_refused_before_anything_is_written(
    demo_corpus, tmp_path, capsys, caplog):
  """A vocab of words the demo data never uses: every token is unknown."""
  path = tmp_path / "vocab"
  path.write_text("".join(f"zzword{i} {1000 - i}\n" for i in range(600)), encoding="utf-8")
  code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--vocab_path={path}")
  assert code == 1
  figure = (f"100.0 % of the article tokens of the first examples (up to 200) of "
            f"--data_path={demo_corpus['train']} are out of the vocabulary {path} with "
            "--tokenizer=whitespace --lowercase=false: ")
  assert project_error_lines(err) == [f"error: {figure}{_OTHER_DATA.format(0)} {_REFUSED}"]
  assert not (tmp_path / "runs").exists()
  # The flag trains anyway, with the same figure and cause as a warning.
  with caplog.at_level("WARNING"):
    code, err = _train(capsys, demo_corpus, tmp_path / "runs", f"--vocab_path={path}",
                       "--allow_unknown_words")
  assert code == 0, err
  assert [m for m in caplog.messages if "out of the vocabulary" in m] == [
      f"{figure}{_OTHER_DATA.format(0)}"]
  assert (tmp_path / "runs" / "run" / "train" / "checkpoint").exists()


def test_the_new_users_vocab_of_other_data_is_refused(demo_corpus, vietnews, tmp_path, capsys):
  """The issue's case: the demo data with vietnews' vocab, cut to the demo's --vocab_size."""
  code, err = _train(capsys, demo_corpus, tmp_path / "runs",
                     f"--vocab_path={vietnews / 'vocab'}")
  assert code == 1
  [line] = project_error_lines(err)
  assert float(re.match(r"error: (\d+\.\d) % of the article tokens ", line).group(1)) > 50
  assert line.endswith(f"--lowercase=false: {_OTHER_DATA.format(5)} {_REFUSED}")
  assert "--vocab_size" not in line and "tokenisation" not in line
  assert not (tmp_path / "runs").exists()


def _check(data_path, vocab_path, tmp_path, *args):
  hps = settle(f"--data_path={data_path}", f"--vocab_path={vocab_path}",
               f"--log_root={tmp_path}", "--exp_name=run", *args)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  return lambda: data.check_unknown_words(hps, vocab)


def test_training_with_a_vocab_cut_short_by_vocab_size_is_refused_naming_it(
    demo_corpus, tmp_path):
  check = _check(demo_corpus["train"], demo_corpus["vocab"], tmp_path, "--vocab_size=12")
  with pytest.raises(DataError) as refusal:
    check()
  message = str(refusal.value)
  entries = len(vocab_lib.Vocab.from_file(demo_corpus["vocab"], 0))
  assert re.search(rf"--lowercase=false: --vocab_size=12 keeps only the file's first entries; "
                   rf"the whole file \({entries} entries, --vocab_size=0\) would leave \d+\.\d %: "
                   r"a larger --vocab_size makes fewer words unknown\. Training on",
                   message), message
  assert message.endswith(_REFUSED)
  assert "other data" not in message and "tokenisation" not in message


def test_training_with_another_tokenisation_than_the_vocabs_is_refused_naming_it(
    demo_corpus, tmp_path):
  """The demo articles upper-cased as raw JSONL: its lower-case vocab (without the record of its
  tokenisation, which would refuse --lowercase=false outright) knows them lower-cased."""
  vocab = tmp_path / "vocab"
  shutil.copy(demo_corpus["vocab"], vocab)
  path = tmp_path / "upper.jsonl"
  recs = itertools.islice(data_formats.read_records(data_files.expand_glob(demo_corpus["train"]),
                                                    "auto", skips_lib.SkipCounter()), 50)
  path.write_text("".join(json.dumps({"article": r.article.upper(), "abstract": "a ."}) + "\n"
                          for r in recs), encoding="utf-8")
  check = _check(path, vocab, tmp_path, "--raw_tokenizer=whitespace")
  with pytest.raises(DataError) as refusal:
    check()
  message = str(refusal.value)
  assert re.search(r"--lowercase=false: the vocab seems made with another tokenisation "
                   r"\(tools/make_vocab\.py --tokenizer, --lowercase\): with "
                   r"--tokenizer=\w+ --lowercase=true it would be \d+\.\d %\. Training on",
                   message), message
  assert "other data" not in message and "--vocab_size" not in message
