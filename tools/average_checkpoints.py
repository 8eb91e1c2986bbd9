"""Averages the weights of a run's last N (or named) checkpoints into one checkpoint.

  python tools/average_checkpoints.py --average_train_dir=runs/demo/train --average_last=3
  python tools/average_checkpoints.py \
      --average_checkpoints=runs/demo/train/model.ckpt-200,runs/demo/train/model.ckpt-300 \
      --average_output=runs/demo/averaged/model.ckpt-300

Each model weight of the output is the mean of the checkpoints' (in float64, then cast back);
everything else, the optimizer's Adagrad accumulators, the global step and the object graph,
is the newest checkpoint's (the last named, or the train dir's newest): a training run resumed
from the average goes on with the newest checkpoint's optimizer, and decode, eval and export
load it with --ckpt_path as any checkpoint (its step the newest's; decode then names its
directory after that step: give --decode_dir to keep the newest checkpoint's decode apart).
The default output is <run>/averaged/model.ckpt-<step>, outside the train dir's rotation, never
registered as its newest. The checkpoints must hold the same weights (one model, one phase of a
run): one that does not is an error naming it.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from pointer_gen import usage
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError

flags.DEFINE_string("average_train_dir", "", "The run's train dir, whose --average_last "
                    "checkpoints (by its state file) are averaged.")
flags.DEFINE_integer("average_last", 0, "With --average_train_dir: how many of its newest "
                     "checkpoints.")
flags.DEFINE_string("average_checkpoints", "", "Or: the checkpoint prefixes, comma-separated, "
                    "the newest last.")
flags.DEFINE_string("average_output", "", "The averaged checkpoint's prefix; default "
                    "<run>/averaged/model.ckpt-<step of the newest>.")
FLAGS = flags.FLAGS

def chosen(train_dir, last, named):
  """The checkpoint prefixes to average, oldest first: `named` (a comma-separated list), else
  the `last` newest of `train_dir`'s state file."""
  if named:
    return [path for path in named.split(",") if path]
  if not train_dir or last <= 0:
    raise DataError("give --average_checkpoints, or --average_train_dir with --average_last >= 1")
  state = tf.train.get_checkpoint_state(train_dir)
  paths = list(state.all_model_checkpoint_paths) if state else []
  if len(paths) < last:
    raise DataError(f"--average_last={last}: {train_dir} lists {len(paths)} checkpoint(s)")
  return paths[-last:]


def model_keys(reader):
  """The keys of the model's weights in a checkpoint (its `reader`): those of every object the
  object graph reaches from its root's `model` (a weight the optimizer also tracks is saved once,
  under whichever path the graph found first, so a key's name does not say whose it is)."""
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(checkpoints.OBJECT_GRAPH_KEY))
  stack = [child.node_id for child in graph.nodes[0].children if child.local_name == "model"]
  seen = set()
  while stack:
    node = stack.pop()
    if node not in seen:
      seen.add(node)
      stack.extend(child.node_id for child in graph.nodes[node].children)
  return {attribute.checkpoint_key for node in seen for attribute in graph.nodes[node].attributes}


def average(paths, output):
  """Writes the checkpoint `output` (a prefix): the mean of `paths`' model weights, the rest the
  last path's; returns the averaged keys."""
  if len(paths) < 1:
    raise DataError("no checkpoint to average")
  readers = []
  for path in paths:
    try:
      readers.append(tf.train.load_checkpoint(path))
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
      raise DataError(f"{path}: not a readable checkpoint ({e})") from e
  newest = readers[-1]
  shapes = newest.get_variable_to_shape_map()
  dtypes = newest.get_variable_to_dtype_map()
  weights = sorted(key for key in model_keys(newest) if dtypes[key].is_floating)
  for path, reader in zip(paths[:-1], readers[:-1]):
    theirs = reader.get_variable_to_shape_map()
    differ = [key for key in weights if theirs.get(key) != shapes[key]]
    differ += sorted(set(model_keys(reader)) - set(model_keys(newest)))
    if differ:
      raise DataError(f"{path}: not the model of {paths[-1]} ({differ[0].split('/.')[0]} "
                      "differs): average checkpoints of one model only")
  tensors = {}
  for key in shapes:
    if key in weights:
      total = sum(reader.get_tensor(key).astype(np.float64) for reader in readers)
      tensors[key] = (total / len(readers)).astype(dtypes[key].as_numpy_dtype)
    else:
      tensors[key] = newest.get_tensor(key)
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=output, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[name]) for name in names])
  return weights


def main(argv):
  del argv
  try:
    paths = chosen(FLAGS.average_train_dir, FLAGS.average_last, FLAGS.average_checkpoints)
    newest = paths[-1]
    output = FLAGS.average_output or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(newest))), "averaged",
        f"{checkpoints.CHECKPOINT_NAME}-{checkpoints.step_of(newest)}")
    weights = average(paths, output)
  except DataError as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  print(f"Wrote {output}: the mean of {len(weights)} model weights over {len(paths)} "
        f"checkpoints ({', '.join(os.path.basename(p) for p in paths)}); optimizer state and "
        f"step of {os.path.basename(newest)}")
  return 0


if __name__ == "__main__":
  usage.run_tool(main)
