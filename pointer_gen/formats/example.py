"""The `tf.train.Example` that the original's `.bin` files and TFRecord files hold: `article` and
`abstract` bytes features, the abstract's sentences in `<s> ... </s>` tags; read (a damaged one
skipped) and written byte for byte the same."""

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
import tensorflow as tf

from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats.skips import Skip
from pointer_gen.text.vocab import SENTENCE_END, SENTENCE_START


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


def parse_example(payload):
  """(article, abstract sentences) of the bytes of a `tf.train.Example`; Skip when unusable."""
  try:
    example = tf.train.Example.FromString(payload)
  except DecodeError as e:
    raise Skip("not a tf.train.Example", str(e)) from e
  article = _bytes_feature(example, "article")
  abstract = _bytes_feature(example, "abstract")
  base.check_article(article)
  return article, base.abstract_to_sentences(abstract)


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
    yield base.Record(article, sentences, path, index)
