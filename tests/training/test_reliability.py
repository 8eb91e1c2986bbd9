"""Reliability of the command line: NaN/Inf losses, a full disk or unwritable output directory,
an interrupted decode, and a short SIGKILL soak of training beside a concurrent eval.

Train, eval and decode run the entry point with a tiny model on the demo corpus: in this
process where nothing but its output is checked, as `python -m pointer_gen.run` subprocesses
where the process itself matters (killed, its files capped) or where two runs from the same
checkpoint and seed must repeat bit for bit. Those processes run each op on one thread, and
those that the test only waits for start together when the module starts (`background`). A NaN
loss is put into the training step from here (helpers/injected.py), in this process or, by
helpers/patched_run.py, in a subprocess.
"""

import concurrent.futures
import contextlib
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import files
from pointer_gen.inference import decode
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train

from helpers import injected
from helpers import load_tool, REPO, run_entry_point, run_main, tiny_flags, tiny_hparams

# More examples than the five a decode is killed after.
DECODE_EXAMPLES = 12
DECODE = ("--mode=decode", "--single_pass", "--beam_size=2", "--min_dec_steps=2",
          "--max_dec_steps=8", "--batch_size=1", f"--max_decode_examples={DECODE_EXAMPLES}")
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
TIMEOUT_SECS = 300


def _args(corpus, log_root, split, args):
  return [f"--data_path={corpus[split]}", f"--vocab_path={corpus['vocab']}",
          f"--log_root={log_root}", *tiny_flags(), *args]


def _run(corpus, log_root, *args, split="train", preexec_fn=None, patched=()):
  """A finished `python -m pointer_gen.run` on the demo corpus: (exit code, stdout, stderr).
  `patched`: helpers/patched_run.py's first arguments, which run it with a fault put in."""
  command, env = ["-m", "pointer_gen.run"], {**os.environ, **ONE_THREAD}
  if patched:
    command = [str(REPO / "tests" / "helpers" / "patched_run.py"), *map(str, patched)]
    env["PYTHONPATH"] = str(REPO)  # a script's directory is on its sys.path, not the checkout
  result = subprocess.run(
      [sys.executable, *command, *_args(corpus, log_root, split, args)], capture_output=True,
      text=True, env=env, timeout=TIMEOUT_SECS, preexec_fn=preexec_fn, check=False)
  return result.returncode, result.stdout, result.stderr


def _run_here(capsys, caplog, corpus, log_root, *args, split="train"):
  """`_run` in this process: (exit code, stdout, stderr followed by the log's messages). The
  INFO lines, which the command line logs, are kept (--verbosity=0) as the log's messages."""
  with caplog.at_level("INFO", logger="absl"):
    code, out, err = run_main(capsys, *_args(corpus, log_root, split, args), "--verbosity=0")
  return code, out, "\n".join([err, *caplog.messages])


def _weights(prefix):
  """Every variable of a checkpoint but the save counter (weights, Adagrad accumulators, step,
  optimizer iterations), by name."""
  reader = tf.train.load_checkpoint(prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
          if not name.startswith(("save_counter", "_CHECKPOINTABLE_OBJECT_GRAPH"))}


def _steps_logged(log):
  """The steps of the training log's lines, in absl's format or as bare messages."""
  return [int(s) for s in re.findall(r"(?:^|\] )step (\d+): ", log, re.M)]


def _checkpoint_steps(train_dir):
  return sorted(int(re.search(r"-(\d+)\.index$", p).group(1))
                for p in glob.glob(os.path.join(train_dir, "model.ckpt-*.index")))


def _copy_run(run_dir, tmp_path):
  shutil.copytree(run_dir, tmp_path / "run")
  return tmp_path / "run" / "train"


# -------------------------------------- runs that only wait on their processes, started first


