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

import pytest
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.data import run_record
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate

from helpers import REPO, project_error_lines, run_main, settle

TINY = ("--vocab_size=519", "--hidden_dim=8", "--emb_dim=8", "--batch_size=2",
        "--max_enc_steps=30", "--max_dec_steps=6", "--seed=1", "--checkpoint_secs=1000")
DECODE = ("--mode=decode", "--single_pass", "--beam_size=2", "--min_dec_steps=1",
          "--max_dec_steps=4", "--batch_size=2", "--max_decode_examples=2")
FIRST_STEPS, COVERAGE_STEPS = 2, 4
DEMO_DECODED = 4


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


@pytest.mark.slow
def test_the_recipe_in_one_run_directory(tmp_path, capsys, caplog, demo_corpus):
  corpus = demo_corpus
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
  assert run_record.read(run_dir).phases == (run_record.Phase(coverage=False, from_step=0,
                                                              by="train"),)

  # An eval beside the first phase that is still waiting when the conversion comes.
  eval_hps = settle("--mode=eval", *val_data, "--eval_poll_secs=0.1")
  beside = evaluate.ConcurrentEvaluator(
      eval_hps, vocab_lib.Vocab.from_file(eval_hps.vocab_path, eval_hps.vocab_size))
  assert beside.model.coverage is False

  # 3. Convert to a coverage model: the record's phases say where coverage began.
  code, out, err = run_main(capsys, "--mode=train", *train_data, "--coverage",
                            "--convert_to_coverage_model")
  assert code == 0, err
  converted = f"{first}_cov_init"
  assert checkpoints.newest(str(train_dir)) == converted and checkpoints.has_coverage(converted)
  # That eval stops at the converted checkpoint, the other phase's, without scoring it.
  with caplog.at_level("INFO", logger="absl"):
    assert beside.run() == 0
  assert (f"{converted} is a checkpoint with coverage, of the run's other phase: this eval "
          "compared the checkpoints without coverage and stops") in caplog.text
  assert checkpoints.newest(str(eval_dir)) == first_best
  del beside
  recorded = run_record.read(run_dir)
  assert recorded.settings["coverage"] is True
  assert recorded.phases[1:] == (run_record.Phase(coverage=True, from_step=FIRST_STEPS,
                                                  by="convert_to_coverage_model"),)

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
                            f"--num_train_steps={COVERAGE_STEPS}", "--checkpoint_secs=1000")
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
  assert run_record.read(run_dir).settings["coverage"] is True
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
  assert settle("--mode=eval", "--single_pass", *val_data,
                  f"--ckpt_path={first}").coverage is False
  assert settle("--mode=export", *where, "--export_dir=x", f"--ckpt_path={first}",
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


def _tiny_demo_cfg():
  """flags/demo.cfg with the model and the run made tiny (the demo's 300 steps take minutes on a
  shared CI machine); everything else, run directory and decode flags included, as it is."""
  text = (REPO / "flags" / "demo.cfg").read_text(encoding="utf-8")
  for flag, value in (("hidden_dim", 8), ("emb_dim", 8), ("num_train_steps", 2)):
    text, count = re.subn(rf"^--{flag}=\d+$", f"--{flag}={value}", text, flags=re.M)
    assert count == 1, flag
  return text


@pytest.mark.slow
def test_a_run_decodes_after_its_checkout_moves(tmp_path, capsys, monkeypatch, demo_corpus):
  """The README's demo commands in a checkout that moves between training and decoding (the
  decode limited to a few articles)."""
  old = tmp_path / "old" / "checkout"
  (old / "flags").mkdir(parents=True)
  # The corpus the first command would generate there (the same seed: reused as it is).
  shutil.copytree(demo_corpus["dir"], old / "runs" / "demo_data")
  (old / "flags" / "demo.cfg").write_text(_tiny_demo_cfg(), encoding="utf-8")
  monkeypatch.chdir(old)
  code, _, err = run_main(capsys, "--flagfile=flags/demo.cfg")
  assert code == 0, err
  # The demo's vocab lies in the run's log_root tree: recorded relative to the run directory.
  assert run_record.read("runs/demo").vocab_path == os.path.join("..", "demo_data", "vocab")

  new = tmp_path / "new" / "checkout"
  new.parent.mkdir()
  shutil.move(old, new)
  monkeypatch.chdir(new)
  code, out, err = run_main(capsys, "--flagfile=flags/demo.cfg", "--mode=decode",
                            "--single_pass", f"--max_decode_examples={DEMO_DECODED}")
  assert code == 0, err
  decode_dir = new / "runs" / "demo" / "decode_val_150maxenc_4beam_5mindec_30maxdec_ckpt-2"
  assert f"examples in {decode_dir} (metrics.json)" in out
  with open(decode_dir / "metrics.json", encoding="utf-8") as f:
    used = json.load(f)
  assert used["num_examples"] == len(os.listdir(decode_dir / "decoded")) == DEMO_DECODED
  assert used["flags"]["vocab_path"] == str(new / "runs" / "demo_data" / "vocab")
  assert not old.exists()

  # A record written before relative paths (the vocab's absolute path, gone with the old
  # checkout) names the missing file; --vocab_path alone replaces it when the checksum agrees.
  with open("runs/demo/run_config.json", encoding="utf-8") as f:
    recorded = json.load(f)
  gone = str(old / "runs" / "demo_data" / "vocab")
  recorded["vocab_path"] = gone
  with open("runs/demo/run_config.json", "w", encoding="utf-8") as f:
    json.dump(recorded, f)
  decode = ("--flagfile=flags/demo.cfg", "--mode=decode", "--single_pass")
  code, _, err = run_main(capsys, *decode)
  assert code == 1
  assert project_error_lines(err)[-1] == (
      f"error: the vocab {gone} recorded in runs/demo/run_config.json does not exist any more: "
      f"pass --vocab_path with that vocab file (the same bytes, sha256 "
      f"{recorded['vocab_sha256']})")
  copy = tmp_path / "vocab_copy"
  shutil.copy(new / "runs" / "demo_data" / "vocab", copy)
  for vocab in ("runs/demo_data/vocab", str(copy)):
    hps = settle(*decode, f"--vocab_path={vocab}")
    assert (hps.vocab_path, hps.hidden_dim) == (str(new / "runs" / "demo_data" / "vocab"), 8)
  other = tmp_path / "other_vocab"
  other.write_text("".join(f"w{i} 1\n" for i in range(600)), encoding="utf-8")
  code, _, err = run_main(capsys, *decode, f"--vocab_path={other}")
  assert code == 1
  assert re.fullmatch(
      rf"error: --vocab_path={re.escape(str(other))} \(sha256 [0-9a-f]{{64}}\) is not the vocab "
      rf"recorded in runs/demo/run_config\.json \({re.escape(gone)}, sha256 "
      rf"{recorded['vocab_sha256']}\), with which this run's model was trained: its ids would "
      r"mean other words\. Use that vocab file, or start a new run \(another --exp_name\)",
      project_error_lines(err)[-1])


@pytest.mark.parametrize("kept", [True, False])
def test_checkpoints_kept_from_rotation_survive_a_new_manager(tmp_path, kept):
  """What an eval started in the run's other phase does with the best models already there: the
  CheckpointManager it opens (keep 3) rotates out only its own saves."""
  directory = str(tmp_path)
  checkpoint = tf.train.Checkpoint(v=tf.Variable(0.0))

  def manager():
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3,
                                      checkpoint_name="bestmodel")

  first = manager()
  for step in (1, 2, 3):
    first.save(checkpoint_number=step)
  old = [os.path.join(directory, f"bestmodel-{step}") for step in (1, 2, 3)]
  if kept:
    assert checkpoints.keep_from_rotation(directory, lambda path: path == old[1]) == [old[1]]
  second = manager()
  for step in (5, 6, 7, 8):
    second.save(checkpoint_number=step)
  on_disk = sorted(int(name[len("bestmodel-"):-len(".index")]) for name in os.listdir(directory)
                   if name.endswith(".index"))
  # Kept: bestmodel-2 and the older bestmodel-1 stay; else the new manager deletes them all.
  assert on_disk == ([1, 2, 6, 7, 8] if kept else [6, 7, 8])
  assert _state(directory) == ["bestmodel-6", "bestmodel-7", "bestmodel-8"]
