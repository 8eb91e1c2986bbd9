"""`--mode=train`: the training loop, its saves, summaries and the non-finite guard; the mode's
`run` holds the run's trainer lock and keeps its run_config.json."""

import contextlib
import datetime
import os
import shutil
import time

from absl import logging
import keras
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.base import checkpoints
from pointer_gen.base import distribute
from pointer_gen.base import files
from pointer_gen.base import run_lock
from pointer_gen.base import stopping
from pointer_gen.base import tensorboard_log
from pointer_gen.base.errors import OutputError
from pointer_gen.data import pipeline as data
from pointer_gen.data.batch import Batch
from pointer_gen.data import run_record
from pointer_gen.model import losses
from pointer_gen.search import decoding_defaults
from pointer_gen.training import training_state


class NonFiniteError(RuntimeError):
  """A loss or gradient that is NaN or infinite; the update was not applied."""


def _all_reduce_sum(value):
  """Sum over the replicas of the current step (identity with one device)."""
  return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, value)


def _token_rows_squared(gradients):
  """The sum of the squares of the IndexedSlices gradients' rows (the embedding's: one row per
  looked-up token, repeated words not summed), a scalar."""
  rows = [tf.reduce_sum(tf.square(g.values)) for g in gradients if isinstance(g, tf.IndexedSlices)]
  return tf.add_n(rows) if rows else tf.constant(0.0)


def clipping_norm(tape_gradients, gradients, token_rows_squared, clip_norm):
  """The global norm that --max_grad_norm clips with, logged as `global_norm`.

  `true`: the norm of the summed, dense `gradients`. `original`: the norm the original's graph
  clips with, where tf.clip_by_global_norm squares tf.gradients' raw output: the embedding's
  gradient there is an IndexedSlices with one row per looked-up token (article and summary), so
  its share is `token_rows_squared` (the rows' squares, repeated words not summed); every other
  variable's share is as in `true`. `tape_gradients` tells which gradients are IndexedSlices.
  """
  if clip_norm == "true":
    return tf.linalg.global_norm(gradients)
  dense = [tf.reduce_sum(tf.square(g)) for g, raw in zip(gradients, tape_gradients)
           if not isinstance(raw, tf.IndexedSlices)]
  return tf.sqrt(tf.add_n(dense + [token_rows_squared]))


