"""`--mode=eval`: scores training checkpoints on validation data.

Beside training (the default), as the original's eval job: every new checkpoint in <run>/train
is loaded as it appears and scored on the next validation batch; the running average of the
NLL goes to TensorBoard in <run>/eval, and whenever it is the lowest so far the weights are
saved as <run>/eval/bestmodel-<step> (keep 3, eval's own state file).

An eval compares the checkpoints of one phase of the run, with coverage or without (built as the
newest train checkpoint is when it starts): it stops at the first checkpoint of the other phase
and skips the converted checkpoint (`_cov_init`), the first phase's last model with a w_c not
trained yet. Started on the other phase, it begins with a fresh best loss and never deletes the
best models the first eval kept.

With --eval_samples (by default 3), it also decodes a few validation articles at each
checkpoint and writes their summaries, attention pictures and figures to TensorBoard
(eval_samples, which the entry point hands in: decoding is a layer below this one).

With --single_pass: one checkpoint over the whole data set, in order, into
<run>/eval/metrics-<step>.json, and its figures as TensorBoard scalars `single_pass/<name>`
under the checkpoint's step.
"""

import collections
import json
import os
import typing

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.base import checkpoints
from pointer_gen.base import files
from pointer_gen.base import stopping
from pointer_gen.base import tensorboard_log
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import make_output_dir
from pointer_gen.data import batch as batch_lib
from pointer_gen.data import pipeline as data
from pointer_gen.data import run_record
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib

RUNNING_AVG_DECAY = 0.99
RUNNING_AVG_CAP = 12.0

METRIC_DEFINITIONS = {
    "mean_nll_per_example": "each example's NLL averaged over its target tokens, then averaged "
                            "over the examples: the pointer-generator's training loss",
    "mean_nll_per_token": "the NLL summed over all target tokens of the data set / their "
                          "number: the baseline's (--pointer_gen=false) training loss",
    "mean_coverage_loss": "the coverage loss averaged like mean_nll_per_example",
    "loss": "the NLL the model trains on: mean_nll_per_example, or mean_nll_per_token for "
            "the baseline",
}


def running_avg_loss(loss, running_avg, decay=RUNNING_AVG_DECAY):
  """The original's calc_running_avg_loss: a running average of 0 means "no value yet", so
  the first loss is taken as it is; the result is capped at 12."""
  running_avg = loss if running_avg == 0 else running_avg * decay + (1 - decay) * loss
  return min(running_avg, RUNNING_AVG_CAP)


class BestModelSelector:
  """The running-average validation NLL and whether it is the lowest so far."""

  def __init__(self, decay=RUNNING_AVG_DECAY):
    self.decay = decay
    self.running_avg = 0.0
    self.best = None

  def update(self, loss):
    """Adds one batch's NLL; True when the running average is now the lowest seen."""
    self.running_avg = running_avg_loss(loss, self.running_avg, self.decay)
    if self.best is not None and self.running_avg >= self.best:
      return False
    self.best = self.running_avg
    return True


def make_score_fn(model, hps, vocab_size):
  """The compiled forward pass and losses of one batch: (losses.PerExample, losses.BatchLosses)."""
  implementation = attention.chosen(hps, "train")

  @tf.function(autograph=False, input_signature=[batch_lib.spec()])
  def score(batch):
    outputs = model(batch, real_steps_only=True, implementation=implementation)
    per_example = losses.compute_losses(outputs, batch, vocab_size, hps.coverage)  # each [B]
    scalars = losses.batch_losses(per_example, hps.pointer_gen, hps.coverage, hps.cov_loss_wt)
    return per_example, scalars

  return score