def _nonfinite_runs(corpus, run_dir, root):
  """In root/run, a run resumed from model.ckpt-4 that meets a non-finite loss at step 8; in
  root/replay/run, a clean run from the same start to the newest checkpoint that one left. Their
  (exit code, stdout, stderr)."""
  train_dir = _copy_run(run_dir, root)
  result = _run(corpus, root, "--num_train_steps=20", "--checkpoint_secs=1",
                "--log_every_n_steps=1", patched=("nonfinite_loss_at", 8))
  newest = tf.train.latest_checkpoint(train_dir) or "-0"
  _copy_run(run_dir, root / "replay")
  return result, _run(corpus, root / "replay", f"--num_train_steps={newest.rsplit('-', 1)[1]}",
                      "--checkpoint_secs=1000")


def _capped_run(corpus, run_dir, root, limit, *args):
  """In root/run, a run resumed from model.ckpt-4 whose files are capped at `limit` bytes: its
  (exit code, stdout, stderr)."""
  _copy_run(run_dir, root)
  return _run(corpus, root, *args, preexec_fn=_file_size_limit(limit))


@pytest.fixture(scope="module", autouse=True)
def background(request, demo_corpus, tiny_run, tmp_path_factory):
  """The subprocess runs of the selected tests below that do nothing but wait for them, started
  on two threads when the module starts, while its other tests run here: {name: (the root
  directory of its runs, their result's future)}."""
  runs = {
      "nonfinite": (test_nonfinite_loss_stops_before_the_update_and_keeps_the_last_good_checkpoint,
                    _nonfinite_runs, ()),
      # The tiny model's checkpoint is ~100 KB; a few steps of summaries stay far below the cap.
      "disk_full_saving": (
          test_disk_full_while_saving_is_a_clear_error_and_keeps_the_previous_checkpoint,
          _capped_run, (50_000, "--num_train_steps=6", "--checkpoint_secs=1000")),
      "disk_full_summaries": (
          test_disk_full_while_writing_summaries_is_a_clear_error, _capped_run,
          (12_000, "--num_train_steps=100000", "--checkpoint_secs=100000")),
  }
  selected = {item.function for item in request.session.items if item.module is request.module}
  with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    yield {name: (root, pool.submit(run, demo_corpus, tiny_run, root, *args))
           for name, (test, run, args) in runs.items() if test in selected
           for root in [tmp_path_factory.mktemp(name)]}


def _file_size_limit(limit):
  """A preexec_fn that caps every file the child writes at `limit` bytes, as a full disk does:
  writes past it fail with EFBIG (SIGXFSZ, which would kill the child, is ignored). stdout and
  stderr are pipes, which the cap does not touch."""

  def apply():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

  return apply


# ----------------------------------------------------------------- interrupted decode resumes


def _decode_dir(run_dir):
  (directory,) = glob.glob(os.path.join(run_dir, "decode_val_*"))
  return directory


def _decode_files(directory):
  return {f"{sub}/{name}": open(os.path.join(directory, sub, name), encoding="utf-8").read()
          for sub in ("decoded", "reference")
          for name in sorted(os.listdir(os.path.join(directory, sub)))}


@pytest.fixture(scope="module")
def decode_reference(demo_corpus, tiny_run, tmp_path_factory):
  """The files of an uninterrupted decode of the trained model."""
  root = tmp_path_factory.mktemp("decode_reference")
  shutil.copytree(tiny_run, root / "run")
  assert run_entry_point(*_args(demo_corpus, root, "val", DECODE)) == 0
  directory = _decode_dir(root / "run")
  return _decode_files(directory), open(os.path.join(directory, "metrics.json")).read()


def _same_metrics(a, b):
  # p_gen means are averaged in a different order after a resume: equal to float precision.
  strip = lambda text: re.sub(r'"p_gen_mean": [0-9.e-]+', "", text)
  return strip(a) == strip(b)


def _complete(decoded):
  """How many decoded files are complete (a temporary file of a write under way is not)."""
  return len([n for n in os.listdir(decoded) if n.endswith("_decoded.txt")])


def _wait_for(found, process, what):
  """Polls until `found()`; fails if `process` ends first or the time runs out."""
  deadline = time.time() + TIMEOUT_SECS
  while not found():
    assert process.poll() is None and time.time() < deadline, f"no {what}"
    time.sleep(0.01)


