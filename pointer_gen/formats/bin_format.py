"""The original's chunked `.bin` format: records of an 8-byte little-endian signed length
followed by that many bytes of a serialized `tf.train.Example` with `article` and `abstract`
bytes features (example.parse_example), text already tokenised. It has no checksums: broken
framing is an error, a damaged payload a skipped record."""

import os
import struct

from pointer_gen.base import files
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import example

_LENGTH = struct.Struct("<q")


def _frames(f, path, read_payload):
  """Walks the length prefixes of an open .bin file, yielding (index, payload or None)."""
  size = os.fstat(f.fileno()).st_size
  index = 0
  while True:
    offset = f.tell()
    prefix = f.read(_LENGTH.size)
    if not prefix:
      return
    where = f"{path}: record {index} at byte {offset}"
    if len(prefix) < _LENGTH.size:
      raise DataError(f"{where}: truncated length prefix ({len(prefix)} of {_LENGTH.size} "
                      f"bytes at the end of the file)")
    (length,) = _LENGTH.unpack(prefix)
    left = size - offset - _LENGTH.size
    if length < 0:
      raise DataError(f"{where}: negative record length {length} (not a .bin file?)")
    if length > left:
      raise DataError(f"{where}: record length {length} but only {left} bytes left in the "
                      f"file (truncated file, or not a .bin file?)")
    if read_payload:
      yield index, f.read(length)
    else:
      f.seek(length, os.SEEK_CUR)
      yield index, None
    index += 1



class BinFormat(base.DataFormat):
  """The original's `.bin` (chunked by the converters, as its `finished_files/chunked`)."""

  name = "bin"
  label = ".bin"
  extensions = (".bin",)
  pretokenized = True
  original = True
  chunked = True

  def read(self, path, skips, options=None):
    """Yields the usable records of a .bin file; broken framing raises DataError. The features
    are always `article` and `abstract`."""
    del options  # no settings
    with open(path, "rb") as f:
      yield from example.example_records(path, _frames(f, path, read_payload=True), skips)

  def count(self, path, options=None):
    """The records of a .bin file, checking only the length prefixes."""
    del options  # no settings
    with open(path, "rb") as f:
      return sum(1 for _ in _frames(f, path, read_payload=False))

  def write(self, path, recs):
    count = 0
    with files.atomic_file(path, "wb") as f:
      for record in recs:
        payload = example.serialize_example(record)
        f.write(_LENGTH.pack(len(payload)))
        f.write(payload)
        count += 1
    return count


BIN = BinFormat()