class ConcurrentEvaluator:
  """The eval job beside a trainer on the same run directory.

  samples: None, or a class (eval_samples.Samples) made as samples(hps, vocab, model) when
  --eval_samples > 0, whose write(step, writer) adds each checkpoint's samples.
  """

  def __init__(self, hps, vocab, samples=None):
    self.hps = hps
    checkpoints.wait_for_train_dir(hps)
    self.model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
    self.score = make_score_fn(self.model, hps, len(vocab))
    self.samples = samples(hps, vocab, self.model) if samples and hps.eval_samples else None
    self.selector = BestModelSelector()
    self.source, self.dataset = data.input_pipeline(hps, vocab, single_pass=False)
    # Model and step only: the best model is for decoding or for restore_best_model, which
    # gives it a fresh optimizer.
    best = checkpoints.make_checkpoint(self.model)
    self.best_step = best.step
    make_output_dir(hps.eval_dir)
    kept = checkpoints.keep_from_rotation(
        hps.eval_dir, lambda path: _coverage_of(path) not in (None, hps.coverage))
    if kept:
      logging.info("Keeping the best models of the run's phase %s coverage (%s): this eval "
                   "compares checkpoints %s coverage, with a fresh best loss, and saves its best "
                   "models beside them.", _with(not hps.coverage), ", ".join(kept),
                   _with(hps.coverage))
    self.best_manager = tf.train.CheckpointManager(
        best, hps.eval_dir, max_to_keep=checkpoints.MAX_TO_KEEP,
        checkpoint_name=checkpoints.BEST_MODEL_NAME)
    self.num_scored = 0
    self._batches = None

  def run(self):
    """Scores each new train checkpoint until Ctrl-C, SIGTERM, --eval_max_checkpoints or the
    checkpoint of the step the trainer stops at (`_final_step`); returns the number scored."""
    hps = self.hps
    writer = tf.summary.create_file_writer(hps.eval_dir)
    # Kept until the evaluator goes: tearing it down waits for the input pipeline's threads.
    self._batches = batches = iter(self.dataset)
    last_path = None
    with stopping.until_stopped():
      try:
        while not stopping.requested() and (
            not hps.eval_max_checkpoints or self.num_scored < hps.eval_max_checkpoints):
          path = self._wait_for_new_checkpoint(last_path)
          if path is None:  # stopped
            break
          last_path = path
          if _coverage_of(path) not in (None, hps.coverage):
            logging.info("%s is a checkpoint %s coverage, of the run's other phase: this eval "
                         "compared the checkpoints %s coverage and stops; start eval again for "
                         "the new phase.", path, _with(not hps.coverage), _with(hps.coverage))
            break
          if path.endswith(checkpoints.COVERAGE_INIT_SUFFIX):
            logging.info("Skipping %s, the first phase's model with w_c not trained yet; "
                         "waiting for the coverage phase's first checkpoint.", path)
            continue
          step = self._load(path)
          if step is None or stopping.requested():
            continue  # a checkpoint deleted under us; or a stop, which ends the loop
          self._score_checkpoint(step, batches, writer)
          self.num_scored += 1
          final_step = self._final_step()
          if final_step and step >= final_step:
            logging.info("Scored the checkpoint of step %d: the trainer stops at step %d "
                         "(num_train_steps in %s); stopping.", step, final_step,
                         run_record.path_in(hps.run_dir))
            break
      finally:
        with stopping.critical():
          writer.flush()
    return self.num_scored

  def _final_step(self):
    """The step the trainer stops at (0: until stopped), as it recorded it, read afresh: the
    record is the trainer's, which may have been restarted with another --num_train_steps since,
    and a --num_train_steps given to eval (a flagfile shared with the trainer, say) may be
    stale. Without a record, eval's own --num_train_steps."""
    recorded = run_record.recorded_num_train_steps(self.hps.run_dir)
    return self.hps.num_train_steps if recorded is None else recorded

  def _wait_for_new_checkpoint(self, last_path):
    """The newest train checkpoint once it differs from `last_path`; None on a stop.

    Only the newest is ever loaded: the trainer may write several between two looks, and
    scoring older ones would only fall further behind.
    """
    logged = False
    while True:
      path = checkpoints.newest(self.hps.train_dir)
      if path and path != last_path:
        return path
      if not logged:
        logging.info("Waiting for a %scheckpoint in %s (looking every %g s).",
                     "new " if last_path else "", self.hps.train_dir, self.hps.eval_poll_secs)
        logged = True
      if stopping.wait(self.hps.eval_poll_secs):
        return None

  def _load(self, path):
    """Restores `path` into the model; None if the trainer deleted it under us."""
    try:
      return checkpoints.restore_weights(self.model, path)
    except (tf.errors.OpError, DataError) as e:
      # The trainer keeps 3 checkpoints: one listed as newest can be deleted before or while it
      # is read (NotFoundError without its .index; a bare OpError without its .data file).
      # A model that does not fit a checkpoint still there is the user's error, not a race.
      if isinstance(e, DataError) and tf.io.gfile.exists(path + ".index"):
        raise
      logging.warning("Skipping %s, which could not be read (%s): the trainer probably deleted "
                      "it while rotating its checkpoints.", path, str(e).splitlines()[0])
      return None

  def _score_checkpoint(self, step, batches, writer):
    hps = self.hps
    new_best = False
    scored = []  # (loss, coverage loss) of each batch
    for _ in range(hps.eval_batches_per_checkpoint):
      batch = next(batches, None)
      if batch is None:
        self.source.raise_if_failed()
        raise DataError(f"--data_path={hps.data_path}: the validation data ended")
      _, scalars = self.score(batch)
      loss = float(scalars.loss)
      # Selection uses the NLL alone, as the original's: it stays comparable across
      # convert_to_coverage_model, after which the coverage term appears.
      new_best |= self.selector.update(loss)
      with writer.as_default():
        tensorboard_log.scalar("loss", loss, step)
        tensorboard_log.scalar("running_avg_loss", self.selector.running_avg, step)
        if hps.coverage:
          tensorboard_log.scalar("coverage_loss", scalars.coverage_loss, step)
      scored.append((loss, float(scalars.coverage_loss) if hps.coverage else 0.0))
      if stopping.requested():
        break
    if self.samples and not stopping.requested():
      self.samples.write(step, writer)
    writer.flush()
    self._log_scored(step, scored)
    if new_best:
      self.best_step.assign(step)
      with stopping.critical():
        path = self.best_manager.save(checkpoint_number=step)
      logging.info("New best model (running average loss %.4f): saved %s", self.selector.best,
                   path)

  def _log_scored(self, step, scored):
    """One line per checkpoint: the mean losses of its batches and the running average after
    them."""
    loss, coverage_loss = np.mean(scored, axis=0)
    coverage = f", coverage loss {coverage_loss:.4f}" if self.hps.coverage else ""
    means = f" (means of {len(scored)} batches)" if len(scored) > 1 else ""
    logging.info("eval step %d: loss %.4f%s%s, running average %.4f (best %.4f)", step, loss,
                 coverage, means, self.selector.running_avg, self.selector.best)


