"""Examples on disk, whatever their format: the `Record` every reader yields, the counting of
the records skipped, the `tf.train.Example` that `.bin` and TFRecord files hold, and
`DataFormat`, what a data format declares and implements (the formats: `data_formats`).

A record whose framing is broken raises `DataError`, because nothing after it can be located
reliably. A record that is framed correctly but unusable is skipped, counted and logged, so that
one bad example does not stop a long run.
"""

import collections
import contextlib
import glob
import itertools
import os
from typing import Iterator, NamedTuple

from absl import logging
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
import tensorflow as tf

from pointer_gen.errors import DataError
from pointer_gen.vocab import SENTENCE_END, SENTENCE_START

ARTICLE_KEY = "article"
# The default abstract_key: `abstract_sentences` (a list of strings) when the object has it,
# else `abstract` (a string).
DEFAULT_ABSTRACT_KEY = ""
# Enough warnings to show what is wrong without flooding the log when a whole file is bad.
MAX_LOGGED_PER_REASON = 20


class Record(NamedTuple):
  article: str
  abstract_sentences: list[str]
  source: str  # the file the record came from
  index: int  # 0-based record index in that file; for JSONL, the 0-based line index


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


class SkipCounter:
  """Counts skipped records by reason and logs the first few of each reason. A record is counted
  and logged once, however many passes over the data meet it (training reads its files again
  every epoch), and, inside `one_count_per_record`, however many readers meet it: there every
  SkipCounter made shares one count."""

  def __init__(self):
    self._tally = _shared_tally or _Tally()
    self.counts = self._tally.counts
    self._seen = self._tally.seen

  @property
  def total(self):
    return sum(self.counts.values())

  def skip(self, source, index, reason, detail=""):
    if (source, index) in self._seen:
      return
    self._seen.add((source, index))
    self.counts[reason] += 1
    count = self.counts[reason]
    if count > MAX_LOGGED_PER_REASON:
      return
    suffix = f" ({detail})" if detail else ""
    logging.warning("%s: record %d: skipped, %s%s", source, index, reason, suffix)
    if count == MAX_LOGGED_PER_REASON:
      logging.warning("Skipped %d records for %r; further ones are only counted",
                      count, reason)

  def log_summary(self):
    """Logs the summary line when records were skipped since the last one logged (by any
    counter sharing this one's count)."""
    if self.total != self._tally.total_logged:
      logging.warning("Data: %s", self.summary())
      self._tally.total_logged = self.total

  def summary(self):
    if not self.counts:
      return "skipped 0 records"
    parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.counts.items()))
    text = f"skipped {self.total} records ({parts})"
    if max(self.counts.values()) > MAX_LOGGED_PER_REASON:
      text += f"; only the first {MAX_LOGGED_PER_REASON} of each reason were logged"
    return text


class _Tally:
  """What SkipCounters that count together share."""

  def __init__(self):
    self.counts = collections.Counter()
    self.seen = set()  # (source, index) of the records counted
    self.total_logged = 0  # the total in the last summary line logged


_shared_tally = None


@contextlib.contextmanager
def one_count_per_record():
  """Within it, every SkipCounter counts into one tally: a command's start-up checks, its
  training or eval and eval's samples read the same records, and a bad one is logged and
  counted once, not once by each."""
  global _shared_tally
  outer = _shared_tally
  _shared_tally = outer or _Tally()
  try:
    yield
  finally:
    _shared_tally = outer


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


class Skip(Exception):
  """A record that cannot be used; carries the reason and detail for `SkipCounter.skip`."""

  def __init__(self, reason, detail=""):
    super().__init__(reason)
    self.reason = reason
    self.detail = detail