@pytest.mark.slow
def test_decode_killed_mid_run_resumes_to_the_same_files(demo_corpus, tiny_run, decode_reference,
                                                        tmp_path, capsys, caplog):
  reference, reference_metrics = decode_reference
  shutil.copytree(tiny_run, tmp_path / "run")
  proc = subprocess.Popen(
      [sys.executable, "-m", "pointer_gen.run", *_args(demo_corpus, tmp_path, "val", DECODE)],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **ONE_THREAD})
  directory = tmp_path / "run" / _decode_dir_name(demo_corpus)
  decoded = directory / "decoded"
  # Killed inside the write of a decoded file, the sixth or a later one, whenever the kill
  # comes: each such write opens its temporary file `<name>.tmp-<pid>`, made a named pipe here,
  # which blocks until a reader opens it (none does). The pipes are made once the decode has
  # deleted what an earlier run left (it writes per_example.jsonl next), seconds before it
  # decodes its first example; one it is already writing stays a file.
  _wait_for((directory / "per_example.jsonl").exists, proc, "per_example.jsonl")
  for index in range(5, DECODE_EXAMPLES):
    with contextlib.suppress(FileExistsError):
      os.mkfifo(decoded / f"{index:06d}_decoded.txt{files.TEMPORARY_MARK}{proc.pid}")

  def held():
    """Held for good: the reference of the next example is written, from the sixth on."""
    done = _complete(decoded)
    return done >= 5 and (directory / "reference" / f"{done:06d}_reference.txt").exists()

  _wait_for(held, proc, "decode held inside a write")
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  done = _complete(decoded)
  assert 5 <= done < DECODE_EXAMPLES, done
  assert not (directory / "metrics.json").exists()
  code, _, err = _run_here(capsys, caplog, demo_corpus, tmp_path, *DECODE, split="val")
  assert code == 0, err
  assert re.search(r"Resuming the decode in \S+ after \d+ examples", err)
  assert _decode_files(directory) == reference
  assert _same_metrics(open(directory / "metrics.json").read(), reference_metrics)


def _decode_dir_name(corpus):
  hps = config.HParams(data_path=corpus["val"], max_enc_steps=40, beam_size=2, min_dec_steps=2,
                       max_dec_steps=8)
  return decode.decode_dir_name(hps, "model.ckpt-4")


class _Killed(BaseException):
  """Stands for SIGKILL inside the process: nothing after the raise runs."""


@pytest.mark.parametrize("dies_after", ["reference/000003_reference.txt",
                                        "decoded/000003_decoded.txt"])
def test_decode_dying_between_its_writes_resumes_to_the_same_files(
    demo_corpus, tiny_run, decode_reference, tmp_path, monkeypatch, dies_after):
  """Death right after each write of one example. After its decoded file the example counts
  as done, and the resume used to refuse: the p_gen log line came after that file."""
  reference, _ = decode_reference
  shutil.copytree(tiny_run, tmp_path / "run")
  hps = tiny_hparams(demo_corpus, tmp_path, mode="decode", single_pass=True,
                     data_path=demo_corpus["val"], batch_size=1, max_dec_steps=8, min_dec_steps=2,
                     beam_size=2, max_decode_examples=DECODE_EXAMPLES)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  write = files.write_text_atomic

  def write_then_die(path, text):
    write(path, text)
    if path.endswith(dies_after):
      raise _Killed(path)

  monkeypatch.setattr(files, "write_text_atomic", write_then_die)
  with pytest.raises(_Killed):
    decode.run(hps, vocab)
  monkeypatch.setattr(files, "write_text_atomic", write)
  decode.run(hps, vocab)
  assert _decode_files(_decode_dir(tmp_path / "run")) == reference


# --------------------------------------------------------------------- unwritable directories


def test_output_directory_that_cannot_be_created_is_a_clear_error(demo_corpus, tmp_path, capsys,
                                                                  caplog):
  # Tests run as root, which chmod does not stop; a regular file where a directory must go
  # stops everyone.
  (tmp_path / "a_file").write_text("not a directory")
  code, _, err = _run_here(capsys, caplog, demo_corpus, tmp_path / "a_file" / "logs",
                           "--num_train_steps=2")
  assert code == 1
  assert "Traceback" not in err
  # The run directory is the first one a trainer makes (for its lock and run_config.json).
  assert re.search(r"^error: cannot create the output directory \S+a_file/logs/run "
                   r"\(check --log_root\): Not a directory$", err, re.M), err


