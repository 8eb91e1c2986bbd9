"""What every data format shares: the `Record` every reader yields, the abstract's sentences,
and `DataFormat`, what a format declares and implements (registry.py holds the formats)."""

import itertools
import os
from typing import Iterator, NamedTuple

from pointer_gen.base import settings
from pointer_gen.formats.skips import Skip
from pointer_gen.formats.skips import SkipCounter
from pointer_gen.text.vocab import SENTENCE_END, SENTENCE_START


class Record(NamedTuple):
  article: str
  abstract_sentences: list[str]
  source: str  # the file the record came from
  index: int  # 0-based record index in that file; for JSONL, the 0-based line index


def abstract_to_sentences(text):
  """Splits a `<s> ... </s>` abstract into stripped sentences, as the original's abstract2sents.

  Text outside the tags and an unclosed `<s>` are ignored, as in the original. An abstract
  without any tag is taken as one sentence, so plain-text abstracts are not lost.
  """
  if SENTENCE_START not in text and SENTENCE_END not in text:
    return [text.strip()] if text.strip() else []
  sentences = []
  pos = 0
  while True:
    start = text.find(SENTENCE_START, pos)
    if start < 0:
      return sentences
    end = text.find(SENTENCE_END, start + len(SENTENCE_START))
    if end < 0:
      return sentences
    sentences.append(text[start + len(SENTENCE_START):end].strip())
    pos = end + len(SENTENCE_END)


def check_article(article):
  if not article.strip():
    raise Skip("empty article")


class DataFormat:
  """A data format as the registry (registry.py) holds it: a subclass sets the class
  attributes and implements read, count and write; one instance of it is registered.

  name: the --data_format value, and what a decode directory names after the split.
  label: how messages name it (`.bin`, JSONL).
  extensions: the lower-case file extensions (with the dot) that --data_format=auto reads as it.
  pretokenized: whether the files hold text already split into the data's tokens (the
    original's `.bin`), which a run reads with --tokenizer and --lowercase; else raw text
    (JSONL), tokenised as the run's raw text was (raw_text.py).
  original: the original's format, which decode directories leave unnamed.
  chunked: the converters write it as numbered chunk files in a directory (`write_chunks`)
    rather than as one file.
  Options: its own settings (a settings.Settings, each field a flag, as JSONL's field names);
    none by default.
  """

  name: str
  label: str
  extensions: tuple[str, ...]
  pretokenized: bool
  original = False
  chunked = False
  Options = settings.Settings

  def read(self, path, skips: SkipCounter, options=None) -> Iterator[Record]:
    """Yields the usable records of the file `path`, counting the others in `skips`; options:
    the format's Options (None: their defaults)."""
    raise NotImplementedError

  def count(self, path, options=None):
    """The records in the file `path`, for progress lines and ETAs, checking up front what
    would otherwise stop a run hours in (a DataError naming the file and record); options: the
    format's Options, as `read` gets them (where a record ends may depend on them)."""
    raise NotImplementedError

  def write(self, path, records):
    """Writes `records` as the one file `path`, atomically; returns how many were written."""
    raise NotImplementedError

  def check_fields(self, path, options):
    """Raises DataError when the file's records lack the fields its Options name, before a run
    skips every record one warning at a time; a format with fixed fields has nothing to check."""
    del path, options

  def write_chunks(self, records, out_dir, split, chunk_size=1000):
    """Writes `{split}_000<ext>`, `{split}_001<ext>`, ... of `chunk_size` records; returns the
    paths."""
    if chunk_size < 1:
      raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    os.makedirs(out_dir, exist_ok=True)
    records = iter(records)
    paths = []
    for chunk_index in itertools.count():
      chunk = list(itertools.islice(records, chunk_size))
      if not chunk:
        return paths
      path = os.path.join(out_dir, f"{split}_{chunk_index:03d}{self.extensions[0]}")
      self.write(path, chunk)
      paths.append(path)