def make_train_step(model, optimizer, step, hps, vocab_size, strategy=None, jit_compile=False):
  """A compiled step over a distributed iterator: forward, loss normalised over the GLOBAL
  batch, gradients summed over replicas, ONE global-norm clip, and an update only if the loss
  and the gradients are finite (else a zero gradient, which leaves Adagrad's weights and
  accumulators exactly as they were, on every replica alike)."""
  strategy = strategy or tf.distribute.get_strategy()
  # A TPU compiles every step with XLA, whether or not jit_compile asks for it.
  for_xla = jit_compile or isinstance(strategy, tf.distribute.TPUStrategy)
  variables = model.trainable_variables
  replicas = strategy.num_replicas_in_sync
  implementation = attention.chosen(hps, "train")

  def replica_step(batch):
    num_examples = _all_reduce_sum(tf.shape(batch.dec_len)[0])
    with tf.GradientTape() as tape:
      outputs = model(batch, real_steps_only=True, for_xla=for_xla,
                      implementation=implementation)
      per_example = losses.compute_losses(outputs, batch, vocab_size, hps.coverage)
      num_tokens = _all_reduce_sum(tf.reduce_sum(per_example.tokens))
      scalars = losses.batch_losses(per_example, hps.pointer_gen, hps.coverage, hps.cov_loss_wt,
                                    num_examples, num_tokens)
      total = scalars.total_loss
    tape_gradients = tape.gradient(total, variables)
    # The embedding gradient's per-token rows (see clipping_norm) exist only here, each on its
    # replica: the sum of their squares rides in the gradients' one all-reduce.
    *gradients, token_rows_squared = _all_reduce_sum(
        [tf.convert_to_tensor(g) for g in tape_gradients] + [_token_rows_squared(tape_gradients)])
    global_norm = clipping_norm(tape_gradients, gradients, token_rows_squared, hps.clip_norm)
    clipped, _ = tf.clip_by_global_norm(gradients, hps.max_grad_norm, use_norm=global_norm)
    total_loss = _all_reduce_sum(total)
    finite = tf.math.is_finite(total_loss) & tf.math.is_finite(global_norm)
    # Keras sums gradients over replicas again inside apply_gradients: hand it 1/replicas of
    # the already summed, clipped gradient. (One device: no division, a pass over every
    # gradient saved; the scalar zero needs no zeros tensor.)
    if replicas > 1:
      clipped = [g / replicas for g in clipped]
    updates = [tf.where(finite, g, tf.zeros([], g.dtype)) for g in clipped]
    optimizer.apply_gradients(zip(updates, variables))
    step.assign_add(tf.cast(finite, step.dtype))
    report = {name: _all_reduce_sum(value) for name, value in scalars._asdict().items()
              if value is not None}
    report["total_loss"] = total_loss
    report["global_norm"] = global_norm
    report["finite"] = finite
    if hps.pointer_gen:
      mask = tf.sequence_mask(batch.dec_len, tf.shape(outputs.p_gen)[1], tf.float32)
      report["p_gen_mean"] = (_all_reduce_sum(tf.reduce_sum(outputs.p_gen * mask))
                              / _all_reduce_sum(tf.reduce_sum(mask)))
    return report

  # Reading the iterator cannot be compiled by XLA: only the step on the batch is.
  compiled_step = (tf.function(replica_step, jit_compile=True, autograph=False) if jit_compile
                   else replica_step)

  @tf.function(autograph=False)
  def train_step(iterator):
    report = strategy.run(compiled_step, args=(next(iterator),))
    # Every replica holds the same all-reduced values: take the first one's.
    return {k: strategy.experimental_local_results(v)[0] for k, v in report.items()}

  return train_step


@contextlib.contextmanager
def _writing(directory, what):
  """Turns a write that failed deep inside TF (disk full, not writable) into an OutputError."""
  try:
    yield
  except (tf.errors.OpError, OSError) as e:
    raise OutputError(f"{directory}: could not write {what} "
                      f"({str(e).strip().splitlines()[0]})") from e


