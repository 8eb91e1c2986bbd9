"""Reading and writing examples in the two on-disk formats: chunked `.bin` and JSON Lines.

`.bin` is the original's format: records of an 8-byte little-endian signed length
followed by that many bytes of a serialized `tf.train.Example` with `article` and `abstract` bytes
features. JSONL holds one object per line with `article` and `abstract_sentences` (or `abstract`);
other field names (Hugging Face's `highlights`, `document`, `summary`, ...) are chosen with
`article_key` and `abstract_key` (the --article_key and --abstract_key flags).

A record whose framing is broken raises `DataError`, because nothing after it can be located
reliably. A record that is framed correctly but unusable is skipped, counted and logged, so that
one bad example does not stop a long run.
"""

import collections
import glob
import itertools
import json
import os
import struct
from typing import Iterator, NamedTuple

from absl import logging
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
import tensorflow as tf

from pointer_gen import files
from pointer_gen.errors import DataError
from pointer_gen.vocab import SENTENCE_END, SENTENCE_START

FORMATS = ("bin", "jsonl")
_EXTENSIONS = {".bin": "bin", ".jsonl": "jsonl", ".jl": "jsonl", ".json": "jsonl"}
_LENGTH = struct.Struct("<q")
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


def detect_format(path, data_format="auto"):
  """Returns "bin" or "jsonl" for `path`, from `data_format` or else from the file extension."""
  if data_format in FORMATS:
    return data_format
  if data_format != "auto":
    raise DataError(f"--data_format={data_format!r}: expected auto, bin or jsonl")
  ext = os.path.splitext(path)[1].lower()
  if ext not in _EXTENSIONS:
    raise DataError(f"{path}: cannot tell the data format from the extension {ext!r} "
                    f"(known: {', '.join(_EXTENSIONS)}); pass --data_format=bin|jsonl")
  return _EXTENSIONS[ext]


class SkipCounter:
  """Counts skipped records by reason and logs the first few of each reason. A record is counted
  and logged once, however many passes over the data meet it (training reads its files again
  every epoch)."""

  def __init__(self):
    self.counts = collections.Counter()
    self._seen = set()  # (source, index) of the records counted

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

  def summary(self):
    if not self.counts:
      return "skipped 0 records"
    parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.counts.items()))
    text = f"skipped {self.total} records ({parts})"
    if max(self.counts.values()) > MAX_LOGGED_PER_REASON:
      text += f"; only the first {MAX_LOGGED_PER_REASON} of each reason were logged"
    return text


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


def check_bin_framing(path):
  """Returns the number of records in a .bin file, checking only the length prefixes."""
  with open(path, "rb") as f:
    return sum(1 for _ in _frames(f, path, read_payload=False))


def count_records(path, data_format="auto"):
  """Records in a file (bin: from its framing, which is checked; jsonl: non-blank lines), for
  progress lines and ETAs."""
  if detect_format(path, data_format) == "bin":
    return check_bin_framing(path)
  with open(path, "rb") as f:
    return sum(1 for line in f if line.strip())


class _Skip(Exception):
  """A record that cannot be used; carries the reason and detail for `SkipCounter.skip`."""

  def __init__(self, reason, detail=""):
    super().__init__(reason)
    self.reason = reason
    self.detail = detail


def _bytes_feature(example, name):
  feature = example.features.feature
  if name not in feature:
    raise _Skip(f"missing '{name}' feature", f"features: {', '.join(sorted(feature)) or 'none'}")
  kind = feature[name].WhichOneof("kind")
  if kind != "bytes_list" or not feature[name].bytes_list.value:
    raise _Skip(f"'{name}' feature is not a non-empty bytes_list", f"kind: {kind}")
  # The format has no checksum, and a damaged length byte inside a payload can still parse:
  # the text is cut short and its rest becomes an unknown field or a second value. No writer
  # produces either, so they mark a damaged record rather than a text to take.
  values = feature[name].bytes_list
  if (len(values.value) > 1 or unknown_fields.UnknownFieldSet(values)
      or unknown_fields.UnknownFieldSet(feature[name])):
    raise _Skip("damaged tf.train.Example",
                f"'{name}' feature: {len(values.value)} values or unknown fields")
  try:
    return feature[name].bytes_list.value[0].decode("utf-8")
  except UnicodeDecodeError as e:
    raise _Skip("invalid UTF-8", f"'{name}' feature, byte {e.start}: {e.reason}") from e


def _check_article(article):
  if not article.strip():
    raise _Skip("empty article")


