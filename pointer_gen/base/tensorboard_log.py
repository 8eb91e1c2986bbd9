"""TensorBoard scalars, text and images without the tensorboard package (TF 2.21 does not
install it).

`tf.summary.scalar`, `text` and `image` live in tensorboard; the event files they write are
plain tensor summaries tagged for a plugin ("scalars", "text", "images"), which
`tf.summary.write` produces from core TensorFlow alone. Each takes an optional description,
which TensorBoard shows beside the tag.
"""

import tensorflow as tf


def _metadata(plugin, description):
  return tf.compat.v1.SummaryMetadata(
      summary_description=description,
      plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name=plugin)).SerializeToString()


_SCALAR_METADATA = _metadata("scalars", "")


def scalar(name, value, step, description=""):
  """Writes one scalar to the default summary writer (inside `writer.as_default()`)."""
  metadata = _metadata("scalars", description) if description else _SCALAR_METADATA
  return tf.summary.write(name, tf.cast(value, tf.float32), step=step, metadata=metadata)


def text(name, markdown, step, description=""):
  """Writes one text (markdown, which TensorBoard renders) to the default summary writer."""
  return tf.summary.write(name, tf.constant(markdown, tf.string), step=step,
                          metadata=_metadata("text", description))


def image(name, pixels, step, description=""):
  """Writes one picture, uint8 [height, width, 3], as a PNG to the default summary writer: the
  images plugin's tensor, [width, height, PNG] as strings."""
  shape = tf.shape(pixels)
  tensor = tf.stack([tf.strings.as_string(shape[1]), tf.strings.as_string(shape[0]),
                     tf.io.encode_png(pixels)])
  return tf.summary.write(name, tensor, step=step, metadata=_metadata("images", description))