def test_eval_directory_that_cannot_be_created_is_a_clear_error(demo_corpus, tiny_run, tmp_path,
                                                                capsys, caplog):
  _copy_run(tiny_run, tmp_path)
  (tmp_path / "run" / "eval").write_text("a file where eval/ must go")
  code, _, err = _run_here(capsys, caplog, demo_corpus, tmp_path, "--mode=eval",
                           "--eval_max_checkpoints=1", split="val")
  assert code == 1
  assert "Traceback" not in err
  assert re.search(r"^error: cannot create the output directory \S+/run/eval "
                   r"\(check --log_root\): File exists$", err, re.M), err


# -------------------------------------------------------------------------------- NaN and Inf


def test_skip_nonfinite_batches_continues_counts_and_logs(demo_corpus, tmp_path, capsys, caplog,
                                                         monkeypatch):
  # Before the fault fired only once, the skipped step never advanced and every later batch was
  # poisoned again: this run never ended.
  injected.nonfinite_loss_at(3, monkeypatch.setattr)
  code, out, err = _run_here(capsys, caplog, demo_corpus, tmp_path, "--num_train_steps=6",
                             "--checkpoint_secs=1000", "--skip_nonfinite_batches")
  assert code == 0, err
  assert "Traceback" not in err
  assert re.search(r"Non-finite loss or gradient at step 3 \(loss nan, .*the update was NOT "
                   r"applied; batch skipped \(1 so far, --skip_nonfinite_batches\)", err), err
  # One line at the end (the default logs every 100 steps), of the 6 steps trained: the
  # skipped batch, which did not advance the step, is not among them.
  assert _steps_logged(err) == [6]
  assert re.search(r"(?:^|\] )step 6: .*\(means of 6 steps\); ", err, re.M), err
  assert _checkpoint_steps(tmp_path / "run" / "train") == [6]
  assert "Trained steps 1-6" in out


def test_a_skipped_batch_leaves_weights_and_optimizer_state_untouched(demo_corpus, tmp_path,
                                                                      monkeypatch):
  injected.nonfinite_loss_at(2, monkeypatch.setattr)
  hps = tiny_hparams(demo_corpus, tmp_path, skip_nonfinite_batches=True)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  trainer = train.Trainer(hps, vocab)
  step_fn = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, len(vocab))
  batches = iter(trainer.dataset())

  def state():
    # The optimizer's step counter counts calls, skipped ones included; all else must hold.
    variables = trainer.model.variables + [v for v in trainer.optimizer.variables
                                           if "iteration" not in v.path]
    return [v.numpy().copy() for v in variables]

  assert bool(step_fn(batches)["finite"]) and int(trainer.step.numpy()) == 1
  before = state()
  report = step_fn(batches)
  assert not bool(report["finite"]) and np.isnan(report["total_loss"])
  assert int(trainer.step.numpy()) == 1
  for a, b in zip(before, state()):
    np.testing.assert_array_equal(a, b)
  assert bool(step_fn(batches)["finite"]) and int(trainer.step.numpy()) == 2
  assert any(not np.array_equal(a, b) for a, b in zip(before, state()))


@pytest.mark.slow
def test_nonfinite_loss_stops_before_the_update_and_keeps_the_last_good_checkpoint(background):
  root, runs = background["nonfinite"]
  (code, _, err), replay = runs.result()
  train_dir = root / "run" / "train"
  assert code == 1
  assert "Traceback" not in err
  assert re.search(r"^error: Non-finite loss or gradient at step 8 .*the update was NOT "
                   r"applied; the newest checkpoint in \S+ is the last good one", err, re.M), err
  assert _steps_logged(err) == [5, 6, 7]
  # Nothing at or past the bad step was saved, and the newest checkpoint is a good one: the
  # same weights and optimizer state as a clean run from the same start to the same step.
  newest = tf.train.latest_checkpoint(train_dir)
  last_good = int(newest.rsplit("-", 1)[1])
  # The first step after the resume is traced, which takes longer than the 1 s interval: the
  # run saves it, so the run itself wrote the checkpoint that must be good.
  assert max(_checkpoint_steps(train_dir)) == last_good and 5 <= last_good <= 7
  saved = _weights(newest)
  assert saved["step/.ATTRIBUTES/VARIABLE_VALUE"] == last_good
  assert all(np.isfinite(v).all() for v in saved.values() if v.dtype.kind == "f")
  code, _, err = replay
  assert code == 0, err
  replayed = _weights(str(root / "replay" / "run" / "train" / f"model.ckpt-{last_good}"))
  assert saved.keys() == replayed.keys()
  for name, value in saved.items():
    np.testing.assert_array_equal(value, replayed[name], err_msg=name)