def _bytes_feature(example, name):
  feature = example.features.feature
  if name not in feature:
    raise Skip(f"missing '{name}' feature", f"features: {', '.join(sorted(feature)) or 'none'}")
  kind = feature[name].WhichOneof("kind")
  if kind != "bytes_list" or not feature[name].bytes_list.value:
    raise Skip(f"'{name}' feature is not a non-empty bytes_list", f"kind: {kind}")
  # A .bin has no checksum, and a damaged length byte inside a payload can still parse:
  # the text is cut short and its rest becomes an unknown field or a second value. No writer
  # produces either, so they mark a damaged record rather than a text to take.
  values = feature[name].bytes_list
  if (len(values.value) > 1 or unknown_fields.UnknownFieldSet(values)
      or unknown_fields.UnknownFieldSet(feature[name])):
    raise Skip("damaged tf.train.Example",
               f"'{name}' feature: {len(values.value)} values or unknown fields")
  try:
    return feature[name].bytes_list.value[0].decode("utf-8")
  except UnicodeDecodeError as e:
    raise Skip("invalid UTF-8", f"'{name}' feature, byte {e.start}: {e.reason}") from e


def check_article(article):
  if not article.strip():
    raise Skip("empty article")


def parse_example(payload):
  """(article, abstract sentences) of the bytes of a `tf.train.Example`; Skip when unusable."""
  try:
    example = tf.train.Example.FromString(payload)
  except DecodeError as e:
    raise Skip("not a tf.train.Example", str(e)) from e
  article = _bytes_feature(example, "article")
  abstract = _bytes_feature(example, "abstract")
  check_article(article)
  return article, abstract_to_sentences(abstract)


def _abstract_text(record):
  """Wraps sentences in tags; a sentence that holds a tag would not read back, so refuse it."""
  for s in record.abstract_sentences:
    if SENTENCE_START in s or SENTENCE_END in s:
      raise DataError(f"{record.source}: record {record.index}: abstract sentence contains "
                      f"{SENTENCE_START!r} or {SENTENCE_END!r}, which a tf.train.Example's "
                      f"abstract uses as sentence delimiters: {s!r}")
  return " ".join(f"{SENTENCE_START} {s} {SENTENCE_END}" for s in record.abstract_sentences)


def serialize_example(record):
  """`record` as the bytes of a `tf.train.Example` with `article` and `abstract` (its sentences
  in `<s> ... </s>` tags) bytes features, as the original's data holds them."""
  features = {
      "article": tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[record.article.encode("utf-8")])),
      "abstract": tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[_abstract_text(record).encode("utf-8")])),
  }
  example = tf.train.Example(features=tf.train.Features(feature=features))
  # Protobuf otherwise writes the `feature` map in hash-table order, which differs between
  # processes: the same records must give the same bytes.
  return example.SerializeToString(deterministic=True)




def example_records(path, indexed_payloads, skips):
  """The usable records of a file's (index, serialized tf.train.Example) pairs; the others are
  counted in `skips`."""
  for index, payload in indexed_payloads:
    try:
      article, sentences = parse_example(payload)
    except Skip as s:
      skips.skip(path, index, s.reason, s.detail)
      continue
    yield Record(article, sentences, path, index)


class DataFormat:
  """A data format as the registry (`data_formats`) holds it: a subclass sets the class
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
  """

  name: str
  label: str
  extensions: tuple[str, ...]
  pretokenized: bool
  original = False
  chunked = False

  def read(self, path, skips: SkipCounter, article_key=ARTICLE_KEY,
           abstract_key=DEFAULT_ABSTRACT_KEY) -> Iterator[Record]:
    """Yields the usable records of the file `path`, counting the others in `skips`; the field
    names are the user's (--article_key, --abstract_key), for a format that names its fields."""
    raise NotImplementedError

  def count(self, path):
    """The records in the file `path`, for progress lines and ETAs, checking up front what
    would otherwise stop a run hours in (a DataError naming the file and record)."""
    raise NotImplementedError

  def write(self, path, records):
    """Writes `records` as the one file `path`, atomically; returns how many were written."""
    raise NotImplementedError

  def check_fields(self, path, article_key, abstract_key):
    """Raises DataError when the file's records lack the fields the user named, before a run
    skips every record one warning at a time; a format with fixed fields has nothing to check."""
    del path, article_key, abstract_key

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