def _parse_example(payload):
  try:
    example = tf.train.Example.FromString(payload)
  except DecodeError as e:
    raise _Skip("not a tf.train.Example", str(e)) from e
  article = _bytes_feature(example, "article")
  abstract = _bytes_feature(example, "abstract")
  _check_article(article)
  return article, abstract_to_sentences(abstract)


def read_bin(path, skips: SkipCounter) -> Iterator[Record]:
  """Yields the usable records of a .bin file; broken framing raises DataError."""
  with open(path, "rb") as f:
    for index, payload in _frames(f, path, read_payload=True):
      try:
        article, sentences = _parse_example(payload)
      except _Skip as s:
        skips.skip(path, index, s.reason, s.detail)
        continue
      yield Record(article, sentences, path, index)


def _json_object(raw, index):
  # A BOM is how some editors start a UTF-8 file; json.loads would reject it.
  encoding = "utf-8-sig" if index == 0 else "utf-8"
  try:
    line = raw.decode(encoding)
  except UnicodeDecodeError as e:
    raise _Skip("invalid UTF-8", f"line {index + 1}, byte {e.start}: {e.reason}") from e
  try:
    obj = json.loads(line)
  # Besides JSONDecodeError (a ValueError), json.loads raises a plain ValueError for integers
  # over Python's digit limit and RecursionError for deeply nested arrays or objects.
  except (ValueError, RecursionError) as e:
    raise _Skip("invalid JSON", f"line {index + 1}: {e}") from e
  if not isinstance(obj, dict):
    raise _Skip("not a JSON object", f"line {index + 1}: got {type(obj).__name__}")
  return obj


def _json_abstract(obj, index, abstract_key=DEFAULT_ABSTRACT_KEY):
  if abstract_key:
    return _named_abstract(obj, index, abstract_key)
  if "abstract_sentences" in obj:
    sentences = obj["abstract_sentences"]
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
      raise _Skip("wrong type for 'abstract_sentences'",
                  f"line {index + 1}: expected a list of strings")
    return sentences
  if "abstract" not in obj:
    raise _Skip("missing field 'abstract_sentences' or 'abstract'", f"line {index + 1}")
  abstract = obj["abstract"]
  if not isinstance(abstract, str):
    raise _Skip("wrong type for 'abstract'",
                f"line {index + 1}: expected a string, got {type(abstract).__name__}")
  return _abstract_string(abstract)


def _named_abstract(obj, index, key):
  """The abstract in the field `key`: a list of sentences, or a string as `abstract`."""
  if key not in obj:
    raise _Skip(f"missing field '{key}'", f"line {index + 1}")
  value = obj[key]
  if isinstance(value, list) and all(isinstance(s, str) for s in value):
    return value
  if not isinstance(value, str):
    raise _Skip(f"wrong type for '{key}'", f"line {index + 1}: expected a string or a list of "
                f"strings, got {type(value).__name__}")
  return _abstract_string(value)


def _abstract_string(abstract):
  if SENTENCE_START in abstract:
    return abstract_to_sentences(abstract)
  return [abstract]


def _parse_json_line(raw, index, article_key=ARTICLE_KEY, abstract_key=DEFAULT_ABSTRACT_KEY):
  obj = _json_object(raw, index)
  if article_key not in obj:
    raise _Skip(f"missing field '{article_key}'", f"line {index + 1}")
  article = obj[article_key]
  if not isinstance(article, str):
    raise _Skip(f"wrong type for '{article_key}'",
                f"line {index + 1}: expected a string, got {type(article).__name__}")
  sentences = _json_abstract(obj, index, abstract_key)
  _check_article(article)
  for text in [article, *sentences]:
    _check_encodable(text, index)
  return article, sentences


def _check_encodable(text, index):
  # JSON escapes can spell lone surrogates (\ud800), which no UTF-8 string tensor can hold.
  try:
    text.encode("utf-8")
  except UnicodeEncodeError as e:
    raise _Skip("invalid UTF-8", f"line {index + 1}: lone surrogate escape "
                f"\\u{ord(e.object[e.start]):04x}") from e


def _first_object(path):
  """(line index, object) of the first line of a JSONL file that holds a JSON object, or None."""
  with open(path, "rb") as f:
    for index, raw in enumerate(f):
      try:
        obj = json.loads(raw.decode("utf-8-sig"))
      except (ValueError, RecursionError):  # blank, broken or not UTF-8: the reader skips it
        continue
      if isinstance(obj, dict):
        return index, obj
  return None