# ---------------------------------------------------------------------------------- full disk


def _files(prefix):
  """The bytes of a checkpoint's files, by name."""
  return {os.path.basename(p): open(p, "rb").read() for p in sorted(glob.glob(prefix + ".*"))}


@pytest.mark.slow
def test_disk_full_while_saving_is_a_clear_error_and_keeps_the_previous_checkpoint(
    background, demo_corpus, tiny_run, capsys, caplog):
  root, run = background["disk_full_saving"]
  code, _, err = run.result()
  train_dir = root / "run" / "train"
  previous = os.path.join(train_dir, "model.ckpt-4")
  assert code == 1
  assert "Traceback" not in err
  assert re.search(rf"^error: \S+: could not write the checkpoint of step 6; the newest complete "
                   rf"checkpoint is still {re.escape(previous)} \(.*File too large", err, re.M), err
  assert tf.train.latest_checkpoint(train_dir) == previous
  assert _files(previous) == _files(os.path.join(tiny_run, "train", "model.ckpt-4"))
  assert _weights(previous)["step/.ATTRIBUTES/VARIABLE_VALUE"] == 4
  # With space again, training resumes from it and clears what the failed save left.
  code, _, err = _run_here(capsys, caplog, demo_corpus, root, "--num_train_steps=5",
                           "--checkpoint_secs=1000")
  assert code == 0, err
  assert f"Restored {previous} (step 4)" in err
  assert "model.ckpt-6_temp, left by a save that was cut off" in err
  assert not glob.glob(os.path.join(train_dir, "*_temp"))
  assert _checkpoint_steps(train_dir) == [4, 5]


@pytest.mark.slow
def test_disk_full_while_writing_summaries_is_a_clear_error(background, tiny_run):
  root, run = background["disk_full_summaries"]
  code, _, err = run.result()
  train_dir = root / "run" / "train"
  assert code == 1
  assert "Traceback" not in err
  assert re.search(r"^error: \S+/train: could not write TensorBoard summaries \(.*events\.out\."
                   r"tfevents\..*File too large", err, re.M), err
  assert _files(os.path.join(train_dir, "model.ckpt-4")) == _files(
      os.path.join(tiny_run, "train", "model.ckpt-4"))


# --------------------------------------------------------------------------------- short soak


@pytest.mark.slow
def test_short_soak_sigkill_training_beside_eval(tmp_path):
  """tools/dev/soak.py at a small scale: 3 SIGKILLs (the 1st and 3rd inside a checkpoint write),
  restarts, and a concurrent eval that must never fail; it raises on any failed check."""
  soak = load_tool("soak")
  summary = soak.kill_soak(str(tmp_path), kills=3, seed=0, report=lambda line: None)
  assert summary["kills"] == summary["kills_survived"] == 3
  # The first kill may cut off the very first save: that restart starts afresh.
  assert summary["resumes"] >= 2
  assert summary["kills_during_checkpoint_write"] >= 1
  assert summary["unreadable_files"] == [] and summary["eval_failures"] == 0
  assert summary["checkpoints_loaded"] >= 3 and summary["eval_checkpoints_scored"] >= 1
  # Nothing writes to a process's temporary directory (autograph, whose source files a killed
  # process would leave there, converts nothing), and the soak deleted every one.
  assert summary["temp_files_of_killed_runs"] == summary["temp_files_after_stops"] == 0
  assert os.listdir(tmp_path / "tmp") == []
