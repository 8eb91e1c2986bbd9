"""The registry of data formats: each is a base.DataFormat in a module of its own, registered
by its line in FORMATS. Everything that reads, writes, counts or names data files (the input
pipeline, settle, raw_text, decode, the tools) goes through here and asks the format what it
needs to know (its extensions, whether its text is pre-tokenised, its own settings) instead of
its name."""

import os

from pointer_gen.base.errors import DataError
from pointer_gen.formats import bin_format
from pointer_gen.formats import jsonl_format
from pointer_gen.formats import tfrecord_format

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


def options():
  """Every format's settings class (its Options), in registry order."""
  return tuple(f.Options for f in FORMATS)


def settings():
  """Every format's own settings as flags: (name, type, default, help), in registry order."""
  return tuple(declared for cls in options() for declared in cls.declared())


def setting_names():
  return tuple(name for name, *_ in settings())


def fields_of(hps):
  """{setting: value} of every format's own settings in the HParams `hps`."""
  return {name: getattr(hps, name) for name in setting_names()}


def extensions_help():
  """The formats and their extensions, for --data_path's help."""
  return ", ".join(f"{f.label} ({', '.join(f.extensions)})" for f in FORMATS)


def read_files(paths, formats, skips, fields):
  """Yields the records of each file of `paths` in order, read by its format in `formats` with
  that format's settings from `fields` (a format's settings left out take their defaults)."""
  for path, fmt in zip(paths, formats):
    yield from fmt.read(path, skips, fmt.Options.of(fields))


def read_records(paths, data_format, skips, **fields):
  """read_files of `paths`, their formats `data_format`'s or, with auto, their extensions'."""
  # Formats are resolved up front so a bad extension fails before any work is done.
  return read_files(paths, [detect(p, data_format) for p in paths], skips, fields)
