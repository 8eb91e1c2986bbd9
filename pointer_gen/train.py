"""`--mode=train`: the training loop, checkpoints, summaries and the non-finite guard."""

import os
import signal
import time

from absl import logging
import keras
import tensorflow as tf

from pointer_gen import checkpoints
from pointer_gen import data
from pointer_gen import losses
from pointer_gen import model as model_lib
from pointer_gen import summaries


class NonFiniteError(RuntimeError):
  """A loss or gradient that is NaN or infinite; the update was not applied."""


def configure_tensorflow(debug=False):
  """Process-wide settings every mode needs; call before building anything."""
  # Grappler's memory optimiser crashes on the first full-size gradient step of a model whose
  # decoder is a tf.while_loop (AlreadyExistsError on a TemporaryVariableOp; tf2-notes.md).
  tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
  if debug:
    tf.config.run_functions_eagerly(True)
    tf.debugging.enable_check_numerics()


def make_optimizer(hps):
  # epsilon=0 gives TF1's Adagrad update exactly: the accumulator starts positive.
  return keras.optimizers.Adagrad(learning_rate=hps.lr,
                                  initial_accumulator_value=hps.adagrad_init_acc, epsilon=0.0)


def make_train_step(model, optimizer, step, hps, vocab_size):
  """A compiled step: forward, loss, ONE global-norm clip, and an update only if finite."""
  variables = model.trainable_variables

  @tf.function(input_signature=[data.batch_spec()])
  def train_step(batch):
    with tf.GradientTape() as tape:
      outputs = model(batch)
      per_example = losses.compute_losses(outputs, batch, vocab_size, hps.coverage)
      scalars = losses.batch_losses(per_example, hps.pointer_gen, hps.coverage, hps.cov_loss_wt)
    gradients = tape.gradient(scalars["total_loss"], variables)
    clipped, global_norm = tf.clip_by_global_norm(gradients, hps.max_grad_norm)
    finite = tf.math.is_finite(scalars["total_loss"]) & tf.math.is_finite(global_norm)

    def apply():
      optimizer.apply_gradients(zip(clipped, variables))
      step.assign_add(1)
      return tf.constant(True)

    tf.cond(finite, apply, lambda: tf.constant(False))
    scalars["global_norm"] = global_norm
    scalars["finite"] = finite
    if hps.pointer_gen:
      mask = tf.sequence_mask(batch["dec_len"], tf.shape(outputs["p_gen"])[1], tf.float32)
      scalars["p_gen_mean"] = tf.reduce_sum(outputs["p_gen"] * mask) / tf.reduce_sum(mask)
    return scalars

  return train_step


class _StopRequested(Exception):
  pass


def _raise_stop(signum, frame):
  del frame
  raise _StopRequested(signal.Signals(signum).name)


class Trainer:
  """Owns the model, optimizer, checkpoints and summary writer of one run's train dir."""

  def __init__(self, hps, vocab):
    self.hps = hps
    self.vocab = vocab
    if hps.seed is not None:
      keras.utils.set_random_seed(hps.seed)
    self.model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
    self.optimizer = make_optimizer(hps)
    self.optimizer.build(self.model.trainable_variables)
    self.checkpoint = checkpoints.make_checkpoint(self.model, self.optimizer)
    self.step = self.checkpoint.step
    os.makedirs(hps.train_dir, exist_ok=True)
    self.manager = tf.train.CheckpointManager(self.checkpoint, hps.train_dir,
                                              max_to_keep=checkpoints.MAX_TO_KEEP,
                                              checkpoint_name=checkpoints.CHECKPOINT_NAME)

  def restore(self):
    """Resumes from the newest checkpoint in the train dir, if any; returns its path."""
    path = self.manager.latest_checkpoint
    if path:
      self.checkpoint.restore(path).assert_existing_objects_matched()
      logging.info("Restored %s (step %d).", path, int(self.step.numpy()))
    else:
      logging.info("No checkpoint in %s: starting from fresh weights.", self.hps.train_dir)
    return path

  def save(self):
    path = self.manager.save(checkpoint_number=int(self.step.numpy()))
    logging.info("Saved checkpoint %s", path)
    return path

  def num_parameters(self):
    return sum(int(tf.size(v)) for v in self.model.trainable_variables)

  def train(self, dataset, source=None):
    """Runs until --num_train_steps, Ctrl-C or SIGTERM; saves every checkpoint_secs and at exit.

    Returns one dict of scalars per step run (step, loss, ...), for callers that report a curve.
    """
    hps = self.hps
    self.restore()
    logging.info("Trainable parameters: %d", self.num_parameters())
    logging.info("Batch size %d; writing checkpoints and TensorBoard summaries to %s",
                 hps.batch_size, hps.train_dir)
    train_step = make_train_step(self.model, self.optimizer, self.step, hps, len(self.vocab))
    writer = tf.summary.create_file_writer(hps.train_dir)
    history = []
    previous_handler = signal.signal(signal.SIGTERM, _raise_stop)
    last_save = time.time()
    try:
      iterator = iter(dataset)
      while not hps.num_train_steps or int(self.step.numpy()) < hps.num_train_steps:
        start = time.time()
        batch = next(iterator, None)
        if batch is None:
          if source is not None:
            source.raise_if_failed()
          logging.info("The training data ended.")
          break
        scalars = {k: v.numpy() for k, v in train_step(batch).items()}
        step = int(self.step.numpy())
        if not scalars["finite"]:
          raise NonFiniteError(
              f"Non-finite loss or gradient at step {step + 1} (loss {scalars['loss']}, global "
              f"norm {scalars['global_norm']}): the update was NOT applied; the newest "
              f"checkpoint in {hps.train_dir} is the last good one.")
        seconds = time.time() - start
        history.append({"step": step, **{k: float(v) for k, v in scalars.items()
                                         if k != "finite"}})
        self._log_step(writer, step, scalars, seconds)
        if time.time() - last_save >= hps.checkpoint_secs:
          self.save()
          last_save = time.time()
    except (KeyboardInterrupt, _StopRequested) as e:
      logging.info("Stopping on %s.", type(e).__name__ if isinstance(e, KeyboardInterrupt) else e)
    finally:
      signal.signal(signal.SIGTERM, previous_handler)
      writer.flush()
    self.save()
    return history

  def _log_step(self, writer, step, scalars, seconds):
    coverage = f", coverage loss {scalars['coverage_loss']:.4f}" if "coverage_loss" in scalars else ""
    logging.info("step %d: loss %.4f%s, global norm %.3f, %.3f s/step", step, scalars["loss"],
                 coverage, scalars["global_norm"], seconds)
    with writer.as_default():
      for name in ("loss", "coverage_loss", "total_loss", "global_norm", "p_gen_mean"):
        if name in scalars:
          summaries.scalar(name, scalars[name], step)
      summaries.scalar("steps_per_sec", 1.0 / max(seconds, 1e-9), step)
