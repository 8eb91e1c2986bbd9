"""The registry of data formats: each is a records.DataFormat in a module of its own, registered
by its line in FORMATS. Everything that reads, writes, counts or names data files (the input
pipeline, settle, raw_text, decode, the tools) goes through here and asks the format what it
needs to know (its extensions, whether its text is pre-tokenised) instead of its name."""

import dataclasses
import os
from typing import Any

from pointer_gen import bin_format
from pointer_gen import jsonl_format
from pointer_gen import records
from pointer_gen import tfrecord_format
from pointer_gen.errors import DataError

FORMATS = (
    bin_format.BIN,
    jsonl_format.JSONL,
    tfrecord_format.TFRECORD,
)
BY_NAME = {f.name: f for f in FORMATS}
NAMES = tuple(BY_NAME)  # --data_format's values besides auto
_BY_EXTENSION = {ext: f for f in FORMATS for ext in f.extensions}


def get(name):
  """The format called `name`; a DataError for another name."""
  if name not in BY_NAME:
    raise DataError(f"--data_format={name!r}: expected auto or one of {', '.join(NAMES)}")
  return BY_NAME[name]


def detect(path, data_format="auto"):
  """The format of `path`: `data_format`'s, or with auto the one its extension belongs to."""
  if data_format != "auto":
    return get(data_format)
  ext = os.path.splitext(path)[1].lower()
  if ext not in _BY_EXTENSION:
    raise DataError(f"{path}: cannot tell the data format from the extension {ext!r} "
                    f"(known: {', '.join(_BY_EXTENSION)}); pass --data_format="
                    f"{'|'.join(NAMES)}")
  return _BY_EXTENSION[ext]


@dataclasses.dataclass(frozen=True)
class DataFiles:
  """--data_path settled once, where the run is settled (settle.py), and passed down in
  HParams.data: the files, each one's format, how their text becomes the model's tokens and the
  field names the formats that name fields read. Nothing expands the glob or detects a format
  again."""
  pattern: str  # --data_path as given
  paths: tuple[str, ...]  # the files it matches, sorted
  formats: tuple[records.DataFormat, ...]  # each file's
  reads: tuple[str, bool]  # (tokenizer, lowercase) of the model's tokens from their text
  fields: dict[str, Any]  # article_key, abstract_key

  @classmethod
  def find(cls, pattern, data_format="auto", reads=("whitespace", False), fields=None,
           paths=None):
    """The files `pattern` matches (a DataError when none does; `paths`: those already
    found) and their formats (`data_format`'s, or with auto each one's extension's)."""
    paths = records.expand_glob(pattern) if paths is None else paths
    return cls(pattern, tuple(paths), tuple(detect(p, data_format) for p in paths), reads,
               dict(fields or {}))

  def read(self, skips, order=None):
    """Yields the usable records of the files `order` (indices into paths; default: all, in
    order), counting the others in `skips`."""
    for index in range(len(self.paths)) if order is None else order:
      yield from self.formats[index].read(self.paths[index], skips, **self.fields)

  def count(self, order=None):
    """The records of the files `order` (as `read`), each format's cheap checks made."""
    return sum(self.formats[index].count(self.paths[index])
               for index in (range(len(self.paths)) if order is None else order))


def count_records(path, data_format="auto"):
  """The records of the file `path`, its format's cheap checks made (`DataFormat.count`)."""
  return detect(path, data_format).count(path)


def read_records(paths, data_format, skips, article_key=records.ARTICLE_KEY,
                 abstract_key=records.DEFAULT_ABSTRACT_KEY):
  """Yields the records of each file in the given order, each with its format's reader; the
  field names go to every reader (JSONL reads them; .bin and TFRecord features are always
  `article`, `abstract`)."""
  # Formats are resolved up front so a bad extension fails before any work is done.
  formats = [detect(p, data_format) for p in paths]
  for path, fmt in zip(paths, formats):
    yield from fmt.read(path, skips, article_key, abstract_key)
