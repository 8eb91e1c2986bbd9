"""Crash-safety soak: SIGKILLs training at random moments, restarts it, and checks that nothing
is lost or left unreadable while an eval process runs beside it; then fuzzes the readers at scale.

    python tools/dev/soak.py --kills=30 --seed=1 --workdir=/tmp/pointer_gen_soak

A tiny model (hidden 8, emb 8, vocab 519) trains on the demo corpus with --checkpoint_secs=1, so
a checkpoint is written every second; every other kill waits for a checkpoint write to start
(its temporary directory appears) and strikes inside it, the others come at a random moment.
A `--mode=eval` process runs on the same run directory throughout. After every kill:

- the next start resumes from a readable checkpoint that is no older than the last one the
  killed process reported saved, so the global step goes back at most by the steps trained
  in the last checkpoint interval (plus the save that was cut off);
- every file in train/ is readable: each checkpoint loads with tf.train.load_checkpoint and
  every tensor reads, the state file names existing checkpoints, events files parse;
- the eval process is still running.

Each process has a temporary directory of its own, deleted once it ended: the files the killed
ones left there are counted (`temp_files_of_killed_runs`), as are those left by the stops at the
end, which must be none (`temp_files_after_stops`).

At the end training is resumed once more and stopped with SIGTERM, eval is stopped with SIGINT
(each must exit 0 with no traceback within STOP_TIMEOUT_SECS; the seconds are reported), and
eval/ is checked like train/. Then tests/formats/test_fuzz.py runs with --fuzz_scale times its
examples and the outcome counts are printed.
"""

import datetime
import functools
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[2]

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
import tensorflow as tf

from pointer_gen import usage
from pointer_gen.data import demo as demo_data  # pylint: disable=g-import-not-at-top

MODEL_FLAGS = ("--vocab_size=519", "--hidden_dim=8", "--emb_dim=8", "--batch_size=4",
               "--max_enc_steps=40", "--max_dec_steps=10", "--seed=1")
CHECKPOINT_SECS = 1
# A save cut off by the kill, one slow step and scheduling noise on a shared machine, on top of
# the checkpoint interval, bound how long before a kill the last completed save can be.
INTERVAL_SLACK_SECS = 2.0
# Each process on one thread: trainer and evaluator share 2 cores with other work.
_ENV = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
_START_TIMEOUT_SECS = 180
# Train and eval stop within seconds of SIGINT or SIGTERM (pointer_gen/base/stopping.py): 5 s of
# grace and a save, with room for a loaded machine.
STOP_TIMEOUT_SECS = 30
_LOG_TIME = r"^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) "
_STEP = re.compile(_LOG_TIME + r".*\] step (\d+): ", re.M)
_SAVED = re.compile(_LOG_TIME + r".*\] Saved checkpoint \S+-(\d+)$", re.M)
_RESTORED = re.compile(r"\] Restored \S+ \(step (\d+)\)")


class SoakError(AssertionError):
  """A check failed: the crash safety this tool exists to show does not hold."""


def _log_time(stamp):
  """absl's `MMDD HH:MM:SS.ffffff` (local time, no year) as a datetime of this year."""
  return datetime.datetime.strptime(f"{datetime.datetime.now().year}{stamp}", "%Y%m%d %H:%M:%S.%f")


