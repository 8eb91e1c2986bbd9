"""Where checkpoints live, which one each mode loads and how every mode reads them.

Training writes `<run>/train/model.ckpt-<step>` (keep 3); eval writes the best model as
`<run>/eval/bestmodel-<step>` with its own `checkpoint` state file. The two train-mode utilities
add `model.ckpt-<step>_cov_init` (convert_to_coverage_model) and `model.ckpt-<step>_best`
(restore_best_model) to the train dir.
"""

import gc
import logging as std_logging
import os
import re
import time

from absl import logging
from google.protobuf import text_format
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from pointer_gen.base import files
from pointer_gen.base import stopping
from pointer_gen.base.errors import DataError

CHECKPOINT_NAME = "model.ckpt"
BEST_MODEL_NAME = "bestmodel"
MAX_TO_KEEP = 3
COVERAGE_INIT_SUFFIX = "_cov_init"
BEST_SUFFIX = "_best"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# The coverage weight of the attention, as a path in the checkpoint's object graph: a checkpoint
# holds a coverage model exactly when it has it.
COVERAGE_PATH = ("model", "cell", "attention", "w_c")
# Eval may start a little before its trainer has made the train dir; after this, a missing one
# is a wrong --log_root/--exp_name.
TRAIN_DIR_WAIT_SECS = 120.0


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
  """The step in a checkpoint prefix (`model.ckpt-1234`, `model.ckpt-1234_cov_init` -> 1234),
  or None."""
  match = re.search(rf"-(\d+)(?:{COVERAGE_INIT_SUFFIX}|{BEST_SUFFIX})?$", path)
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


def to_load(hps):
  """The checkpoint whose model the mode builds: the one it loads (the first one, for eval
  beside training), or None when there is none yet (a new run)."""
  if hps.restore_best_model:
    return newest(hps.eval_dir)
  if hps.mode == "export":
    return to_export(hps)
  if hps.mode == "decode" or (hps.mode == "eval" and hps.single_pass):
    return resolve(hps, hps.ckpt_path)
  return newest(hps.train_dir)


def to_export(hps):
  """--ckpt_path; else the eval best model with --export_source=best; else the newest train one."""
  if hps.export_source == "best":
    if hps.ckpt_path:
      raise DataError("--export_source=best and --ckpt_path both name a checkpoint; give one")
    path = newest(hps.eval_dir)
    if not path:
      raise DataError(f"--export_source=best: no best model in {hps.eval_dir}; run --mode=eval "
                      "beside training first, or export the newest train checkpoint")
    return path
  return resolve(hps, hps.ckpt_path)


def wait_for_train_dir(hps):
  """Returns once <run>/train exists or a stop is requested; raises DataError naming it after
  TRAIN_DIR_WAIT_SECS.

  A new trainer records its run_config.json before it makes the train dir, so after this an eval
  started beside it finds the run's settings."""
  deadline = time.time() + TRAIN_DIR_WAIT_SECS
  if not os.path.isdir(hps.train_dir):
    logging.info("Waiting for a checkpoint in %s (the trainer has not created it yet; giving up "
                 "after %g s).", hps.train_dir, TRAIN_DIR_WAIT_SECS)
  while not os.path.isdir(hps.train_dir):
    if time.time() >= deadline:
      raise DataError(f"{hps.train_dir} does not exist (waited {TRAIN_DIR_WAIT_SECS:g} s): no "
                      "trainer runs in this run directory; check --log_root and --exp_name, or "
                      "start --mode=train first")
    if stopping.wait(min(hps.eval_poll_secs, 1.0)):
      return


def has_coverage(path):
  """Whether the checkpoint `path` holds a coverage model (the attention's w_c); raises
  tf.errors.OpError when it cannot be read.

  The object graph is walked because a value's key in the file is only its shortest path: in a
  training checkpoint, w_c's is through the optimizer's list of variables.
  """
  reader = tf.train.load_checkpoint(path)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
  node = graph.nodes[0]
  for name in COVERAGE_PATH:
    child = next((c for c in node.children if c.local_name == name), None)
    if child is None:
      return False
    node = graph.nodes[child.node_id]
  return bool(node.attributes)


def restore_weights(model, path):
  """Loads the model's weights (not the optimizer) from `path`; returns the global step."""
  step = restore(make_checkpoint(model), path, partial=True)
  logging.info("Loaded weights from %s (step %d).", path, step)
  return step


