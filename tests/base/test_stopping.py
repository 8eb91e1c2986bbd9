"""Ctrl-C (SIGINT) and SIGTERM stop eval and decode within seconds whatever they are doing, with
exit status 0, one `Stopping on` line, no traceback, and every file they write complete or
absent.

The processes start as a non-interactive shell starts a background job: with SIGINT ignored.
tools/dev/soak.py run that way (`python tools/dev/soak.py ... &`) once failed to stop: its eval
inherited the ignored SIGINT, which Python then leaves ignored, so the soak's final SIGINT did
nothing. helpers/patched_run.py holds eval at a named moment (helpers/injected.py's
pause_eval_at), as a long TensorFlow call would, so that the signal lands there.
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base import stopping
from pointer_gen.model import pointer_generator as model_lib

from helpers import REPO, TINY_RUN, load_tool, project_error_lines, tiny_flags

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

STEP = 4
FLAGS = tiny_flags(min_dec_steps=2, beam_size=2)
# Each op on one thread: the processes of this module run side by side on a shared machine.
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
STOP_LIMIT_SECS = 10  # the bound
START_TIMEOUT_SECS = 240
# What a shell does to a background job before exec (`cmd &` without job control).
AS_BACKGROUND_JOB = ["/bin/sh", "-c", 'trap "" INT; exec "$0" "$@"']

# Eval moments: ((the moment eval is held at, for how many seconds), the log line at which the
# signal is sent, best models complete on disk afterwards).
EVAL_MOMENTS = {
    # Polling an empty train dir (after a checkpoint it is the same loop, where a soak's eval
    # once ignored the signal).
    "waiting": (None, "Waiting for a checkpoint", 0),
    # Held before the restore and before scoring for 60 s: the stop cannot wait for them.
    "loading": (("load", 60), "Testing: pausing at load", 0),
    "scoring": (("score", 60), "Testing: pausing at score", 0),
    # Held for 3 s inside the best model's save: the save finishes, then eval stops.
    "saving_best": (("save_best", 3), "Testing: pausing at save_best", 1),
}
SIGNALS = ("SIGINT", "SIGTERM")


@pytest.fixture(scope="module")
def train_dir(tmp_path_factory):
  """A train dir holding model.ckpt-4 of a tiny model (untrained weights: only loading and
  running them matters here)."""
  directory = tmp_path_factory.mktemp("trained") / "train"
  hps = config.HParams(**TINY_RUN)
  checkpoint = checkpoints.make_checkpoint(
      model_lib.PointerGenerator.from_hparams(hps, hps.vocab_size))
  checkpoint.step.assign(STEP)
  tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=1,
                             checkpoint_name=checkpoints.CHECKPOINT_NAME).save(STEP)
  return directory


def _text(path):
  with open(path, encoding="utf-8", errors="replace") as f:
    return f.read()


def _stop(root, train_dir, args, pause, signal_at, count, signame):
  """Starts `python -m pointer_gen.run args` on a copy of `train_dir` (or an empty train dir),
  held at `pause` if given ((moment, seconds): helpers/patched_run.py's pause_eval_at), sends
  `signame` once the log line `signal_at` appeared `count` times, and waits for the process to
  end (killed after 30 s). Returns its run dir, exit code, seconds from the signal to the exit,
  stderr, and the files in its temporary directory before the signal and after the exit; or an
  error if the moment never came."""
  if train_dir:
    shutil.copytree(train_dir, root / "run" / "train")
  else:
    (root / "run" / "train").mkdir(parents=True)
  (root / "tmp").mkdir()
  env = {**os.environ, **ONE_THREAD, "TMPDIR": str(root / "tmp")}
  command = ["-m", "pointer_gen.run"]
  if pause:
    command = [str(REPO / "tests" / "helpers" / "patched_run.py"), "pause_eval_at",
               *map(str, pause)]
    env["PYTHONPATH"] = str(REPO)  # a script's directory is on its sys.path, not the checkout
  err_path = root / "stderr"
  with open(root / "stdout", "w") as out, open(err_path, "w") as err:
    process = subprocess.Popen([*AS_BACKGROUND_JOB, sys.executable, *command,
                                f"--log_root={root}", *FLAGS, *args],
                               cwd=REPO, env=env, stdout=out, stderr=err)
  deadline = time.time() + START_TIMEOUT_SECS
  while _text(err_path).count(signal_at) < count:
    if process.poll() is not None or time.time() > deadline:
      process.kill()
      process.wait()
      return {"error": f"no {signal_at!r} x{count}:\n{_text(err_path)[-3000:]}"}
    time.sleep(0.05)
  temporary_before = _files_in(root / "tmp")
  process.send_signal(getattr(signal, signame))
  sent = time.time()
  try:
    code = process.wait(timeout=30)
  except subprocess.TimeoutExpired:
    process.kill()
    code = "killed after 30 s"
  return {"run": root / "run", "code": code, "seconds": time.time() - sent,
          "stderr": _text(err_path), "temporary_before": temporary_before,
          "temporary_after": _files_in(root / "tmp")}


def _files_in(directory):
  return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.fixture(scope="module")
def stopped(demo_corpus, train_dir, tmp_path_factory):
  """Every case of this module's stop tests, run side by side (each is mostly TensorFlow's
  import, then waiting)."""
  vocab = f"--vocab_path={demo_corpus['vocab']}"
  cases = {}
  for signame in SIGNALS:
    for moment, (pause, signal_at, _) in EVAL_MOMENTS.items():
      cases[f"eval-{moment}-{signame}"] = (
          None if moment == "waiting" else train_dir,
          ["--mode=eval", f"--data_path={demo_corpus['val']}", vocab, "--eval_poll_secs=0.5"],
          pause, signal_at, 1, signame)
    # Random validation examples forever; stopped after the second.
    cases[f"decode-continuous-{signame}"] = (
        train_dir, ["--mode=decode", f"--data_path={demo_corpus['val']}", vocab], None,
        "GENERATED SUMMARY", 2, signame)
  # The 2000 training articles one at a time; stopped after the third. One signal: the code
  # path is the same for both, and each case costs a TensorFlow import and a compile.
  cases["decode-single_pass-SIGINT"] = (
      train_dir, ["--mode=decode", "--single_pass", f"--data_path={demo_corpus['train']}", vocab,
                  "--batch_size=1"], None, "Decoded 3/", 1, "SIGINT")
  with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
    futures = {name: pool.submit(_stop, tmp_path_factory.mktemp(name), *case)
               for name, case in cases.items()}
    return {name: future.result() for name, future in futures.items()}


def _assert_clean_stop(result, signame):
  assert "error" not in result, result.get("error")
  assert result["code"] == 0, result["stderr"][-3000:]
  assert result["seconds"] < STOP_LIMIT_SECS, result["seconds"]
  assert result["stderr"].count("Stopping on") == 1, result["stderr"][-3000:]
  assert f"Stopping on {signame}." in result["stderr"]
  assert project_error_lines(result["stderr"]) == []
  # The stop ends the process with os._exit, which skips atexit handlers: autograph, which
  # deletes the source files it writes there at exit, must have converted nothing.
  assert result["temporary_before"] == result["temporary_after"] == []


@pytest.mark.parametrize("signame", SIGNALS)
@pytest.mark.parametrize("moment", list(EVAL_MOMENTS))
def test_eval_stops_cleanly_at_every_moment(stopped, moment, signame):
  result = stopped[f"eval-{moment}-{signame}"]
  _assert_clean_stop(result, signame)
  eval_dir = result["run"] / "eval"
  # Every checkpoint and events file there reads whole, and nothing is left of a cut-off save.
  checked = load_tool("soak").check_dir(str(eval_dir))
  assert checked["unreadable"] == [] and checked["debris"] == []
  best = EVAL_MOMENTS[moment][2]
  assert checked["checkpoints"] == best
  state = tf.train.get_checkpoint_state(str(eval_dir))
  listed = [os.path.basename(p) for p in state.all_model_checkpoint_paths] if state else []
  assert listed == [f"bestmodel-{STEP}"] * best


@pytest.mark.parametrize("signame", SIGNALS)
def test_continuous_decode_stops_cleanly(stopped, signame):
  result = stopped[f"decode-continuous-{signame}"]
  _assert_clean_stop(result, signame)
  attn_dir = result["run"] / "decode" / "attn_vis"
  names = sorted(os.listdir(attn_dir))
  assert len(names) >= 2 and all(re.fullmatch(r"\d{6}\.json", n) for n in names), names
  for path in [attn_dir / n for n in names] + [attn_dir.parent / "attn_vis_data.json"]:
    record = json.loads(_text(path))
    assert len(record["attn_dists"]) == len(record["decoded_lst"])


def test_single_pass_decode_stops_cleanly(stopped):
  result = stopped["decode-single_pass-SIGINT"]
  _assert_clean_stop(result, "SIGINT")
  (directory,) = [p for p in result["run"].iterdir() if p.name.startswith("decode_train_")]
  decoded = sorted(os.listdir(directory / "decoded"))
  references = sorted(os.listdir(directory / "reference"))
  # Examples 0..k-1 complete, each with its reference, and no temporary file; no metrics: the
  # decode is not finished.
  assert 3 <= len(decoded) < 2000
  assert decoded == [f"{i:06d}_decoded.txt" for i in range(len(decoded))]
  assert references[:len(decoded)] == [f"{i:06d}_reference.txt" for i in range(len(decoded))]
  assert len(references) == len(decoded)
  assert all(_text(directory / "decoded" / n).endswith("\n") for n in decoded)
  assert sorted(os.listdir(directory)) == ["decoded", "per_example.jsonl", "reference"]
  lines = [json.loads(line) for line in _text(directory / "per_example.jsonl").splitlines()]
  assert [row["index"] for row in lines] == list(range(len(decoded)))


# ------------------------------------------------------ the mechanism, without TensorFlow


def _target(tmp_path, *args):
  """tests/helpers/stop_target.py (see there) with SIGINT ignored, once it printed `ready`."""
  out_path, err_path = tmp_path / "out", tmp_path / "err"
  with open(out_path, "w") as out, open(err_path, "w") as err:
    process = subprocess.Popen(
        [*AS_BACKGROUND_JOB, sys.executable, str(REPO / "tests" / "helpers" / "stop_target.py"),
         *map(str, args)], cwd=REPO, env={**os.environ, **ONE_THREAD}, stdout=out, stderr=err)
  deadline = time.time() + 60
  while "ready" not in _text(out_path):
    assert process.poll() is None and time.time() < deadline, _text(err_path)
    time.sleep(0.01)
  return process, out_path, err_path


@pytest.mark.parametrize("signame", SIGNALS)
def test_a_loop_that_checks_the_flag_ends_by_itself(tmp_path, signame):
  process, out_path, err_path = _target(tmp_path, "loop", 60)
  process.send_signal(getattr(signal, signame))
  assert process.wait(timeout=30) == 0
  assert _text(out_path) == "ready\nloop ended\n"
  assert _text(err_path).count(f"Stopping on {signame}.") == 1


def test_a_main_thread_that_never_returns_is_ended_after_the_grace_period(tmp_path):
  # It sleeps 60 s and the grace period is 1 s: ending within 30 s is the watchdog's doing.
  process, _, err_path = _target(tmp_path, "blocked", 1)
  process.send_signal(signal.SIGTERM)
  assert process.wait(timeout=30) == 0
  assert _text(err_path).count("Stopping on SIGTERM.") == 1
  assert "Traceback" not in _text(err_path)


def test_a_second_signal_ends_it_without_waiting_for_the_grace_period(tmp_path):
  process, _, err_path = _target(tmp_path, "blocked", 600)
  process.send_signal(signal.SIGINT)
  while "Stopping on SIGINT." not in _text(err_path):
    time.sleep(0.01)
  process.send_signal(signal.SIGINT)
  assert process.wait(timeout=30) == 0
  assert "Second SIGINT: exiting now." in _text(err_path)


def test_the_forced_exit_waits_for_a_write_in_progress(tmp_path):
  # The write comes 1.5 s into the critical section, 1 s after the grace period ends.
  result = tmp_path / "written.txt"
  process, _, err_path = _target(tmp_path, "critical", 0.5, 1.5, result)
  process.send_signal(signal.SIGTERM)
  assert process.wait(timeout=30) == 0
  assert _text(result) == "complete\n"
  assert _text(err_path).count("Stopping on SIGTERM.") == 1


def test_a_signal_sets_the_flag_without_raising_and_the_handlers_are_restored(monkeypatch):
  # No forced exit of the test process, whatever happens below.
  monkeypatch.setattr(stopping, "GRACE_SECS", 600.0)
  before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
  with stopping.until_stopped():
    assert not stopping.requested()
    os.kill(os.getpid(), signal.SIGTERM)
    # Returns as soon as the watchdog sets the flag; no exception reaches this code.
    assert stopping.wait(30)
    assert stopping.requested()
  assert not stopping.requested()
  assert {s: signal.getsignal(s) for s in before} == before
  assert signal.set_wakeup_fd(-1) == -1