class _Process:
  """One `python -m pointer_gen.run` with its output in a log file and a temporary directory
  (TMPDIR) of its own: a killed process cannot delete its temporary files, `remove_tmpdir`
  does."""

  def __init__(self, workdir, name, args):
    self.log_path = os.path.join(workdir, "logs", f"{name}.log")
    self.tmpdir = os.path.join(workdir, "tmp", name)
    os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
    os.makedirs(self.tmpdir)
    with open(self.log_path, "w", encoding="utf-8") as log:
      self.proc = subprocess.Popen([sys.executable, "-m", "pointer_gen.run", *args], stdout=log,
                                   stderr=subprocess.STDOUT, cwd=workdir,
                                   env={**os.environ, **_ENV, "TMPDIR": self.tmpdir})

  def remove_tmpdir(self):
    """Once the process has ended: deletes its temporary directory; returns how many files it
    had left there."""
    left = sum(len(files) for _, _, files in os.walk(self.tmpdir))
    shutil.rmtree(self.tmpdir)
    return left

  def log(self):
    with open(self.log_path, encoding="utf-8", errors="replace") as f:
      return f.read()

  def wait_for(self, pattern, timeout=_START_TIMEOUT_SECS):
    """The log once `pattern` occurs in it; a SoakError if the process ends or time runs out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
      text = self.log()
      if re.search(pattern, text, re.M):
        return text
      if self.proc.poll() is not None:
        raise SoakError(f"{self.log_path}: exited with {self.proc.returncode} before "
                        f"{pattern!r}:\n{text[-3000:]}")
      time.sleep(0.05)
    raise SoakError(f"{self.log_path}: no {pattern!r} within {timeout} s")


def _kill(process, train_dir, rng, during_save):
  """SIGKILLs the trainer inside a checkpoint write or at a random moment; returns (moment,
  when)."""
  moment = "at random"
  if during_save:
    # TensorFlow writes a checkpoint into `<prefix>_temp/` first, then merges and renames it.
    deadline = time.time() + 5 * CHECKPOINT_SECS
    while time.time() < deadline:
      if any(name.endswith("_temp") for name in os.listdir(train_dir)):
        moment = "during a checkpoint write"
        time.sleep(rng.uniform(0, 0.02))
        break
      time.sleep(0.001)
  else:
    time.sleep(rng.uniform(0, 3 * CHECKPOINT_SECS))
  process.proc.kill()
  when = datetime.datetime.now()
  process.proc.wait()
  return moment, when


def _events_readable(path):
  """Every record of an events file parses; a record cut short at the very end (a writer
  killed mid-write, which TensorBoard skips) is allowed. Returns whether the tail was cut."""
  try:
    for _ in tf.compat.v1.train.summary_iterator(path):
      pass
  except tf.errors.DataLossError as e:
    if "truncated record" not in str(e):
      raise
    return True
  return False


def check_dir(directory):
  """Reads every file of a train/ or eval/ dir; returns counts and the problems found.

  Unreadable: a checkpoint listed in the state file that does not load or whose tensors do not
  all read, an events file with a damaged record, a state file whose newest checkpoint is
  missing, an unknown file. Debris (counted apart) is what a save cut off by SIGKILL leaves and
  nothing reads: TF writes into `<prefix>_temp/`, renames the data file, writes the .index in
  place and only then lists the checkpoint in the state file, and rotates old checkpoints out
  after listing the new one; the state file is written to a temporary name and renamed. So: a
  `_temp` directory, an unlisted checkpoint that does not load, a data file without .index, a
  `checkpoint.tmp*` file, an older state entry whose files were being deleted. The trainer
  removes all but the last when it starts; CheckpointManager the last at its next save.
  """
  result = {"files": 0, "checkpoints": 0, "events_cut_at_end": 0, "unreadable": [], "debris": []}
  names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
  state = tf.train.get_checkpoint_state(directory)
  listed = {os.path.basename(p) for p in state.all_model_checkpoint_paths} if state else set()
  for name in names:
    path = os.path.join(directory, name)
    result["files"] += 1
    try:
      if name == "checkpoint":
        if state is None:
          result["unreadable"].append(f"{path}: not a checkpoint state file")
        elif not tf.io.gfile.exists(state.model_checkpoint_path + ".index"):
          result["unreadable"].append(f"{path} names a missing newest checkpoint")
        for entry in state.all_model_checkpoint_paths[:-1] if state else []:
          if not tf.io.gfile.exists(entry + ".index"):
            result["debris"].append(f"{path} names the deleted {os.path.basename(entry)}")
      elif name.endswith("_temp") and os.path.isdir(path):
        result["debris"].append(f"{path}/ ({len(os.listdir(path))} files)")
      elif name.startswith("checkpoint.tmp"):
        result["debris"].append(f"{path} (the state file's temporary copy)")
      elif name.endswith(".index"):
        try:
          reader = tf.train.load_checkpoint(path[:-len(".index")])
          for tensor in reader.get_variable_to_shape_map():
            reader.get_tensor(tensor)
        except tf.errors.OpError as e:
          if name[:-len(".index")] in listed:
            raise
          result["debris"].append(f"{path} (unlisted, {str(e).splitlines()[0]})")
          continue
        result["checkpoints"] += 1
      elif ".data-" in name:
        if name.split(".data-")[0] + ".index" not in names:
          result["debris"].append(f"{path} (no .index)")
      elif name.startswith("events.out.tfevents."):
        result["events_cut_at_end"] += _events_readable(path)
      else:
        result["unreadable"].append(f"{path}: not a checkpoint, state or events file")
    except (tf.errors.OpError, ValueError) as e:
      result["unreadable"].append(f"{path}: {type(e).__name__}: {str(e).splitlines()[0]}")
  return result


def kill_soak(workdir, kills, seed, report=print):
  """Runs the kill/restart loop beside an evaluator; returns the summary (raises SoakError on
  the first failed check)."""
  rng = random.Random(seed)
  workdir = os.path.abspath(workdir)
  corpus = demo_data.ensure_demo_corpus(os.path.join(workdir, "demo_data"))
  run_flags = [f"--vocab_path={corpus['vocab']}", f"--log_root={workdir}", "--exp_name=soak",
               *MODEL_FLAGS]
  train_dir = os.path.join(workdir, "soak", "train")
  eval_dir = os.path.join(workdir, "soak", "eval")
  os.makedirs(train_dir, exist_ok=True)
  evaluator = _Process(workdir, "eval", ["--mode=eval", f"--data_path={corpus['val']}",
                                         "--eval_poll_secs=0.5", *run_flags])
  summary = {"kills": 0, "kills_during_checkpoint_write": 0, "kills_survived": 0, "resumes": 0,
             "max_step_regression": 0, "files_checked": 0, "checkpoints_loaded": 0,
             "events_cut_at_end": 0, "unreadable_files": [], "debris_seen": 0,
             "debris_at_end": [], "eval_failures": 0, "temp_files_of_killed_runs": 0,
             "temp_files_after_stops": 0}
  previous = None  # (last step logged, last step saved, lost-steps bound) of the killed run
  try:
    for k in range(kills + 1):
      # A log line per step: the steps trained before a kill are counted from them.
      trainer = _Process(workdir, f"train-{k:03d}", [
          "--mode=train", f"--data_path={corpus['train']}",
          f"--checkpoint_secs={CHECKPOINT_SECS}", "--log_every_n_steps=1", *run_flags])
      text = trainer.wait_for(r"\] step \d+: ")
      restored = _RESTORED.search(text)
      resumed_at = int(restored.group(1)) if restored else 0
      summary["resumes"] += bool(restored)
      if previous is not None:
        last_step, last_saved, bound = previous
        if not last_saved <= resumed_at <= last_step:
          raise SoakError(f"kill {k}: resumed at step {resumed_at}, but the killed run had saved "
                          f"step {last_saved} and trained to step {last_step}")
        regression = last_step - resumed_at
        if regression > bound:
          raise SoakError(f"kill {k}: lost {regression} steps, more than the {bound} trained in "
                          "the last checkpoint interval before the kill")
        summary["max_step_regression"] = max(summary["max_step_regression"], regression)
        summary["kills_survived"] += 1
      if k == kills:
        # The survivor: a few more steps, then a clean stop that must save and exit 0.
        trainer.wait_for(rf"\] step {resumed_at + 3}: ")
        code, summary["train_stop_secs"] = _stop(trainer, signal.SIGTERM)
        summary["temp_files_after_stops"] += trainer.remove_tmpdir()
        if code != 0 or "Traceback" in trainer.log():
          raise SoakError(f"{trainer.log_path}: the last run did not stop cleanly on SIGTERM "
                          f"(ended with {code})")
        break
      moment, killed_at = _kill(trainer, train_dir, rng, during_save=k % 2 == 0)
      summary["temp_files_of_killed_runs"] += trainer.remove_tmpdir()
      summary["kills"] += 1
      summary["kills_during_checkpoint_write"] += moment == "during a checkpoint write"
      previous = _killed_run(trainer.log(), resumed_at, killed_at)
      checked = check_dir(train_dir)
      _add(summary, checked)
      if checked["unreadable"]:
        raise SoakError(f"kill {k} ({moment}): unreadable files: {checked['unreadable']}")
      if evaluator.proc.poll() is not None:
        summary["eval_failures"] += 1
        raise SoakError(f"{evaluator.log_path}: eval exited with {evaluator.proc.returncode}")
      report(f"kill {k + 1}/{kills} {moment}: trained to step {previous[0]}, last saved "
             f"{previous[1]}; {checked['checkpoints']} checkpoints readable; debris: "
             f"{checked['debris'] or 'none'}")
  finally:
    code, summary["eval_stop_secs"] = _stop(evaluator, signal.SIGINT)
    summary["temp_files_after_stops"] += evaluator.remove_tmpdir()
  log = evaluator.log()
  if code != 0 or "Traceback" in log:
    summary["eval_failures"] += 1
    raise SoakError(f"{evaluator.log_path}: eval ended with {code}:\n{log[-3000:]}")
  if summary["temp_files_after_stops"]:
    raise SoakError(f"the stopped processes left {summary['temp_files_after_stops']} temporary "
                    "files")
  summary["eval_checkpoints_scored"] = len(re.findall(r"\] eval step \d+", log))
  for directory in (train_dir, eval_dir):
    checked = check_dir(directory)
    _add(summary, checked)
    summary["debris_at_end"] += checked["debris"]
    if checked["unreadable"]:
      raise SoakError(f"unreadable files at the end: {checked['unreadable']}")
  if any(path.startswith(train_dir) for path in summary["debris_at_end"]):
    raise SoakError(f"the restarted trainer did not clear the debris of cut-off saves: "
                    f"{summary['debris_at_end']}")
  return summary


def _stop(process, signum):
  """Sends `signum`; returns the exit code (or how it was killed) and the seconds it took."""
  process.proc.send_signal(signum)
  start = time.time()
  try:
    code = process.proc.wait(timeout=STOP_TIMEOUT_SECS)
  except subprocess.TimeoutExpired:
    process.proc.kill()
    process.proc.wait()
    code = f"killed after {STOP_TIMEOUT_SECS} s"
  return code, round(time.time() - start, 1)


def _killed_run(text, resumed_at, killed_at):
  """(last step logged, last step reported saved, steps trained in the checkpoint interval
  before the kill) of a killed trainer's log."""
  steps = [(_log_time(t), int(s)) for t, s in _STEP.findall(text)]
  saved = [int(s) for _, s in _SAVED.findall(text)]
  window = datetime.timedelta(seconds=CHECKPOINT_SECS + INTERVAL_SLACK_SECS)
  recent = sum(1 for t, _ in steps if t >= killed_at - window)
  return (max([resumed_at] + [s for _, s in steps]), max([resumed_at] + saved), recent)