def summary_key(path, article_key=ARTICLE_KEY, abstract_key=DEFAULT_ABSTRACT_KEY,
                other_abstract_keys=()):
  """The abstract_key to read a JSONL file with, from its first record (a file's records share
  their fields, and a file whose first record lacks one would be skipped whole, a record at a
  time): the one given, or without one the default (abstract_sentences, else abstract), else the
  first of `other_abstract_keys` the record has. A first record without the article field or the
  summary field is a DataError naming the fields it has and the flag to give."""
  first = _first_object(path)
  if first is None:
    return abstract_key  # no record to go by: each line is skipped and counted
  index, obj = first
  where = f"{path}: line {index + 1} has the fields {', '.join(sorted(obj)) or '(none)'}"
  if article_key not in obj:
    raise DataError(f"{where}, no --article_key={article_key}: give the field of the article")
  if abstract_key:
    if abstract_key not in obj:
      raise DataError(f"{where}, no --abstract_key={abstract_key}: give the field of the summary")
    return abstract_key
  if "abstract_sentences" in obj or "abstract" in obj:
    return abstract_key
  for key in other_abstract_keys:
    if key in obj:
      return key
  *keys, last = ("abstract_sentences", "abstract", *other_abstract_keys)
  known = f"{', '.join(keys)} or {last}"
  raise DataError(f"{where}, none of {known}: give the field of the summary with --abstract_key")


def read_jsonl(path, skips: SkipCounter, article_key=ARTICLE_KEY,
               abstract_key=DEFAULT_ABSTRACT_KEY) -> Iterator[Record]:
  """Yields the usable records of a JSON Lines file; blank lines are ignored."""
  # Binary mode: only b"\n" ends a line, and one bad byte costs one record, not the file.
  with open(path, "rb") as f:
    for index, raw in enumerate(f):
      if not raw.strip():
        continue
      try:
        article, sentences = _parse_json_line(raw, index, article_key, abstract_key)
      except _Skip as s:
        skips.skip(path, index, s.reason, s.detail)
        continue
      yield Record(article, sentences, path, index)


def read_records(paths, data_format, skips: SkipCounter, article_key=ARTICLE_KEY,
                 abstract_key=DEFAULT_ABSTRACT_KEY) -> Iterator[Record]:
  """Yields the records of each file in the given order, each with its format's reader; the
  JSONL field names apply to JSONL files (.bin features are always `article`, `abstract`)."""
  # Formats are resolved up front so a bad extension fails before any work is done.
  formats = [detect_format(p, data_format) for p in paths]
  for path, fmt in zip(paths, formats):
    if fmt == "bin":
      yield from read_bin(path, skips)
    else:
      yield from read_jsonl(path, skips, article_key, abstract_key)


def _abstract_text(record):
  """Wraps sentences in tags; a sentence that holds a tag would not read back, so refuse it."""
  for s in record.abstract_sentences:
    if SENTENCE_START in s or SENTENCE_END in s:
      raise DataError(f"{record.source}: record {record.index}: abstract sentence contains "
                      f"{SENTENCE_START!r} or {SENTENCE_END!r}, which the .bin format uses "
                      f"as sentence delimiters: {s!r}")
  return " ".join(f"{SENTENCE_START} {s} {SENTENCE_END}" for s in record.abstract_sentences)


def _serialize(record):
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


def write_bin(path, records):
  """Writes records as one .bin file (atomically); returns how many were written."""
  count = 0
  with files.atomic_file(path, "wb") as f:
    for record in records:
      payload = _serialize(record)
      f.write(_LENGTH.pack(len(payload)))
      f.write(payload)
      count += 1
  return count


def write_chunked(records, out_dir, split, chunk_size=1000):
  """Writes `{split}_000.bin`, `{split}_001.bin`, ... of `chunk_size` records; returns the paths."""
  if chunk_size < 1:
    raise ValueError(f"chunk_size must be positive, got {chunk_size}")
  os.makedirs(out_dir, exist_ok=True)
  records = iter(records)
  paths = []
  for chunk_index in itertools.count():
    chunk = list(itertools.islice(records, chunk_size))
    if not chunk:
      return paths
    path = os.path.join(out_dir, f"{split}_{chunk_index:03d}.bin")
    write_bin(path, chunk)
    paths.append(path)


def write_jsonl(path, records):
  """Writes records as one JSON Lines file (atomically); returns how many were written."""
  count = 0
  with files.atomic_file(path, "wb") as f:
    for record in records:
      obj = {
          "article": record.article,
          "abstract": " ".join(record.abstract_sentences),
          "abstract_sentences": list(record.abstract_sentences),
      }
      f.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")
      count += 1
  return count
