"""The paper's recipe in one run directory, at a tiny size: train without coverage with eval
beside it, convert, eval again beside the coverage training, restore the best model, and decode a
checkpoint of each phase with no model flags (the checkpoint decides whether the model has
coverage). And a run that keeps working when the checkout holding it moves."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from absl import flags
import pytest
import tensorflow as tf

from pointer_gen import checkpoints
from pointer_gen import demo_data
from pointer_gen import run_config

from conftest import REPO, project_error_lines, run_main

TINY = ("--vocab_size=519", "--hidden_dim=8", "--emb_dim=8", "--batch_size=2",
        "--max_enc_steps=30", "--max_dec_steps=6", "--seed=1", "--checkpoint_secs=1000")
DECODE = ("--mode=decode", "--single_pass", "--beam_size=2", "--min_dec_steps=1",
          "--max_dec_steps=4", "--batch_size=2", "--max_decode_examples=2")
FIRST_STEPS, COVERAGE_STEPS = 2, 4


def _settled(*args):
  """The HParams run.main would use for `args`, without running anything."""
  from pointer_gen import run  # pylint: disable=g-import-not-at-top
  flags.FLAGS.unparse_flags()
  flags.FLAGS(["run", *args])
  try:
    return run.settle_hparams(flags.FLAGS)
  finally:
    flags.FLAGS.unparse_flags()


def _state(directory):
  state = tf.train.get_checkpoint_state(directory)
  return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


def _wait_for_line(path, pattern, process, timeout=180):
  """Polls the log file `path` until a line matches `pattern`; fails if `process` ends first."""
  deadline = time.time() + timeout
  while True:
    with open(path, encoding="utf-8") as f:
      text = f.read()
    if re.search(pattern, text, re.M):
      return
    if process.poll() is not None or time.time() > deadline:
      pytest.fail(f"gave up waiting for {pattern!r} in {path}:\n{text[-3000:]}")
    time.sleep(0.2)


def test_the_recipe_in_one_run_directory(tmp_path, capsys):
  corpus = demo_data.ensure_demo_corpus(str(tmp_path / "demo_data"))
  run_dir = tmp_path / "runs" / "recipe"
  train_dir, eval_dir = run_dir / "train", run_dir / "eval"
  where = (f"--log_root={tmp_path / 'runs'}", "--exp_name=recipe")
  train_data = (*where, f"--data_path={corpus['train']}")
  val_data = (*where, f"--data_path={corpus['val']}")

  # 1. Train the pointer-generator without coverage, 2. eval beside it (here after it: it scores
  # the newest checkpoint and ends after the step the trainer stops at).
  code, _, err = run_main(capsys, "--mode=train", *train_data, f"--vocab_path={corpus['vocab']}",
                          *TINY, f"--num_train_steps={FIRST_STEPS}")
  assert code == 0, err
  first = str(train_dir / f"model.ckpt-{FIRST_STEPS}")
  assert checkpoints.newest(str(train_dir)) == first and not checkpoints.has_coverage(first)
  code, _, err = run_main(capsys, "--mode=eval", *val_data, "--eval_poll_secs=0.1")
  assert code == 0, err
  first_best = str(eval_dir / f"bestmodel-{FIRST_STEPS}")
  assert checkpoints.newest(str(eval_dir)) == first_best
  assert not checkpoints.has_coverage(first_best)
  assert run_config.read(run_dir)["phases"] == [{"coverage": False, "from_step": 0,
                                                 "by": "train"}]

  # 3. Convert to a coverage model: the record's phases say where coverage began.
  code, out, err = run_main(capsys, "--mode=train", *train_data, "--coverage",
                            "--convert_to_coverage_model")
  assert code == 0, err
  converted = f"{first}_cov_init"
  assert checkpoints.newest(str(train_dir)) == converted and checkpoints.has_coverage(converted)
  recorded = run_config.read(run_dir)
  assert recorded["coverage"] is True
  assert recorded["phases"][1:] == [{"coverage": True, "from_step": FIRST_STEPS,
                                     "by": "convert_to_coverage_model"}]

  # Eval again, started now beside the coverage training (a process of its own): it builds the
  # coverage model from the newest checkpoint, keeps the first phase's best model, skips the
  # converted checkpoint and scores the coverage phase's with a fresh best loss.
  log = tmp_path / "eval2"
  env = dict(os.environ, TMPDIR=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="2")
  with open(f"{log}.out", "w") as out_file, open(f"{log}.err", "w") as err_file:
    evaluator = subprocess.Popen(
        [sys.executable, "-m", "pointer_gen.run", "--mode=eval", *val_data,
         "--eval_poll_secs=0.1"], cwd=REPO, env=env, stdout=out_file, stderr=err_file)
  try:
    _wait_for_line(f"{log}.err", r"Skipping .*_cov_init, the first phase's model", evaluator)
    # 4. Train with coverage: no model flag, the converted checkpoint has coverage.
    code, _, err = run_main(capsys, "--mode=train", *train_data,
                            f"--num_train_steps={COVERAGE_STEPS}")
    assert code == 0, err
    assert evaluator.wait(timeout=180) == 0
  finally:
    if evaluator.poll() is None:
      evaluator.kill()
      evaluator.wait()
  with open(f"{log}.err", encoding="utf-8") as f:
    eval_log = f.read()
  assert not project_error_lines(eval_log), eval_log[-3000:]
  assert f"Keeping the best models of the run's phase without coverage ({first_best})" in eval_log
  second = str(train_dir / f"model.ckpt-{COVERAGE_STEPS}")
  assert checkpoints.has_coverage(second)
  coverage_best = str(eval_dir / f"bestmodel-{COVERAGE_STEPS}")
  assert checkpoints.newest(str(eval_dir)) == coverage_best
  assert checkpoints.has_coverage(coverage_best)
  # The first phase's best model is still there, whole.
  assert not checkpoints.has_coverage(first_best)
  assert _state(str(eval_dir)) == [f"bestmodel-{COVERAGE_STEPS}"]

  # 5. Restore the best model eval kept (the coverage phase's) as the newest train checkpoint.
  code, out, err = run_main(capsys, "--mode=train", *train_data, "--restore_best_model")
  assert code == 0, err
  restored = f"{second}_best"
  assert out.splitlines()[-1] == (
      f"Wrote the best model {coverage_best} (with coverage) as {restored}, the newest "
      "checkpoint (fresh optimizer): training resumes from it")
  assert checkpoints.newest(str(train_dir)) == restored and checkpoints.has_coverage(restored)
  assert run_config.read(run_dir)["coverage"] is True
  # Nothing written before is gone.
  for prefix in (first, converted, second, first_best, coverage_best):
    assert os.path.exists(prefix + ".index"), prefix

  # 6. Decode a checkpoint of each phase by --ckpt_path, with no model flag.
  for ckpt, coverage in ((first, False), (second, True)):
    code, out, err = run_main(capsys, *DECODE, *val_data, f"--ckpt_path={ckpt}")
    assert code == 0, err
    decode_dir = run_dir / f"decode_val_30maxenc_2beam_1mindec_4maxdec_ckpt-{ckpt[-1]}"
    with open(decode_dir / "metrics.json", encoding="utf-8") as f:
      used = json.load(f)
    assert used["num_examples"] == 2
    assert (used["flags"]["coverage"], used["flags"]["hidden_dim"]) == (coverage, 8)
    assert sorted(os.listdir(decode_dir / "decoded")) == ["000000_decoded.txt",
                                                          "000001_decoded.txt"]
  # Single-pass eval and export of the first phase's checkpoint build its model too.
  assert _settled("--mode=eval", "--single_pass", *val_data,
                  f"--ckpt_path={first}").coverage is False
  assert _settled("--mode=export", *where, "--export_dir=x", f"--ckpt_path={first}",
                  ).coverage is False

  # A flag that contradicts the checkpoint loaded is an error naming both; nothing is written.
  before = sorted(os.listdir(run_dir))
  code, _, err = run_main(capsys, *DECODE, *val_data, f"--ckpt_path={first}", "--coverage")
  assert code == 1
  assert project_error_lines(err)[-1] == (
      f"error: --coverage=true conflicts with the checkpoint {first}, which has no coverage "
      "(no w_c): leave --coverage out to build the model as the checkpoint has it "
      "(--convert_to_coverage_model turns a model trained without coverage into a coverage "
      "model)")
  code, _, err = run_main(capsys, *DECODE, *val_data, f"--ckpt_path={second}", "--nocoverage")
  assert code == 1
  assert project_error_lines(err)[-1] == (
      f"error: --coverage=false conflicts with the checkpoint {second}, which is a coverage "
      "model (it holds w_c): leave --coverage out to build the model as the checkpoint has it")
  assert sorted(os.listdir(run_dir)) == before
