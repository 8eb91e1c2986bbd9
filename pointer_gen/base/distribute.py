"""tf.distribute strategies for training: one device, local GPUs, many workers, TPU."""

import json
import os
import shutil
import tempfile

from absl import logging
import tensorflow as tf

from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import make_output_dir

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def make_strategy(name, tpu=""):
  """The strategy for --strategy; `multi_worker` reads the cluster from TF_CONFIG."""
  if name == "default":
    return tf.distribute.get_strategy()
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker":
    if "TF_CONFIG" not in os.environ:
      raise DataError("--strategy=multi_worker needs the TF_CONFIG environment variable "
                      "(cluster and task of this worker); see docs/devices.md")
    try:
      json.loads(os.environ["TF_CONFIG"])
    except json.JSONDecodeError as e:
      raise DataError(f"TF_CONFIG is not valid JSON: {e}") from e
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise DataError(f"--strategy={name!r}: expected one of {', '.join(STRATEGIES)}")


def is_chief(strategy):
  """Whether this process writes checkpoints and summaries (worker 0, or the only one)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0)


class WorkerDir:
  """Where this process writes: the real directory on the chief, a private temporary one on
  other workers (every worker must take part in a save's collectives), removed at exit."""

  def __init__(self, directory, chief):
    self.chief = chief
    if chief:
      self.path = directory
      make_output_dir(directory)
    else:
      self.path = tempfile.mkdtemp(prefix="pointer_gen_worker_")

  def cleanup(self):
    if not self.chief:
      shutil.rmtree(self.path, ignore_errors=True)
      logging.info("Removed this worker's temporary directory %s", self.path)
