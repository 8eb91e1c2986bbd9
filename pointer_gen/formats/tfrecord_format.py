"""TFRecord files of `tf.train.Example`s with `article` and `abstract` bytes features, as
TensorFlow users keep data: the payload of the original's `.bin` records (example.parse_example:
text already tokenised, the abstract's sentences in `<s> ... </s>` tags) in TensorFlow's record
framing, whose length and data checksums (CRC-32C) tf.data.TFRecordDataset checks. A record
whose checksum fails is an error naming the file and the record: its length cannot be trusted,
so nothing after it can be located, as with a `.bin` file's broken framing."""

import re

import tensorflow as tf

from pointer_gen.base import files
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import example

# A record's framing around its payload: the length (8 bytes) and its checksum (4), then the
# payload and its checksum (4).
_FRAMING_BYTES = 16


def _reason(error):
  """What TensorFlow's DataLossError says of a record, without its op and offset."""
  message = str(error.message if hasattr(error, "message") else error).strip().splitlines()[0]
  if "truncated record" in message:
    return "truncated record (the file ends inside it: truncated file?)"
  if "corrupted record" in message:
    return ("corrupted record: its checksum does not match its bytes (a damaged file, or not a "
            "TFRecord file?)")
  return re.sub(r"^\{\{[^}]*\}\}\s*|\s*\[Op:.*$", "", message)


def _payloads(path):
  """Yields (index, payload) of each record of a TFRecord file, its checksums checked; a
  record that fails them, and bytes at the end that are no whole record, raise DataError."""
  index, offset = 0, 0
  iterator = iter(tf.data.TFRecordDataset(path).as_numpy_iterator())
  while True:
    try:
      payload = next(iterator)
    except StopIteration:
      break
    except tf.errors.OpError as e:
      raise DataError(f"{path}: record {index} at byte {offset}: {_reason(e)}") from None
    yield index, payload
    index += 1
    offset += _FRAMING_BYTES + len(payload)
  _check_end(path, index, offset)


def _check_end(path, index, offset):
  # TFRecordDataset ends quietly at a length field cut short by the end of the file.
  size = tf.io.gfile.stat(path).length
  if size != offset:
    raise DataError(f"{path}: record {index} at byte {offset}: truncated length field "
                    f"({size - offset} bytes at the end of the file)")


@tf.autograph.experimental.do_not_convert
def _length(payload):
  return tf.cast(tf.strings.length(payload), tf.int64)  # []


@tf.autograph.experimental.do_not_convert
def _add(state, length):
  count, size = state
  return count + 1, size + length


class TFRecordFormat(base.DataFormat):
  """TFRecord files of `tf.train.Example`s, pre-tokenised text as in `.bin` files."""

  name = "tfrecord"
  label = "TFRecord"
  extensions = (".tfrecord", ".tfrecords")
  pretokenized = True

  def read(self, path, skips, options=None):
    """Yields the usable records; the features are always `article` and `abstract`."""
    del options  # no settings
    yield from example.example_records(path, _payloads(path), skips)

  def count(self, path, options=None):
    """The records, every checksum checked (in TensorFlow's reader, at its speed): a damaged
    record fails the run at its start, not when a later epoch reaches it."""
    del options  # no settings
    lengths = tf.data.TFRecordDataset(path).map(_length)
    try:
      count, size = lengths.reduce((tf.constant(0, tf.int64), tf.constant(0, tf.int64)), _add)
    except tf.errors.OpError:
      for _ in _payloads(path):  # names the record that fails
        pass
      raise
    _check_end(path, int(count), int(count) * _FRAMING_BYTES + int(size))
    return int(count)

  def write(self, path, recs):
    count = 0
    with files.atomic_path(path) as tmp_path:
      with tf.io.TFRecordWriter(tmp_path) as writer:
        for record in recs:
          writer.write(example.serialize_example(record))
          count += 1
    return count


TFRECORD = TFRecordFormat()
