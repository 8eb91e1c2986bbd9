"""TensorBoard scalars without the tensorboard package (TF 2.21 does not install it).

`tf.summary.scalar` lives in tensorboard; the event files it writes are plain tensor summaries
tagged for the "scalars" plugin, which `tf.summary.write` produces from core TensorFlow alone.
"""

import tensorflow as tf

_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


def scalar(name, value, step):
  """Writes one scalar to the default summary writer (inside `writer.as_default()`)."""
  return tf.summary.write(name, tf.cast(value, tf.float32), step=step,
                          metadata=_SCALAR_METADATA.SerializeToString())


def read_scalars(events_dir):
  """{tag: [(step, value), ...]} from every event file in `events_dir` (for tests and tools)."""
  result = {}
  for path in sorted(tf.io.gfile.glob(f"{events_dir}/events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
        result.setdefault(value.tag, []).append((event.step, number))
  return result
