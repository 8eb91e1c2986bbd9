"""The training state: the model, its Adagrad and the global step, as the one object graph a
training checkpoint holds, and the upkeep of the train dir that such checkpoints are saved in.

The trainer saves it every --checkpoint_secs; the two train-mode utilities (train_utilities) and
the TF1 conversion (tf1_checkpoint) write one for a training run to resume from. Every other mode
reads the model's part alone (checkpoints.restore_weights).
"""

import os

from absl import logging
import keras
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.model import pointer_generator as model_lib


def make_optimizer(hps):
  # epsilon=0 gives TF1's Adagrad update exactly: the accumulator starts positive.
  return keras.optimizers.Adagrad(learning_rate=hps.lr,
                                  initial_accumulator_value=hps.adagrad_init_acc, epsilon=0.0)


class TrainingState:
  """`model` with a fresh Adagrad built on its trainable variables (accumulators at
  --adagrad_init_acc) and the global step at 0, tracked together as `checkpoint`
  (checkpoints.make_checkpoint). Under a distribution strategy, make it in the strategy's scope.
  """

  def __init__(self, hps, model):
    self.model = model
    self.optimizer = make_optimizer(hps)
    self.optimizer.build(model.trainable_variables)
    self.checkpoint = checkpoints.make_checkpoint(model, self.optimizer)
    self.step = self.checkpoint.step

  @classmethod
  def from_hparams(cls, hps, vocab_size):
    """With a fresh model built from `hps`."""
    return cls(hps, model_lib.PointerGenerator.from_hparams(hps, vocab_size))

  def manager(self, directory):
    """The manager that saves the state into `directory` as `model.ckpt-<step>`, listing each
    save in the directory's state file and deleting all but the newest MAX_TO_KEEP."""
    return tf.train.CheckpointManager(self.checkpoint, directory,
                                      max_to_keep=checkpoints.MAX_TO_KEEP,
                                      checkpoint_name=checkpoints.CHECKPOINT_NAME)

  def restore(self, path):
    """Restores every object of the state from the checkpoint `path`; returns its step. A
    checkpoint that does not fit raises DataError."""
    # The model alone first, through a checkpoint object of its own: one that does not fit
    # fails there with nothing printed after the error (see checkpoints.restore).
    checkpoints.restore_weights(self.model, path)
    return checkpoints.restore(self.checkpoint, path)

  def write_as_newest(self, directory, name):
    """Writes the state as `directory`/`name`, outside the managers' numbering, and records it
    as the directory's newest checkpoint; returns its path."""
    # restore() requires every object of the state to be in the file. save_counter is one of
    # them (CheckpointManager.save creates it); Checkpoint.write does not create it.
    self.checkpoint.save_counter.assign(0)
    os.makedirs(directory, exist_ok=True)
    path = self.checkpoint.write(os.path.join(directory, name))
    checkpoints.register_newest(directory, path)
    return path


def remove_cut_off_saves(directory):
  """Deletes what saves cut off by a crash or a full disk left in the train dir `directory`,
  each file up to a whole model's size. TF writes a checkpoint into `<prefix>_temp/`, renames
  the data file, writes the .index in place and only then lists it in the state file (itself
  written to a temporary name and renamed); call it only while no save is in progress.
  """
  state = tf.train.get_checkpoint_state(directory)
  listed = {os.path.abspath(p) for p in state.all_model_checkpoint_paths} if state else set()
  pattern = os.path.join(directory, f"{checkpoints.CHECKPOINT_NAME}-*")
  debris = tf.io.gfile.glob(pattern + "_temp") + tf.io.gfile.glob(
      os.path.join(directory, "checkpoint.tmp*"))
  prefixes = {p.split(".data-")[0] for p in tf.io.gfile.glob(pattern + ".data-*")}
  prefixes |= {p[:-len(".index")] for p in tf.io.gfile.glob(pattern + ".index")}
  for prefix in sorted(p for p in prefixes if os.path.abspath(p) not in listed):
    try:
      tf.train.load_checkpoint(prefix)
    except tf.errors.OpError:
      debris += tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*")
  for path in debris:
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
    else:
      tf.io.gfile.remove(path)
    logging.info("Removed %s, left by a save that was cut off.", path)
