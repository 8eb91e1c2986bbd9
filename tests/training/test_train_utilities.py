"""--convert_to_coverage_model and --restore_best_model: what they write, and that training
resumes from it at the right step with the right weights and a fresh optimizer."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import run_record
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate
from pointer_gen.training import train
from pointer_gen.training import train_utilities

from helpers import run_main, tiny_flags, tiny_hparams

ADAGRAD_INIT_ACC = 0.1
# The fixture trains to step 3, lets eval pick its best model there, then moves on to step 6.
BEST_STEP, NEWEST_STEP = 3, 6


def _train(hps, vocab, steps):
  """Trains to global step `steps`; returns the steps the run went through."""
  trainer = train.Trainer(hps.replace(num_train_steps=steps), vocab)
  return [row["step"] for row in trainer.train()]


# The run's flags besides the tiny run's (helpers.TINY_RUN).
CHANGES = {"min_dec_steps": 2, "adagrad_init_acc": ADAGRAD_INIT_ACC, "seed": 5}


@pytest.fixture(scope="module")
def trained(demo_corpus, tmp_path_factory):
  """A run whose eval best model (step 3) is older than its newest train checkpoint (step 6)."""
  corpus = demo_corpus
  hps = tiny_hparams(corpus, tmp_path_factory.mktemp("utils"), checkpoint_secs=1000, **CHANGES)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  assert _train(hps, vocab, BEST_STEP) == [1, 2, 3]
  # Eval stops by itself once it has scored the checkpoint of step --num_train_steps.
  eval_hps = hps.replace(mode="eval", data_path=corpus["val"], num_train_steps=BEST_STEP)
  assert evaluate.ConcurrentEvaluator(eval_hps, vocab).run() == 1
  # Training going on to step 6, in short: moved weights saved by the trainer's own manager
  # (a second training run would spend seconds compiling its step).
  trainer = train.Trainer(hps, vocab)
  trainer.restore()
  for variable in trainer.model.trainable_variables:
    variable.assign_add(tf.fill(variable.shape, 0.01))
  trainer.step.assign(NEWEST_STEP)
  trainer.save()
  return hps, vocab, corpus


def _copy_run(hps, tmp_path):
  """The fixture's run directory under a fresh log root, so a test may change it."""
  shutil.copytree(hps.run_dir, tmp_path / "run")
  return hps.replace(log_root=str(tmp_path))


def _weights(hps, vocab_size, path):
  """{variable path: value} of the model built from `hps`, restored from `path`."""
  model = model_lib.PointerGenerator.from_hparams(hps, vocab_size)
  checkpoints.restore_weights(model, path)
  return {v.path: v.numpy() for v in model.trainable_variables}


def _accumulators(path):
  """The Adagrad accumulators stored in a checkpoint (its optimizer's `_variables`)."""
  reader = tf.train.load_checkpoint(path)
  return [reader.get_tensor(key) for key in reader.get_variable_to_shape_map()
          if key.startswith("optimizer/_variables/")]


def _state(directory):
  state = tf.train.get_checkpoint_state(directory)
  return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


def _prefixes_on_disk(directory):
  """Checkpoint prefixes in `directory`, in step order."""
  return sorted((name[:-len(".index")] for name in os.listdir(directory)
                 if name.endswith(".index")), key=lambda name: (checkpoints.step_of(name), name))