def _add(summary, checked):
  summary["files_checked"] += checked["files"]
  summary["checkpoints_loaded"] += checked["checkpoints"]
  summary["events_cut_at_end"] += checked["events_cut_at_end"]
  summary["unreadable_files"] += checked["unreadable"]
  summary["debris_seen"] += len(checked["debris"])


def fuzz_counts(workdir, scale, seed):
  """Runs tests/formats/test_fuzz.py with `scale` times its examples; returns its outcome counts."""
  report = os.path.join(os.path.abspath(workdir), "fuzz_outcomes.json")
  env = {**os.environ, "POINTER_GEN_FUZZ_SCALE": str(scale), "POINTER_GEN_FUZZ_REPORT": report}
  result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:logging", f"--hypothesis-seed={seed}",
                           str(REPO / "tests" / "test_fuzz.py")],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
  if result.returncode != 0:
    raise SoakError(f"the fuzz tests failed:\n{result.stdout[-5000:]}")
  with open(report, encoding="utf-8") as f:
    return json.load(f)


def _define_flags():
  """The command line's flags, defined only when this runs as a script: the tests load this file
  beside pointer_gen.config, which has its own --seed."""
  flags.DEFINE_integer("kills", 30, "SIGKILLs of the trainer.", lower_bound=0)
  flags.DEFINE_integer("seed", 0, "Seed of the kill moments and fuzzing.")
  flags.DEFINE_string("workdir", "/tmp/pointer_gen_soak",
                      "Scratch directory (demo corpus, run directory, logs).")
  flags.DEFINE_float("fuzz_scale", 10.0,
                     "Multiplier of the fuzz tests' example counts; 0 skips fuzzing.",
                     lower_bound=0.0)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  args = flags.FLAGS
  start = time.time()
  summary = kill_soak(args.workdir, args.kills, args.seed,
                      report=functools.partial(print, flush=True))
  print(f"\nKill soak ({time.time() - start:.0f} s, workdir {os.path.abspath(args.workdir)}):")
  for key, value in summary.items():
    print(f"  {key}: {value}")
  if args.fuzz_scale:
    start = time.time()
    counts = fuzz_counts(args.workdir, args.fuzz_scale, args.seed)
    print(f"\nFuzzing (x{args.fuzz_scale:g} examples, {time.time() - start:.0f} s): "
          f"{sum(n for key, n in counts.items() if 'inputs' in key)} inputs fuzzed")
    for key, value in sorted(counts.items()):
      print(f"  {key}: {value}")


if __name__ == "__main__":
  _define_flags()
  usage.run_tool(main)
