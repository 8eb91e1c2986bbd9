"""The original's two train-mode utilities, each writing the train dir's newest checkpoint.

`--convert_to_coverage_model` turns a checkpoint trained without coverage into the coverage
model; `--restore_best_model` copies eval's best model back into training. Both write what a
training run resumes from (the model's weights, a fresh Adagrad with its accumulators at
--adagrad_init_acc, the global step) and register it as the newest checkpoint in the train dir.
They must not run while a trainer runs on the directory (a running trainer rewrites the state
file from its own list and would drop the new entry): `run` holds the run's trainer lock
(run_lock) while they run.
"""

from absl import logging
import keras

from pointer_gen.base import checkpoints
from pointer_gen.base import run_lock
from pointer_gen.base.errors import DataError
from pointer_gen.data import run_record
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.training import training_state


def run(hps, vocab):
  """--convert_to_coverage_model / --restore_best_model: write one checkpoint, record the phase
  it begins in the run's record, and say what was written."""
  if hps.convert_to_coverage_model and hps.restore_best_model:
    raise DataError("--convert_to_coverage_model and --restore_best_model: give one at a time")
  with run_lock.held(hps.run_dir, "checkpoint utility"):
    if hps.convert_to_coverage_model:
      path = convert_to_coverage_model(hps, len(vocab))
      _record_phase(hps, path, "convert_to_coverage_model")
      print(f"Wrote the coverage model {path} (fresh w_c and optimizer); train on with "
            "--coverage")
    else:
      source = checkpoints.newest(hps.eval_dir)
      path = restore_best_model(hps, len(vocab))
      _record_phase(hps, path, "restore_best_model")
      if hps.coverage:
        print(f"Wrote the best model {source} (with coverage) as {path}, the newest checkpoint "
              "(fresh optimizer): training resumes from it")
      else:
        print(f"Wrote the best model {source} (without coverage) as {path}, the newest "
              "checkpoint (fresh optimizer): training resumes from it without coverage; "
              "--convert_to_coverage_model is the way back to coverage")


def _record_phase(hps, path, how):
  """The run's record follows the model a utility wrote (its coverage, the phase it begins)."""
  run_record.write(hps, run_record.recorded_num_train_steps(hps.run_dir) or 0,
                   phase_begins=(checkpoints.step_of(path), how))


def convert_to_coverage_model(hps, vocab_size):
  """Loads the newest train checkpoint, trained without coverage, into the coverage model
  (w_c fresh from its initializer, drawn from --seed when given, as the original drew it from
  its graph's fixed seed); returns the path written, `model.ckpt-<step>_cov_init`."""
  if not hps.coverage:
    raise DataError("--convert_to_coverage_model needs --coverage: it makes the coverage model "
                    "that a --coverage training run then resumes from")
  source = checkpoints.newest(hps.train_dir)
  if not source:
    raise DataError(f"--convert_to_coverage_model: no checkpoint in {hps.train_dir} to convert; "
                    "train without --coverage first")
  if hps.seed is not None:
    # w_c's draw decides much of what the coverage phase ends with on a small model (on
    # csl_titles, duplicate 3-grams of 8 to 31 % after 300 steps): a run given a seed converts
    # to the same w_c every time.
    keras.utils.set_random_seed(hps.seed)
  plain = model_lib.PointerGenerator.from_hparams(hps.replace(coverage=False), vocab_size)
  step = checkpoints.restore_weights(plain, source)
  model = model_lib.PointerGenerator.from_hparams(hps, vocab_size)
  if _restores(model, source):
    raise DataError(f"--convert_to_coverage_model: {source} already holds a coverage model; "
                    "train on with --coverage and without --convert_to_coverage_model")
  _copy_weights(plain, model)
  name = f"{checkpoints.CHECKPOINT_NAME}-{step}{checkpoints.COVERAGE_INIT_SUFFIX}"
  return _write_for_training(hps, model, step, name)


def restore_best_model(hps, vocab_size):
  """Copies the newest best model of <run>/eval into the train dir, built with hps.coverage
  (which the caller takes from that best model); returns the path written,
  `model.ckpt-<step>_best`."""
  source = checkpoints.newest(hps.eval_dir)
  if not source:
    raise DataError(f"--restore_best_model: no best model in {hps.eval_dir}; run --mode=eval "
                    "beside training first")
  model = model_lib.PointerGenerator.from_hparams(hps, vocab_size)
  step = checkpoints.restore_weights(model, source)
  name = f"{checkpoints.CHECKPOINT_NAME}-{step}{checkpoints.BEST_SUFFIX}"
  return _write_for_training(hps, model, step, name)


def _restores(model, path):
  """Whether every weight of `model` is in the checkpoint `path`."""
  try:
    checkpoints.restore_weights(model, path)
  except DataError:
    return False
  return True


def _copy_weights(source, target):
  """Assigns each weight of `target` from the `source` weight of the same path; the others
  (the coverage weights) keep their initial values."""
  weights = {v.path: v for v in source.trainable_variables}
  for variable in target.trainable_variables:
    if variable.path in weights:
      variable.assign(weights[variable.path])
    else:
      logging.info("%s starts from its initializer.", variable.path)


def _write_for_training(hps, model, step, name):
  """Writes `model` with a fresh optimizer and `step` as the state the trainer restores, and
  makes it the newest checkpoint of the train dir."""
  state = training_state.TrainingState(hps, model)
  state.step.assign(step)
  path = state.write_as_newest(hps.train_dir, name)
  logging.info("Wrote %s (step %d, fresh optimizer) as the newest checkpoint of %s.", path, step,
               hps.train_dir)
  return path