def test_convert_then_coverage_training_resumes_from_the_converted_model(trained, tmp_path):
  hps, vocab, _ = trained
  hps = _copy_run(hps, tmp_path).replace(coverage=True)
  source = os.path.join(hps.train_dir, f"model.ckpt-{NEWEST_STEP}")
  path = train_utilities.convert_to_coverage_model(hps, len(vocab))

  assert path == os.path.join(hps.train_dir, f"model.ckpt-{NEWEST_STEP}_cov_init")
  assert checkpoints.newest(hps.train_dir) == path
  assert _state(hps.train_dir) == [f"model.ckpt-{BEST_STEP}", f"model.ckpt-{NEWEST_STEP}",
                                   f"model.ckpt-{NEWEST_STEP}_cov_init"]
  # Every weight of the source is carried over unchanged; w_c is the only new one.
  old = _weights(hps.replace(coverage=False), len(vocab), source)
  new = _weights(hps, len(vocab), path)
  assert set(new) - set(old) == {"decoder/attention/w_c"}
  for name, value in old.items():
    np.testing.assert_array_equal(new[name], value, err_msg=name)
  assert new["decoder/attention/w_c"].shape == (1, 2 * hps.hidden_dim)
  assert np.any(new["decoder/attention/w_c"] != 0)
  # The optimizer starts afresh: one accumulator per weight, w_c's included, all at the
  # initial value, where the source's had moved.
  fresh = _accumulators(path)
  assert len(fresh) == len(new)
  assert all(np.all(a == np.float32(ADAGRAD_INIT_ACC)) for a in fresh)
  assert not all(np.all(a == np.float32(ADAGRAD_INIT_ACC)) for a in _accumulators(source))

  # What a --coverage training run does first: the trainer picks the converted model up.
  trainer = train.Trainer(hps, vocab)
  assert trainer.restore() == path
  assert int(trainer.step.numpy()) == NEWEST_STEP
  assert all(np.all(v.numpy() == np.float32(ADAGRAD_INIT_ACC))
             for v in trainer.optimizer.variables if "accumulator" in v.path)
  # Training with coverage goes on from that step and saves as usual.
  assert _train(hps, vocab, NEWEST_STEP + 2) == [NEWEST_STEP + 1, NEWEST_STEP + 2]
  assert checkpoints.newest(hps.train_dir).endswith(f"model.ckpt-{NEWEST_STEP + 2}")
  # The trainer's rotation (keep 3) goes on and reaches the converted checkpoint too.
  assert _prefixes_on_disk(hps.train_dir) == _state(hps.train_dir) == [
      f"model.ckpt-{NEWEST_STEP}", f"model.ckpt-{NEWEST_STEP}_cov_init",
      f"model.ckpt-{NEWEST_STEP + 2}"]
  trainer = train.Trainer(hps, vocab)
  trainer.restore()
  for _ in range(2):
    trainer.step.assign_add(1)
    trainer.save()
  assert _prefixes_on_disk(hps.train_dir) == _state(hps.train_dir) == [
      f"model.ckpt-{NEWEST_STEP + 2}", f"model.ckpt-{NEWEST_STEP + 3}",
      f"model.ckpt-{NEWEST_STEP + 4}"]


def test_conversion_draws_w_c_from_the_seed(trained, tmp_path):
  """A run given --seed converts to the same w_c every time (as the original's graph seed did):
  on a small model its draw decides much of what the coverage phase ends with."""
  hps, vocab, _ = trained
  w_c = {}
  for name, seed in (("a", 5), ("b", 5), ("c", 6)):
    copy = _copy_run(hps, tmp_path / name).replace(coverage=True, seed=seed)
    path = train_utilities.convert_to_coverage_model(copy, len(vocab))
    w_c[name] = _weights(copy, len(vocab), path)["decoder/attention/w_c"]
  np.testing.assert_array_equal(w_c["a"], w_c["b"])
  assert np.any(w_c["a"] != w_c["c"])


def test_restore_best_model_gives_training_the_best_weights_and_step(trained, tmp_path):
  hps, vocab, _ = trained
  hps = _copy_run(hps, tmp_path)
  best = os.path.join(hps.eval_dir, f"bestmodel-{BEST_STEP}")
  assert checkpoints.newest(hps.eval_dir) == best
  path = train_utilities.restore_best_model(hps, len(vocab))

  assert path == os.path.join(hps.train_dir, f"model.ckpt-{BEST_STEP}_best")
  assert checkpoints.newest(hps.train_dir) == path
  assert _prefixes_on_disk(hps.eval_dir) == [f"bestmodel-{BEST_STEP}"]
  best_weights = _weights(hps, len(vocab), best)
  restored = _weights(hps, len(vocab), path)
  newest = _weights(hps, len(vocab), os.path.join(hps.train_dir, f"model.ckpt-{NEWEST_STEP}"))
  for name, value in best_weights.items():
    np.testing.assert_array_equal(restored[name], value, err_msg=name)
  assert any(np.any(newest[name] != value) for name, value in best_weights.items())
  assert all(np.all(a == np.float32(ADAGRAD_INIT_ACC)) for a in _accumulators(path))

  # What a training run does first (the convert test trains on from there as well).
  trainer = train.Trainer(hps, vocab)
  assert trainer.restore() == path
  assert int(trainer.step.numpy()) == BEST_STEP
  for variable in trainer.model.trainable_variables:
    np.testing.assert_array_equal(variable.numpy(), best_weights[variable.path])
  assert all(np.all(v.numpy() == np.float32(ADAGRAD_INIT_ACC))
             for v in trainer.optimizer.variables if "accumulator" in v.path)