class Trainer:
  """Owns the training state (model, optimizer, step), its saves and the summary writer of one
  run's train dir.

  Under a multi-worker strategy only the chief writes to the train dir; the other workers
  save into private temporary directories (saving is collective) and all of them resume from
  the chief's newest checkpoint.
  """

  def __init__(self, hps, vocab, strategy=None):
    self.hps = hps
    self.vocab = vocab
    self.strategy = strategy or tf.distribute.get_strategy()
    if hps.seed is not None:
      keras.utils.set_random_seed(hps.seed)
    with self.strategy.scope():
      self.state = training_state.TrainingState.from_hparams(hps, len(vocab))
    self.model, self.optimizer, self.step = self.state.model, self.state.optimizer, self.state.step
    self.out_dir = distribute.WorkerDir(hps.train_dir, distribute.is_chief(self.strategy))
    self.manager = self.state.manager(self.out_dir.path)
    self.sources = []
    self.skipped_nonfinite = 0
    self.steps_run = 0  # steps this trainer has applied
    self._iterator = None

  def restore(self):
    """Resumes from the newest checkpoint in the (chief's) train dir, if any; returns its path."""
    if self.out_dir.chief:
      # No save is in progress while the trainer starts.
      training_state.remove_cut_off_saves(self.hps.train_dir)
    path = checkpoints.newest(self.hps.train_dir)
    if path:
      self.state.restore(path)
      logging.info("Restored %s (step %d).", path, int(self.step.numpy()))
    else:
      logging.info("No checkpoint in %s: starting from fresh weights.", self.hps.train_dir)
    return path

  def save(self):
    step = int(self.step.numpy())
    # The state file is written only after a complete save: it still names the previous one.
    previous = checkpoints.newest(self.out_dir.path) or "none"
    with stopping.critical(), _writing(self.out_dir.path, f"the checkpoint of step {step}; the "
                                       f"newest complete checkpoint is still {previous}"):
      path = self.manager.save(checkpoint_number=step)
    if self.out_dir.chief:
      logging.info("Saved checkpoint %s", path)
    return path

  def num_parameters(self):
    return sum(int(tf.size(v)) for v in self.model.trainable_variables)

  def dataset(self):
    """The training batches of --data_path, one input pipeline per worker, sharded by file;
    each replica gets --batch_size examples."""
    hps = self.hps

    def per_worker(context):
      source, batches = data.input_pipeline(hps, self.vocab, single_pass=False,
                                            num_shards=context.num_input_pipelines,
                                            shard_index=context.input_pipeline_id)
      self.sources.append(source)
      # Strings are not needed to train, and cannot be placed on accelerators.
      return batches.map(tf.autograph.experimental.do_not_convert(Batch.without_text))

    return self.strategy.distribute_datasets_from_function(per_worker)

  def train(self, dataset=None, restored=False):
    """Runs until --num_train_steps, Ctrl-C or SIGTERM (checked between steps); saves every
    checkpoint_secs and at exit. `restored`: the caller has already called restore().

    Returns one dict of scalars per step run (step, loss, ...), for callers that report a curve.
    """
    hps = self.hps
    if not restored:
      self.restore()
    replicas = self.strategy.num_replicas_in_sync
    logging.info("Trainable parameters: %d; the attention's implementation: %s",
                 self.num_parameters(), attention.chosen(hps, "train").name)
    logging.info("Batch size %d per replica x %d replicas = global batch %d; checkpoints and "
                 "TensorBoard summaries in %s", hps.batch_size, replicas,
                 hps.batch_size * replicas, hps.train_dir)
    dataset = dataset if dataset is not None else self.dataset()
    train_step = make_train_step(self.model, self.optimizer, self.step, hps, len(self.vocab),
                                 self.strategy)
    writer = (tf.summary.create_file_writer(hps.train_dir) if self.out_dir.chief
              else tf.summary.create_noop_writer())
    history = []
    last_save = time.time()
    step_log = StepLog(hps.num_train_steps)
    reached = int(self.step.numpy())
    if hps.num_train_steps and reached >= hps.num_train_steps:
      logging.warning("Nothing to train: the run is at step %d, num_train_steps is %d (a larger "
                      "num_train_steps trains it on)", reached, hps.num_train_steps)
    with stopping.until_stopped():
      try:
        # Kept until the trainer goes: tearing it down waits for the input pipeline's threads.
        self._iterator = iterator = iter(dataset)
        while not stopping.requested() and (
            not hps.num_train_steps or int(self.step.numpy()) < hps.num_train_steps):
          start = time.time()
          try:
            scalars = {k: v.numpy() for k, v in train_step(iterator).items()}
          except tf.errors.OutOfRangeError:
            for source in self.sources:
              source.raise_if_failed()
            logging.info("The training data ended.")
            break
          step = int(self.step.numpy())
          if not scalars["finite"]:
            self._non_finite(step + 1, scalars)
            continue
          seconds = time.time() - start
          row = {"step": step, **{k: float(v) for k, v in scalars.items() if k != "finite"}}
          history.append(row)
          self.steps_run += 1
          step_log.add(row)
          if step % hps.log_every_n_steps == 0:
            step_log.log()
          self._write_summaries(writer, step, scalars, seconds)
          if time.time() - last_save >= hps.checkpoint_secs:
            self.save()
            last_save = time.time()
      finally:
        with stopping.critical(), _writing(hps.train_dir, "TensorBoard summaries"):
          writer.flush()
      step_log.log()  # the steps since the last line
      self.save()
    self.out_dir.cleanup()
    return history

  def _non_finite(self, step, scalars):
    message = (f"Non-finite loss or gradient at step {step} (loss {scalars['total_loss']}, "
               f"global norm {scalars['global_norm']}): the update was NOT applied")
    if not self.hps.skip_nonfinite_batches:
      raise NonFiniteError(f"{message}; the newest checkpoint in {self.hps.train_dir} is the "
                           "last good one. --skip_nonfinite_batches skips such batches instead.")
    self.skipped_nonfinite += 1
    logging.warning("%s; batch skipped (%d so far, --skip_nonfinite_batches).", message,
                    self.skipped_nonfinite)

  def _write_summaries(self, writer, step, scalars, seconds):
    with _writing(self.hps.train_dir, "TensorBoard summaries"), writer.as_default():
      for name in ("loss", "coverage_loss", "total_loss", "global_norm", "p_gen_mean"):
        if name in scalars:
          tensorboard_log.scalar(name, scalars[name], step)
      tensorboard_log.scalar("steps_per_sec", 1.0 / max(seconds, 1e-9), step)


