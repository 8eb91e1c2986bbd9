"""The command line as users run it, a command as a subprocess where it matters, with the tiny
trained run and the demo corpus of the session: eval beside a longer training, flag errors as
one line, refused data, log roots and vocab files, decode's ETA, the strategies named from the
registry, TensorFlow's own log lines kept out of the run's log."""

import errno
import glob
import gzip
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from absl import flags
import pytest
import tensorflow as tf
from tensorflow.python.saved_model import signature_serialization

from pointer_gen import run
from pointer_gen import usage
from pointer_gen.base import environment
from pointer_gen.formats import registry as formats_registry
from pointer_gen.inference import decode
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import registry as search_registry

from helpers import REPO
from helpers import project_error_lines
from helpers import run_main
from helpers import tiny_flags


def _start(*args, stderr_path):
  """`python -m pointer_gen.run *args` started from the checkout, its stderr written to
  `stderr_path`."""
  with open(stderr_path, "w", encoding="utf-8") as err:
    return subprocess.Popen([sys.executable, "-m", "pointer_gen.run", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=err, text=True)


def _command(*args):
  """(exit code, stdout, stderr) of `python -m pointer_gen.run *args`, run from the checkout."""
  result = subprocess.run([sys.executable, "-m", "pointer_gen.run", *args], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=300)
  return result.returncode, result.stdout, result.stderr


def _wait_for(path, text, process, timeout=240):
  """Waits until the file `path` holds `text` or `process` has exited."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if text in path.read_text(encoding="utf-8") or process.poll() is not None:
      return
    time.sleep(0.2)
  process.kill()
  raise AssertionError(f"{text!r} not in {path} after {timeout} s")


@pytest.mark.slow
def test_eval_beside_a_longer_training_follows_the_trainers_recorded_steps(
    demo_corpus, tiny_run, tmp_path):
  """Eval reads --num_train_steps from the trainer's flagfile (here 2), the trainer was started
  with more (8, in its record): eval scores checkpoint 4 and waits for the trainer's next one
  (until SIGTERM here), where an eval that took the flagfile's 2 stopped."""
  shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  record_path = tmp_path / "run" / "run_config.json"
  record = json.loads(record_path.read_text(encoding="utf-8"))
  # What the trainer restarted with --num_train_steps=8 records before its first step.
  record_path.write_text(json.dumps({**record, "num_train_steps": 8}), encoding="utf-8")
  err_path = tmp_path / "eval.err"
  evaluator = _start("--mode=eval", f"--log_root={tmp_path}", "--exp_name=run",
                     f"--data_path={demo_corpus['val']}", f"--vocab_path={demo_corpus['vocab']}",
                     "--num_train_steps=2", "--eval_samples=0", "--eval_poll_secs=0.2",
                     stderr_path=err_path)
  try:
    _wait_for(err_path, "Waiting for a new checkpoint", evaluator)
    still_running = evaluator.poll() is None
    evaluator.send_signal(signal.SIGTERM)
    out, _ = evaluator.communicate(timeout=120)
  finally:
    evaluator.kill()
  err = err_path.read_text(encoding="utf-8")
  assert "eval step 4:" in err
  assert "where training stops" not in err and "the trainer stops at" not in err
  assert still_running
  assert evaluator.returncode == 0, err
  assert project_error_lines(err) == []
  assert out.startswith("Scored 1 checkpoint; best model: ")


@pytest.mark.slow
def test_a_bad_choice_of_flag_is_one_error_line_from_the_command():
  code, out, err = _command("--mode=trian")
  assert code == 1
  assert out == ""
  assert project_error_lines(err) == [
      "error: --mode=trian: value should be one of <train|eval|decode|export> (--help lists "
      "the flags)"]
  assert not [line for line in err.splitlines() if "FATAL" in line]


def _parse_and_run(capsys, *args):
  """(exit code, stderr) of what app.run does with `args` (run.parse_flags, then run.main) in
  this process, as the command line runs them."""
  flags.FLAGS.unparse_flags()
  try:
    with pytest.raises(SystemExit) as exited:
      run.main(run.parse_flags(["run", *args]))
  finally:
    flags.FLAGS.unparse_flags()
  return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize("args, expected", [
    (["--search=nosuch"], "--search=nosuch: value should be one of <beam|greedy|sample> "
                          "(--help lists the flags)"),
    (["--serach=beam"], "Unknown command line flag 'serach'. Did you mean: search ? (--help "
                        "lists the flags)"),
    (["--batch_size=x"], "--batch_size=x: invalid literal for int() with base 10: 'x' (--help "
                         "lists the flags)"),
    (["--top_p=0"], "--top_p is a setting of --search=sample, not of --search=beam: leave it "
                    "out (or out of the --flagfile)"),
    (["--search=sample", "--top_p=0"], "--top_p=0.0: must be in (0, 1]"),
    (["train"], "unexpected arguments train: flags are written --name=value"),
    (["--flagfile=/nonexistent/demo.cfg"], "--flagfile: Unable to open flagfile: [Errno 2] No "
                                           "such file or directory: '/nonexistent/demo.cfg'"),
])
def test_a_flag_error_of_any_kind_is_one_error_line(capsys, tmp_path, args, expected):
  code, err = _parse_and_run(capsys, f"--log_root={tmp_path / 'runs'}", *args)
  assert code == 1
  assert project_error_lines(err) == [f"error: {expected}"]
  assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_a_jsonl_without_a_usable_example_is_refused_before_a_model_is_built(
    demo_corpus, tiny_run, tmp_path, capsys, monkeypatch, content):
  built = []
  real_init = model_lib.PointerGenerator.__init__

  def counted_init(self, *args, **kwargs):
    built.append(self)
    real_init(self, *args, **kwargs)

  monkeypatch.setattr(model_lib.PointerGenerator, "__init__", counted_init)
  path = tmp_path / "train.jsonl"
  path.write_text(content, encoding="utf-8")
  code, _, err = run_main(capsys, f"--data_path={path}", f"--vocab_path={demo_corpus['vocab']}",
                          f"--log_root={tmp_path / 'runs'}",
                          *tiny_flags(num_train_steps=1, checkpoint_secs=1000))
  assert code == 1
  assert project_error_lines(err) == [f"error: --data_path: no usable example in {path}"]
  assert not (tmp_path / "runs").exists()
  # A decode of it, by a trained run.
  shutil.copytree(tiny_run, tmp_path / "trained" / "run",
                  ignore=shutil.ignore_patterns("trainer.lock"))
  code, _, err = run_main(capsys, f"--log_root={tmp_path / 'trained'}", "--exp_name=run",
                          "--mode=decode", "--single_pass", f"--data_path={path}",
                          "--raw_tokenizer=whitespace")
  assert code == 1
  assert project_error_lines(err) == [f"error: --data_path: no usable example in {path}"]
  assert built == []


@pytest.mark.slow
def test_a_log_root_the_demo_corpus_cannot_be_written_in_is_one_error_line(tmp_path):
  """Without --data_path the demo corpus is generated in --log_root first: a file in the way
  there is refused as the run directory would be."""
  log_root = tmp_path / "runs"
  log_root.write_text("a file, not a directory\n", encoding="utf-8")
  code, _, err = _command(f"--log_root={log_root}", "--num_train_steps=1")
  assert code == 1
  assert project_error_lines(err) == [
      f"error: cannot create the output directory {log_root} (check --log_root): File exists"]


def _read_only(root, make, made):
  """A stand-in for the function `make` (os.makedirs, os.mkdir, tempfile.mkdtemp) that fails as on a
  read-only file system when the directory it would make, `made(*args, **kwargs)`, is in
  `root`."""

  def read_only(*args, **kwargs):
    where = os.path.abspath(made(*args, **kwargs))
    if where.startswith(f"{root}{os.sep}") and not os.path.isdir(where):
      raise OSError(errno.EROFS, os.strerror(errno.EROFS), where)
    return make(*args, **kwargs)

  return read_only


@pytest.mark.parametrize("data", ["demo", "data_path"])
def test_a_read_only_log_root_is_the_same_error_with_or_without_data_path(
    demo_corpus, tmp_path, capsys, monkeypatch, data):
  log_root = tmp_path / "runs"
  log_root.mkdir()
  monkeypatch.setattr(tempfile, "mkdtemp", _read_only(
      log_root, tempfile.mkdtemp, lambda *_, dir=None, **__: os.path.join(dir or "", "new")))
  monkeypatch.setattr(os, "makedirs",
                      _read_only(log_root, os.makedirs, lambda name, *_, **__: name))
  monkeypatch.setattr(os, "mkdir", _read_only(log_root, os.mkdir, lambda name, *_, **__: name))
  args = [] if data == "demo" else [f"--data_path={demo_corpus['train']}",
                                    f"--vocab_path={demo_corpus['vocab']}", "--exp_name=run"]
  code, _, err = run_main(capsys, f"--log_root={log_root}", "--num_train_steps=1", *args)
  assert code == 1
  directory = log_root / ("demo_data" if data == "demo" else "run")
  assert project_error_lines(err) == [
      f"error: cannot create the output directory {directory} (check --log_root): Read-only "
      "file system"]
  assert os.listdir(log_root) == []


def _printable(text):
  return all(c.isprintable() or c in "\n\t" for c in text)


@pytest.mark.slow
def test_a_gzip_file_as_vocab_is_named_for_what_it_is(demo_corpus, tmp_path):
  vocab = tmp_path / "vocab.gz"
  with open(demo_corpus["vocab"], "rb") as f, gzip.open(vocab, "wb") as out:
    out.write(f.read())
  code, _, err = _command(f"--data_path={demo_corpus['train']}", f"--vocab_path={vocab}",
                          f"--log_root={tmp_path / 'runs'}", "--exp_name=run")
  assert code == 1
  assert project_error_lines(err) == [
      f"error: --vocab_path={vocab}: a gzip-compressed file, not a vocab file: decompress it "
      "(gunzip) and give the vocab file it holds"]
  assert _printable(err) and "\\x" not in err
  assert not (tmp_path / "runs").exists()


def test_a_binary_file_as_vocab_is_never_shown(demo_corpus, tmp_path, capsys):
  [chunk] = sorted(glob.glob(demo_corpus["train"]))[:1]
  code, _, err = run_main(capsys, f"--data_path={demo_corpus['train']}", f"--vocab_path={chunk}",
                          f"--log_root={tmp_path / 'runs'}", "--exp_name=run")
  assert code == 1
  assert project_error_lines(err) == [
      f"error: {chunk}:1: not a vocab file: a binary file (its lines are not shown). "
      "--vocab_path takes the vocab of the data, 'word count' lines, most frequent word first "
      "(tools/make_vocab.py writes one)"]
  assert _printable(err) and "\\x" not in err


def test_the_decode_eta_counts_the_tails_compiling():
  """16 slots, 200 articles; the first batch (16) ends at 4 s, each next 16 take 0.25 s: 64
  articles/s, and the first batch spent 4 - 16 / 64 = 3.75 s compiling. With 24 articles left,
  8 wait for a slot and the last 16 searches run in shapes 8, 4, 2 and 1 in turn, each compiled,
  about as long as the first batch compiled: 24 / 64 + 3.75 s."""
  times = iter([0.0, 4.0, 4.25, 6.5, 6.828125])
  progress = decode.Progress(total=200, num_slots=16, clock=lambda: next(times))
  assert progress.line(16) == "Decoded 16/200 articles (the first batch includes compiling)"
  assert progress.line(32) == "Decoded 32/200 articles, 64.00 articles/s, ETA 6s"
  assert progress.line(176) == "Decoded 176/200 articles, 64.00 articles/s, ETA 4s"
  # Three searches left: shapes 2 and 1 still to come, half of the four: 3 / 64 + 3.75 / 2 s.
  assert progress.line(197) == "Decoded 197/200 articles, 64.00 articles/s, ETA 2s"


def _listed(names, text):
  """The sets of `names` (regular expressions; their indices) that `text` lists in parentheses
  and nothing else: "(a, b)", "(a, b and c: ...)"."""
  item = "|".join(f"`?(?:{name})`?" for name in names)
  separator = r"(?:,\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+)"
  return [{i for i, name in enumerate(names) for part in re.split(separator, match.group(1))
           if re.fullmatch(f"`?(?:{name})`?", part)}
          for match in re.finditer(rf"\(((?:{item})(?:{separator}(?:{item}))+)[:)]", text)]


def test_no_text_lists_the_search_strategies_by_hand():
  """A list of the search strategies typed in the docs, docstrings or help names them all: a
  strategy added to the registry breaks it otherwise. The help texts that list variants are
  made from the registries."""
  strategies = [rf"{name.rstrip('e')}\w*" for name in search_registry.STRATEGIES]
  texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
           *sorted((REPO / "pointer_gen").rglob("*.py")), *sorted((REPO / "tools").rglob("*.py"))]
  partial = [path.relative_to(REPO) for path in texts
             for held in _listed(strategies, path.read_text(encoding="utf-8"))
             if len(held) < len(strategies)]
  assert partial == []
  usage_text = usage.help_text(flags.FLAGS)
  for name, strategy in search_registry.STRATEGIES.items():
    sentence = search_registry.first_sentence(strategy)
    assert sentence.endswith(".") is False and "\n" not in sentence
    assert f"{name}: {sentence}" in " ".join(usage_text.split())
  for data_format in formats_registry.FORMATS:
    assert (f"{data_format.label} ({', '.join(data_format.extensions)})"
            in flags.FLAGS["data_path"].help)


def test_tensorflows_info_lines_stay_out_of_the_runs_log(tmp_path, caplog):
  """What every mode sets up (environment.configure_tensorflow), then a checkpoint saved
  (TensorFlow's "Sharding callback duration" line at every save) and an export signature's
  "Function `summarize` contains input name(s) ...", both TensorFlow's code logging through
  absl."""
  environment.configure_tensorflow()
  with caplog.at_level("INFO", logger="absl"):
    tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "ckpt"))
    absl_logger = logging.getLogger("absl")
    for level, message in ((logging.INFO, "Function `summarize` contains input name(s) x"),
                           (logging.WARNING, "a warning of TensorFlow's")):
      absl_logger.handle(absl_logger.makeRecord(
          "absl", level, signature_serialization.__file__, 1, message, (), None))
    absl_logger.info("a line of the run's own")
  assert caplog.messages == ["a warning of TensorFlow's", "a line of the run's own"]