def test_utilities_refuse_what_they_cannot_do(trained, tmp_path):
  hps, vocab, _ = trained
  converted = _copy_run(hps, tmp_path).replace(coverage=True)
  train_utilities.convert_to_coverage_model(converted, len(vocab))
  with pytest.raises(DataError, match="already holds a coverage model"):
    train_utilities.convert_to_coverage_model(converted, len(vocab))
  # A best model of another shape is named with the flags to check.
  with pytest.raises(DataError, match="--hidden_dim"):
    train_utilities.restore_best_model(hps.replace(log_root=str(tmp_path), hidden_dim=16),
                                        len(vocab))


@pytest.mark.slow
def test_command_line_errors_and_success(trained, tmp_path, capsys):
  hps, _, corpus = trained
  common = [f"--data_path={corpus['train']}", f"--vocab_path={corpus['vocab']}",
            *tiny_flags(**CHANGES), "--mode=train"]
  copied = _copy_run(hps, tmp_path / "copied")
  empty = tmp_path / "empty"

  code, _, err = run_main(capsys, *common, f"--log_root={copied.log_root}",
                       "--convert_to_coverage_model")
  assert code == 1 and "error: --convert_to_coverage_model needs --coverage" in err
  code, _, err = run_main(capsys, *common, f"--log_root={empty}", "--coverage",
                       "--convert_to_coverage_model")
  assert code == 1 and f"no checkpoint in {empty / 'run' / 'train'} to convert" in err
  code, _, err = run_main(capsys, *common, f"--log_root={empty}", "--restore_best_model")
  assert code == 1 and f"--restore_best_model: no best model in {empty / 'run' / 'eval'}" in err
  code, _, err = run_main(capsys, *common, f"--log_root={copied.log_root}", "--mode=eval",
                       "--restore_best_model")
  assert code == 1 and "work with --mode=train, not --mode=eval" in err
  assert not os.path.exists(empty / "run" / "train" / "checkpoint")

  # The coverage conversion records coverage in the run's run_config.json (here a run from
  # before that file: written whole), so that later modes build the coverage model unasked.
  code, out, err = run_main(capsys, *common, f"--log_root={copied.log_root}", "--coverage",
                            "--convert_to_coverage_model")
  assert code == 0, err
  recorded = run_record.read(copied.run_dir)
  assert (recorded.settings["coverage"], recorded.settings["hidden_dim"],
          recorded.settings["max_enc_steps"]) == (True, 8, 40)
  # The run had no record: where its first phase began is not known.
  assert recorded.phases == (
      run_record.Phase(coverage=True, from_step=NEWEST_STEP, by="convert_to_coverage_model"),)

  # Eval's best model was saved before the conversion: restored without coverage, although the
  # run is in its coverage phase; a --coverage that contradicts it names both.
  best = os.path.join(copied.eval_dir, f"bestmodel-{BEST_STEP}")
  code, _, err = run_main(capsys, *common, f"--log_root={copied.log_root}",
                          "--restore_best_model", "--coverage")
  assert code == 1
  assert f"error: --coverage=true conflicts with the checkpoint {best}, which has no " in err
  converted = checkpoints.newest(copied.train_dir)
  assert converted.endswith(f"model.ckpt-{NEWEST_STEP}_cov_init")
  code, out, err = run_main(capsys, *common, f"--log_root={copied.log_root}",
                            "--restore_best_model")
  written = os.path.join(copied.train_dir, f"model.ckpt-{BEST_STEP}_best")
  assert code == 0, err
  assert out.splitlines()[-1] == (
      f"Wrote the best model {best} (without coverage) as {written}, the newest checkpoint "
      "(fresh optimizer): training resumes from it without coverage; "
      "--convert_to_coverage_model is the way back to coverage")
  assert checkpoints.newest(copied.train_dir) == written
  assert not checkpoints.has_coverage(written) and checkpoints.has_coverage(converted)
  recorded = run_record.read(copied.run_dir)
  assert recorded.settings["coverage"] is False
  assert recorded.phases[1:] == (
      run_record.Phase(coverage=False, from_step=BEST_STEP, by="restore_best_model"),)

  # And back to coverage, from the restored model.
  code, out, err = run_main(capsys, *common, f"--log_root={copied.log_root}", "--coverage",
                            "--convert_to_coverage_model")
  assert code == 0, err
  assert checkpoints.newest(copied.train_dir) == os.path.join(
      copied.train_dir, f"model.ckpt-{BEST_STEP}_cov_init")
  assert run_record.read(copied.run_dir).phases[2:] == (
      run_record.Phase(coverage=True, from_step=BEST_STEP, by="convert_to_coverage_model"),)
