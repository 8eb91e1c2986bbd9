"""What a new user met on a fresh clone, round three (issue 56), each case run as the user ran
it: a command as a subprocess, with the tiny trained run and the demo corpus of the session."""

import json
import os
import shutil
import subprocess
import sys
import time

from absl import flags
import pytest

from pointer_gen import model as model_lib
from pointer_gen import run

from helpers import REPO
from helpers import project_error_lines
from helpers import run_entry_point
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


def test_eval_beside_a_longer_training_follows_the_trainers_recorded_steps(
    demo_corpus, tiny_run, tmp_path):
  """Eval reads --num_train_steps from the trainer's flagfile (here 2), the trainer was started
  with more (8): eval scores checkpoint 4, goes on and scores the trainer's last, 8."""
  shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("trainer.lock"))
  record_path = tmp_path / "run" / "run_config.json"
  record = json.loads(record_path.read_text(encoding="utf-8"))
  # What the trainer restarted with --num_train_steps=8 records before its first step.
  record_path.write_text(json.dumps({**record, "num_train_steps": 8}), encoding="utf-8")
  data = (f"--data_path={demo_corpus['val']}", f"--vocab_path={demo_corpus['vocab']}")
  err_path = tmp_path / "eval.err"
  evaluator = _start("--mode=eval", f"--log_root={tmp_path}", "--exp_name=run", *data,
                     "--num_train_steps=2", "--eval_samples=0", "--eval_poll_secs=0.2",
                     stderr_path=err_path)
  try:
    _wait_for(err_path, "eval step 4:", evaluator)
    code = run_entry_point(f"--data_path={demo_corpus['train']}", data[1],
                           f"--log_root={tmp_path}",
                           *tiny_flags(num_train_steps=8, checkpoint_secs=1000))
    assert code == 0
    out, _ = evaluator.communicate(timeout=240)
  finally:
    evaluator.kill()
  err = err_path.read_text(encoding="utf-8")
  assert evaluator.returncode == 0, err
  assert project_error_lines(err) == []
  assert "eval step 8:" in err
  assert (f"Scored the checkpoint of step 8: the trainer stops at step 8 (num_train_steps in "
          f"{tmp_path / 'run' / 'run_config.json'}); stopping.") in err
  assert out.startswith("Scored 2 checkpoints; best model: ")
  assert os.path.exists(tmp_path / "run" / "train" / "model.ckpt-8.index")


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
