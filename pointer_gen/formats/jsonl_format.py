"""JSON Lines: one object per line with `article` and `abstract_sentences` (or `abstract`), raw
text. Other field names (Hugging Face's `highlights`, `document`, `summary`, ...) are chosen with
its settings, `article_key` and `abstract_key` (the --article_key and --abstract_key flags)."""

import dataclasses
import json

from pointer_gen.base import files
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats.skips import Skip
from pointer_gen.text import vocab as vocab_lib

ARTICLE_KEY = "article"
# The default abstract_key: `abstract_sentences` (a list of strings) when the object has it,
# else `abstract` (a string).
DEFAULT_ABSTRACT_KEY = ""


def _named(value):
  return None if value else "must name the JSONL field that holds the article"


@dataclasses.dataclass(frozen=True)
class JsonlSettings(settings.Settings):
  """JSONL's own settings: the fields that hold the article and the summary."""
  article_key: str = settings.setting(
      ARTICLE_KEY, "JSONL: the field holding the article (Hugging Face XSum: document; "
      "text/summary files: text).", _named)
  abstract_key: str = settings.setting(
      DEFAULT_ABSTRACT_KEY, "JSONL: the field holding the summary, a string or a list of "
      "sentences (Hugging Face CNN/DM: highlights; XSum: summary). Empty: abstract_sentences if "
      "the object has it, else abstract.")


def _json_object(raw, index):
  # A BOM is how some editors start a UTF-8 file; json.loads would reject it.
  encoding = "utf-8-sig" if index == 0 else "utf-8"
  try:
    line = raw.decode(encoding)
  except UnicodeDecodeError as e:
    raise Skip("invalid UTF-8", f"line {index + 1}, byte {e.start}: {e.reason}") from e
  try:
    # Without its end, which would make a cut-off line's fault a second line's first column.
    obj = json.loads(line.rstrip("\r\n"))
  except json.JSONDecodeError as e:
    # Its own message counts lines and columns within the string: the file's line number and
    # the column in that line say where instead.
    raise Skip("invalid JSON", f"line {index + 1}, column {e.pos + 1}: {e.msg}") from e
  # Besides JSONDecodeError, json.loads raises a plain ValueError for integers over Python's
  # digit limit and RecursionError for deeply nested arrays or objects.
  except (ValueError, RecursionError) as e:
    raise Skip("invalid JSON", f"line {index + 1}: {e}") from e
  if not isinstance(obj, dict):
    raise Skip("not a JSON object", f"line {index + 1}: got {type(obj).__name__}")
  return obj


def _json_abstract(obj, index, abstract_key=DEFAULT_ABSTRACT_KEY):
  if abstract_key:
    return _named_abstract(obj, index, abstract_key)
  if "abstract_sentences" in obj:
    sentences = obj["abstract_sentences"]
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
      raise Skip("wrong type for 'abstract_sentences'",
                         f"line {index + 1}: expected a list of strings")
    return sentences
  if "abstract" not in obj:
    raise Skip("missing field 'abstract_sentences' or 'abstract'", f"line {index + 1}")
  abstract = obj["abstract"]
  if not isinstance(abstract, str):
    raise Skip("wrong type for 'abstract'",
                       f"line {index + 1}: expected a string, got {type(abstract).__name__}")
  return _abstract_string(abstract)


def _named_abstract(obj, index, key):
  """The abstract in the field `key`: a list of sentences, or a string as `abstract`."""
  if key not in obj:
    raise Skip(f"missing field '{key}'", f"line {index + 1}")
  value = obj[key]
  if isinstance(value, list) and all(isinstance(s, str) for s in value):
    return value
  if not isinstance(value, str):
    raise Skip(f"wrong type for '{key}'", f"line {index + 1}: expected a string or a "
                       f"list of strings, got {type(value).__name__}")
  return _abstract_string(value)


def _abstract_string(abstract):
  if vocab_lib.SENTENCE_START in abstract:
    return base.abstract_to_sentences(abstract)
  return [abstract]


def _parse_json_line(raw, index, article_key=ARTICLE_KEY,
                     abstract_key=DEFAULT_ABSTRACT_KEY):
  obj = _json_object(raw, index)
  if article_key not in obj:
    raise Skip(f"missing field '{article_key}'", f"line {index + 1}")
  article = obj[article_key]
  if not isinstance(article, str):
    raise Skip(f"wrong type for '{article_key}'",
                       f"line {index + 1}: expected a string, got {type(article).__name__}")
  sentences = _json_abstract(obj, index, abstract_key)
  base.check_article(article)
  for text in [article, *sentences]:
    _check_encodable(text, index)
  return article, sentences


def _check_encodable(text, index):
  # JSON escapes can spell lone surrogates (\ud800), which no UTF-8 string tensor can hold.
  try:
    text.encode("utf-8")
  except UnicodeEncodeError as e:
    raise Skip("invalid UTF-8", f"line {index + 1}: lone surrogate escape "
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


def summary_key(path, article_key=ARTICLE_KEY,
                abstract_key=DEFAULT_ABSTRACT_KEY, other_abstract_keys=()):
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


class JsonlFormat(base.DataFormat):
  """JSON Lines; blank lines are ignored, a bad line is one skipped record."""

  name = "jsonl"
  label = "JSONL"
  extensions = (".jsonl", ".jl", ".json")
  pretokenized = False
  Options = JsonlSettings

  def read(self, path, skips, options=None):
    options = options or self.Options()
    # Binary mode: only b"\n" ends a line, and one bad byte costs one record, not the file.
    with open(path, "rb") as f:
      for index, raw in enumerate(f):
        if not raw.strip():
          continue
        try:
          article, sentences = _parse_json_line(raw, index, options.article_key,
                                                options.abstract_key)
        except Skip as s:
          skips.skip(path, index, s.reason, s.detail)
          continue
        yield base.Record(article, sentences, path, index)

  def count(self, path, options=None):
    """The non-blank lines (a record a line, whatever the field names)."""
    del options
    with open(path, "rb") as f:
      return sum(1 for line in f if line.strip())

  def write(self, path, recs):
    count = 0
    with files.atomic_file(path, "wb") as f:
      for record in recs:
        obj = {
            "article": record.article,
            "abstract": " ".join(record.abstract_sentences),
            "abstract_sentences": list(record.abstract_sentences),
        }
        f.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")
        count += 1
    return count

  def check_fields(self, path, options):
    summary_key(path, options.article_key, options.abstract_key)


JSONL = JsonlFormat()