class StepLog:
  """The training log: one line per --log_every_n_steps steps (a run of hundreds of thousands of
  steps would otherwise print as many lines) with the means of the steps since the previous line,
  their rate over the wall time since then, and the time left until `num_train_steps` (0:
  unknown) at that rate."""

  def __init__(self, num_train_steps):
    self.num_train_steps = num_train_steps
    self.rows = []
    self.since = time.time()

  def add(self, row):
    """One step's scalars (`step`, `loss`, ...; `coverage_loss` and `p_gen_mean` when the model
    has them)."""
    self.rows.append(row)

  def log(self):
    """Logs the line of the steps added since the last one, if any."""
    if not self.rows:
      return
    now = time.time()
    rows, step = self.rows, self.rows[-1]["step"]
    steps_per_sec = len(rows) / max(now - self.since, 1e-9)
    self.rows, self.since = [], now
    mean = lambda key: sum(row[key] for row in rows) / len(rows)
    parts = [f"loss {mean('loss'):.4f}"]
    if "coverage_loss" in rows[0]:
      parts.append(f"coverage loss {mean('coverage_loss'):.4f}")
    if "p_gen_mean" in rows[0]:
      parts.append(f"p_gen {mean('p_gen_mean'):.3f}")
    parts.append(f"global norm {mean('global_norm'):.3f}")
    means = f" (means of {len(rows)} steps)" if len(rows) > 1 else ""
    eta = ""
    if self.num_train_steps:
      seconds = max(0, self.num_train_steps - step) / steps_per_sec
      eta = f", ETA {datetime.timedelta(seconds=round(seconds))}"
    logging.info("step %d: %s%s; %.2f steps/s%s", step, ", ".join(parts), means, steps_per_sec,
                 eta)


