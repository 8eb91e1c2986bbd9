"""TensorBoard event files read back as the tests check them."""

import tensorflow as tf


def read_tensors(events_dir):
  """{tag: [(step, numpy value, plugin name), ...]} from every event file in `events_dir`, in
  file order."""
  result = {}
  for path in sorted(tf.io.gfile.glob(f"{events_dir}/events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        number = (tf.make_ndarray(value.tensor) if value.HasField("tensor")
                  else value.simple_value)
        result.setdefault(value.tag, []).append(
            (event.step, number, value.metadata.plugin_data.plugin_name))
  return result


def read_scalars(events_dir):
  """{tag: [(step, value), ...]} of the scalars in every event file in `events_dir`."""
  return {tag: [(step, float(value)) for step, value, _ in values]
          for tag, values in read_tensors(events_dir).items()
          if all(plugin in ("scalars", "") for _, _, plugin in values)}
