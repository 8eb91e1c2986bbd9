"""Where checkpoints live and how every mode reads them.

Training writes `<run>/train/model.ckpt-<step>` (keep 3); eval writes the best model as
`<run>/eval/bestmodel-<step>` with its own `checkpoint` state file.
"""

import os
import re

from absl import logging
import tensorflow as tf

from pointer_gen.errors import DataError

CHECKPOINT_NAME = "model.ckpt"
BEST_MODEL_NAME = "bestmodel"
MAX_TO_KEEP = 3


def make_checkpoint(model, optimizer=None):
  """The object graph every mode reads and writes: model, optimizer (train), global step."""
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  kwargs = {"model": model, "step": step}
  if optimizer is not None:
    kwargs["optimizer"] = optimizer
  return tf.train.Checkpoint(**kwargs)


def newest(directory):
  """The newest checkpoint prefix recorded in `directory`'s state file, or None."""
  return tf.train.latest_checkpoint(directory) if os.path.isdir(directory) else None


def step_of(path):
  """The number at the end of a checkpoint prefix (`model.ckpt-1234` -> 1234), or None."""
  match = re.search(r"-(\d+)(?:_cov_init)?$", path)
  return int(match.group(1)) if match else None


def resolve(hps, ckpt_path=""):
  """The checkpoint a non-training mode should load: --ckpt_path, else the newest in train/."""
  if ckpt_path:
    if not tf.io.gfile.exists(ckpt_path + ".index"):
      raise DataError(f"--ckpt_path={ckpt_path}: no checkpoint with that prefix "
                      f"({ckpt_path}.index does not exist)")
    return ckpt_path
  path = newest(hps.train_dir)
  if not path:
    raise DataError(f"no checkpoint in {hps.train_dir}: train first, or pass --ckpt_path")
  return path


def restore_weights(model, path):
  """Loads the model's weights (not the optimizer) from `path`; returns the global step."""
  checkpoint = make_checkpoint(model)
  try:
    checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
  except ValueError as e:
    raise DataError(f"{path} does not fit the model built from the flags (check --vocab_size, "
                    f"--hidden_dim, --emb_dim, --pointer_gen, --coverage against the run that "
                    f"wrote it): {e}") from e
  step = int(checkpoint.step.numpy())
  logging.info("Loaded weights from %s (step %d).", path, step)
  return step
