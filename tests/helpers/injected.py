"""Faults and pauses put into the library from the tests' side, each by wrapping one of its
functions, so that the library carries no hook for them: a NaN loss at a chosen training step
(the non-finite guard), and eval held at a chosen moment, as a long TensorFlow call would hold
it (a stop that must land there).

Each takes `patch`, the setattr that installs a wrapper: a test's `monkeypatch.setattr` (undone
after the test) in the test's process, plain `setattr` in a process of its own
(patched_run.py)."""

import time

from absl import logging
import tensorflow as tf

from pointer_gen.model import losses
from pointer_gen.training import evaluate
from pointer_gen.training import train

# Where eval may be held: before a checkpoint's restore, before a batch is scored, and inside
# the best model's save (in stopping.critical(), which a forced exit waits for).
EVAL_MOMENTS = ("load", "score", "save_best")


def nonfinite_loss_at(global_step, patch=setattr):
  """Makes the training step that would reach `global_step` compute a NaN loss (hence NaN
  gradients), once: a skipped batch does not advance the step, so a fault keyed on the step
  alone would poison every later batch too, and --skip_nonfinite_batches would never end."""
  make_train_step = train.make_train_step
  batch_losses = losses.batch_losses

  def poisoned_step(model, optimizer, step, hps, vocab_size, strategy=None, jit_compile=False):
    strategy_in_use = strategy or tf.distribute.get_strategy()
    with strategy_in_use.scope():
      fired = tf.Variable(False, trainable=False,
                          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

    def poisoned_losses(*args, **kwargs):
      scalars = batch_losses(*args, **kwargs)
      poison = tf.equal(step + 1, global_step) & tf.logical_not(fired)  # scalar
      fired.assign(fired | poison)
      # Times 1.0 at every other step: their losses and updates stay bit for bit a clean run's.
      return scalars._replace(total_loss=scalars.total_loss * tf.where(poison, float("nan"), 1.0))

    # The step looks the function up when it is traced, after this returns.
    patch(losses, "batch_losses", poisoned_losses)
    return make_train_step(model, optimizer, step, hps, vocab_size, strategy, jit_compile)

  patch(train, "make_train_step", poisoned_step)


def pause_eval_at(moment, seconds, patch=setattr):
  """Holds `--mode=eval` beside training `seconds` at `moment` (one of EVAL_MOMENTS), after
  logging `Testing: pausing at <moment>.`, the line a test waits for before it signals."""
  if moment not in EVAL_MOMENTS:
    raise ValueError(f"{moment!r}: expected one of {EVAL_MOMENTS}")

  def pause():
    logging.info("Testing: pausing at %s.", moment)
    time.sleep(seconds)

  evaluator = evaluate.ConcurrentEvaluator
  if moment == "load":
    load = evaluator._load  # pylint: disable=protected-access

    def paused_load(self, path):
      pause()
      return load(self, path)

    patch(evaluator, "_load", paused_load)
  elif moment == "score":
    make_score_fn = evaluate.make_score_fn

    def paused_score_fn(*args, **kwargs):
      score = make_score_fn(*args, **kwargs)

      def paused_score(batch):
        pause()
        return score(batch)

      return paused_score

    patch(evaluate, "make_score_fn", paused_score_fn)
  else:
    init = evaluator.__init__

    def paused_init(self, *args, **kwargs):
      init(self, *args, **kwargs)
      save = self.best_manager.save

      def paused_save(*save_args, **save_kwargs):
        pause()
        return save(*save_args, **save_kwargs)

      self.best_manager.save = paused_save

    patch(evaluator, "__init__", paused_init)