def _coverage_of(path):
  """Whether the checkpoint `path` has coverage; None if it cannot be read (the trainer may be
  deleting it)."""
  try:
    return checkpoints.has_coverage(path)
  except tf.errors.OpError:
    return None


def _with(coverage):
  return "with" if coverage else "without"


class SinglePassMetrics(typing.NamedTuple):
  """What a single-pass eval wrote: the metrics JSON's path and its contents."""
  path: str
  metrics: dict


def run_single_pass(hps, vocab):
  """Scores one checkpoint (--ckpt_path or the newest) on the whole data set once, in order.

  Returns its SinglePassMetrics, or None if Ctrl-C or SIGTERM stopped it first (nothing is
  written then).
  """
  ckpt_path = checkpoints.resolve(hps, hps.ckpt_path)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  step = checkpoints.restore_weights(model, ckpt_path)
  score = make_score_fn(model, hps, len(vocab))
  source, dataset = data.input_pipeline(hps, vocab, single_pass=True)
  # Sums over the data set in float64, so that the means do not depend on the batching.
  totals = collections.defaultdict(float)
  num_examples = 0
  with stopping.until_stopped():
    for batch in dataset:
      if stopping.requested():
        return None
      per_example, _ = score(batch)
      for name, values in per_example._asdict().items():
        if values is not None:
          totals[name] += float(np.sum(values.numpy(), dtype=np.float64))
      num_examples += int(per_example.nll.shape[0])
  source.raise_if_failed()
  if not num_examples:
    raise DataError(f"--data_path={hps.data_path}: no example to evaluate")
  result = {
      "checkpoint": ckpt_path,
      "step": step,
      "data_path": hps.data_path,
      "precision": hps.precision,
      "attention_implementation": attention.chosen(hps, "train").name,
      "num_examples": num_examples,
      "num_target_tokens": int(totals["tokens"]),
      "mean_nll_per_example": totals["nll"] / num_examples,
      "mean_nll_per_token": totals["nll_tokens"] / totals["tokens"],
  }
  result["loss"] = result["mean_nll_per_example" if hps.pointer_gen else "mean_nll_per_token"]
  if hps.coverage:
    result["mean_coverage_loss"] = totals["coverage_loss"] / num_examples
  result["definitions"] = {k: v for k, v in METRIC_DEFINITIONS.items() if k in result}
  make_output_dir(hps.eval_dir)
  writer = tf.summary.create_file_writer(hps.eval_dir)
  with stopping.critical():
    with writer.as_default():
      for name in METRIC_DEFINITIONS:
        if name in result:
          tensorboard_log.scalar(f"single_pass/{name}", result[name], step)
    writer.close()
  path = os.path.join(hps.eval_dir, f"metrics-{step}.json")
  files.write_text_atomic(path, json.dumps(result, indent=2) + "\n")
  logging.info("Scored %s on %d examples (%d target tokens): loss %.4f; written to %s",
               ckpt_path, num_examples, result["num_target_tokens"], result["loss"], path)
  return SinglePassMetrics(path, result)


def run(hps, vocab, samples=None):
  """`--mode=eval`: one checkpoint with --single_pass, else beside the trainer until it stops
  (with `samples`, see ConcurrentEvaluator); prints what it scored."""
  if hps.single_pass:
    scored = run_single_pass(hps, vocab)
    if scored is None:  # stopped by Ctrl-C or SIGTERM
      return
    metrics = scored.metrics
    print(f"{metrics['checkpoint']}: loss {metrics['loss']:.4f} over {metrics['num_examples']} "
          f"examples ({metrics['num_target_tokens']} target tokens); metrics in {scored.path}")
    return
  evaluator = ConcurrentEvaluator(hps, vocab, samples)
  scored = evaluator.run()
  best = evaluator.best_manager.latest_checkpoint
  print(f"Scored {scored} checkpoint{'' if scored == 1 else 's'}; best model: "
        f"{best or 'none saved'}")
  # Before the evaluator goes: tearing down its input pipeline would take seconds.
  stopping.exit_if_requested()