def restore(checkpoint, path, partial=False):
  """Restores `checkpoint` (of make_checkpoint) from `path`, every one of its objects required
  (`partial`: values of the file that it lacks, such as the optimizer's, are fine); returns the
  global step. A misfit raises DataError.

  The caller must not hold `checkpoint` if it lets the DataError end the program: a restore that
  stops midway never returns the status whose expect_partial() quiets TensorFlow's report of the
  file's values it did not restore, and that report (dozens of "Value in checkpoint could not be
  found" warnings) is printed when the restore's bookkeeping, reachable from `checkpoint`, is
  freed; it is freed here, quietly, so that the error is the last thing printed.
  """
  status = error = None
  try:
    status = checkpoint.restore(path)
    if partial:
      status.expect_partial()
    status.assert_existing_objects_matched()
  except ValueError as e:  # a shape differs
    error = _misfit(path, e)
  except AssertionError as e:  # a weight of the model (w_c, p_gen) is not in the checkpoint
    # Its message prints each such variable with all its values; the paths say enough.
    missing = re.findall(r"path=([^,]+),", str(e))
    error = _misfit(path, f"it lacks {', '.join(missing)}" if missing else e)
  if error is None:
    return int(checkpoint.step.numpy())
  tf_logger = std_logging.getLogger("tensorflow")
  disabled, tf_logger.disabled = tf_logger.disabled, True
  try:
    del checkpoint, status
    gc.collect()  # the bookkeeping sits in reference cycles
  finally:
    tf_logger.disabled = disabled
  raise error


def _misfit(path, reason):
  return DataError(f"{path} does not fit the model built from the flags (check --vocab_size, "
                   f"--hidden_dim, --emb_dim, --pointer_gen, --coverage against the run that "
                   f"wrote it): {reason}")


def register_newest(directory, path):
  """Records the checkpoint `path` (written into `directory`) as the newest in its state file.

  The entries already there keep their timestamps: a CheckpointManager that later opens the
  directory only rotates out (deletes) entries whose timestamp is after the state's
  last_preserved_timestamp, and treats entries without timestamps as kept forever.
  """
  directory = os.path.abspath(directory)
  path = os.path.abspath(path)
  now = time.time()
  entries, preserved = _state_entries(directory)
  if preserved is None:
    preserved = now - 1.0
  entries = [(p, t) for p, t in entries if p != path]
  entries.append((path, now))
  _write_state(directory, path, entries, preserved)


def keep_from_rotation(directory, keep):
  """Makes the CheckpointManager that next opens `directory` never delete the listed
  checkpoints for which `keep(path)` is true (and those older than them): the state's
  last_preserved_timestamp moves to their newest timestamp. Returns the paths kept."""
  directory = os.path.abspath(directory)
  entries, preserved = _state_entries(directory)
  kept = [(p, t) for p, t in entries if keep(p)]
  if not kept:
    return []
  newest_path = tf.train.get_checkpoint_state(directory).model_checkpoint_path
  _write_state(directory, os.path.join(directory, newest_path), entries,
               max([preserved or 0.0] + [t for _, t in kept]))
  return [p for p, _ in kept]


def _state_entries(directory):
  """([(absolute path, timestamp)] of the state file of `directory`, its
  last_preserved_timestamp), or ([], None) without one."""
  state = tf.train.get_checkpoint_state(directory)
  if state is None:
    return [], None
  preserved = state.last_preserved_timestamp
  timestamps = list(state.all_model_checkpoint_timestamps) or (
      [preserved] * len(state.all_model_checkpoint_paths))
  return [(os.path.join(directory, p), t) for p, t in zip(state.all_model_checkpoint_paths,
                                                          timestamps)], preserved


def _write_state(directory, newest_path, entries, preserved):
  # Paths relative to the directory, as CheckpointManager writes them, so that both spell a
  # checkpoint the same way when they compare entries.
  proto = tf.compat.v1.train.generate_checkpoint_state_proto(
      directory, os.path.relpath(newest_path, directory),
      all_model_checkpoint_paths=[os.path.relpath(p, directory) for p, _ in entries],
      all_model_checkpoint_timestamps=[t for _, t in entries],
      last_preserved_timestamp=preserved)
  # Replaced in one rename, as TensorFlow does, for a reader (eval) polling the file.
  files.write_text_atomic(os.path.join(directory, "checkpoint"),
                          text_format.MessageToString(proto))