def _curve_summary(history):
  """First vs last tenth of the run, so noise from single batches does not mislead."""
  tenth = max(1, len(history) // 10)

  def mean(rows, key):
    values = [row[key] for row in rows if key in row]
    return sum(values) / len(values) if values else None

  parts = [f"Trained steps {history[0]['step']}-{history[-1]['step']}:"]
  for key, label in (("loss", "loss"), ("coverage_loss", "coverage loss"),
                     ("p_gen_mean", "mean p_gen")):
    first, last = mean(history[:tenth], key), mean(history[-tenth:], key)
    if first is not None:
      parts.append(f"{label} {first:.3f} -> {last:.3f}")
  return " ".join(parts[:1]) + " " + ", ".join(parts[1:]) + " (means of the first and last tenth)"


class _RunDirectorySnapshot:
  """What of a run directory a trainer may write existed before it started: a trainer that
  fails before its first step (data without a usable example, a checkpoint that does not fit)
  puts the directory back as it found it, so that no record, lock, events file or empty
  directory says a run was made."""

  def __init__(self, hps):
    self.train_dir = hps.train_dir
    self.record = run_record.path_in(hps.run_dir)
    self.decoding = decoding_defaults.path_in(hps.run_dir)
    self.lock = os.path.join(hps.run_dir, run_lock.LOCK_NAME)
    self.missing_dirs = []  # deepest first
    directory = os.path.abspath(self.train_dir)
    while not os.path.exists(directory):
      self.missing_dirs.append(directory)
      directory = os.path.dirname(directory)
    self.train_entries = set(os.listdir(self.train_dir)) if os.path.isdir(self.train_dir) else set()
    self.record_bytes = _read_bytes(self.record)
    self.decoding_bytes = _read_bytes(self.decoding)
    self.had_lock = os.path.exists(self.lock)

  def restore(self):
    """Puts back what was found; a part that cannot be put back is logged, never raised: the
    error that ended the training is the one to report."""
    try:
      if os.path.isdir(self.train_dir):
        for name in set(os.listdir(self.train_dir)) - self.train_entries:
          path = os.path.join(self.train_dir, name)
          if os.path.isdir(path):
            shutil.rmtree(path)
          else:
            os.remove(path)
      for path, found in ((self.record, self.record_bytes),
                          (self.decoding, self.decoding_bytes)):
        if found is None:
          with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        elif _read_bytes(path) != found:
          with files.atomic_file(path, "wb") as f:
            f.write(found)
      if not self.had_lock:
        with contextlib.suppress(FileNotFoundError):
          os.remove(self.lock)
    except OSError as e:
      logging.warning("Training failed before its first step, and %s could not be put back as "
                      "it was: %s", os.path.dirname(self.record), e)
      return
    for directory in self.missing_dirs:
      with contextlib.suppress(OSError):  # not empty: something else wrote there meanwhile
        os.rmdir(directory)
    logging.info("Training failed before its first step: %s is as it was before.",
                 os.path.dirname(self.record))


def _read_bytes(path):
  """The file's bytes; None where there is none (or a file stands where a directory should)."""
  if not os.path.isfile(path):
    return None
  with open(path, "rb") as f:
    return f.read()


def run(hps, vocab, strategy, decoding=None):
  """`--mode=train`: trains the run (under its trainer lock) and prints the loss curve; returns
  the steps run, one dict of scalars each. decoding: the decoding settings given
  ({setting: value}, decoding_defaults.given), recorded with the run's record as its decoding
  defaults."""
  # Only the chief writes the run directory; the other workers write private temporary ones.
  chief = distribute.is_chief(strategy)
  snapshot = _RunDirectorySnapshot(hps) if chief else None
  trainer = None
  try:
    with run_lock.held(hps.run_dir) if chief else contextlib.nullcontext():
      # A new run's record comes before its train dir, which an eval started beside waits
      # for; a resumed run's after the restore, so that a checkpoint not fitting the flags
      # fails first.
      resumed = checkpoints.newest(hps.train_dir)
      if chief and not resumed:
        run_record.write(hps, new_run=True)
        decoding_defaults.record(hps, decoding, new_run=True)
      trainer = Trainer(hps, vocab, strategy)
      trainer.restore()
      if chief and resumed:
        run_record.write(hps)
        decoding_defaults.record(hps, decoding)
      history = trainer.train(restored=True)
  except Exception:
    if snapshot and not (trainer and trainer.steps_run):
      snapshot.restore()
    raise
  if history:
    print(_curve_summary(history))
  print(f"Checkpoints and TensorBoard logs: {os.path.abspath(hps.train_dir)}")
  # Before the trainer goes: tearing down its input pipeline would take seconds.
  stopping.exit_if_requested()
  return history
