"""--data_path's files: the glob expanded (`expand_glob`), and `DataFiles`, the data settled once
where the run is settled (settle.py) and passed down in HParams.data: nothing expands the glob
or detects a format again."""

import dataclasses
import glob
import os
from typing import Any

from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import registry
from pointer_gen.text.tokenizers import Tokenization


def expand_glob(pattern, flag="--data_path"):
  """Returns the sorted files matching `pattern`; an empty or fruitless pattern is an error."""
  if not pattern:
    raise DataError(f"{flag} is empty: give a file or a glob pattern such as 'data/train_*.bin'")
  matches = glob.glob(os.path.expanduser(pattern))
  paths = sorted(p for p in matches if os.path.isfile(p))
  if not paths:
    hint = " (only directories match; add a file pattern such as '/*.bin')" if matches else ""
    raise DataError(f"{flag}={pattern}: no files match{hint}")
  return paths


@dataclasses.dataclass(frozen=True)
class DataFiles:
  """--data_path settled: the files, each one's format, how their text becomes the model's
  tokens and the formats' own settings (registry.fields_of: JSONL's field names)."""
  pattern: str  # --data_path as given
  paths: tuple[str, ...]  # the files it matches, sorted
  formats: tuple[base.DataFormat, ...]  # each file's
  reads: Tokenization  # how their text becomes the model's tokens
  fields: dict[str, Any]  # the formats' own settings by name

  @classmethod
  def find(cls, pattern, data_format="auto", reads=Tokenization("whitespace", False), fields=None,
           paths=None):
    """The files `pattern` matches (a DataError when none does; `paths`: those already
    found) and their formats (`data_format`'s, or with auto each one's extension's)."""
    paths = expand_glob(pattern) if paths is None else paths
    return cls(pattern, tuple(paths), tuple(registry.detect(p, data_format) for p in paths),
               reads, dict(fields or {}))

  def read(self, skips, order=None):
    """Yields the usable records of the files `order` (indices into paths; default: all, in
    order), counting the others in `skips`."""
    order = range(len(self.paths)) if order is None else order
    return registry.read_files([self.paths[i] for i in order], [self.formats[i] for i in order],
                               skips, self.fields)

  def count(self, order=None):
    """The records of the files `order` (as `read`), each format's cheap checks made, with its
    settings (where a record ends may depend on them, as on a CSV file's delimiter)."""
    return sum(self.formats[index].count(self.paths[index],
                                         self.formats[index].Options.of(self.fields))
               for index in (range(len(self.paths)) if order is None else order))

  def check_fields(self):
    """Each file's format's check_fields, before a run skips every record one at a time."""
    for path, data_format in zip(self.paths, self.formats):
      data_format.check_fields(path, data_format.Options.of(self.fields))
