"""Builds a vocab file (`word count` lines, most frequent first) from data in any format
registered in pointer_gen.formats.

  python tools/make_vocab.py --data_path='data/train_*.bin' --output=data/vocab

Beside the vocab it writes `<output>.tokenization.json`, which records --tokenizer and
--lowercase; training refuses a vocab whose record differs from its own flags. Text written
without spaces (Chinese, Japanese) read by another --tokenizer than cjk is refused, naming it.
"""

import sys

from absl import app
from absl import flags

from pointer_gen import usage
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.text import cjk
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab

FLAGS = flags.FLAGS


def define_flags():
  """Called only when run as a script, so that tests can import make_vocab beside other
  programs' flags of the same names."""
  flags.DEFINE_string("data_path", "", "Glob of the data files to count words in: "
                      f"{data_formats.extensions_help()}.")
  flags.DEFINE_enum("data_format", "auto", ("auto",) + data_formats.NAMES,
                    "Format of the input files; auto goes by the file extension.")
  flags.DEFINE_string("output", "", "Path of the vocab file to write.")
  flags.DEFINE_integer("max_size", 200000, "Most words to write (0 = all).", lower_bound=0)
  flags.DEFINE_enum("tokenizer", "whitespace", text.TOKENIZERS,
                    "whitespace for pre-tokenised data (.bin), punct for raw text, ptb for raw "
                    "English as CNN/DM's original data, cjk for text written without spaces "
                    "(Chinese, Japanese: each CJK ideograph or kana a token).")
  flags.DEFINE_bool("lowercase", False, "Lower-case the text before counting.")
  settings.define_flags(data_formats.options())  # each format's own (JSONL's field names)

# Tokenising in batches keeps the per-call overhead of the TF ops small on large data sets.
BATCH_SIZE = 256


def _texts(recs, counter):
  """Yields the article and each abstract sentence of every record, counting the records."""
  for record in recs:
    counter["records"] += 1
    yield record.article
    yield from record.abstract_sentences


def _batches(items, size):
  batch = []
  for item in items:
    batch.append(item)
    if len(batch) == size:
      yield batch
      batch = []
  if batch:
    yield batch


def _token_batches(texts, tokenizer, lowercase):
  """Yields one flat list of tokens per batch of texts; counting does not need the boundaries."""
  for batch in _batches(texts, BATCH_SIZE):
    tokens = text.tokenize(batch, tokenizer, lowercase).flat_values.numpy()
    yield [t.decode("utf-8") for t in tokens]


def make_vocab(data_path, data_format, output, max_size, tokenizer, lowercase, **fields):
  """fields: the formats' own settings by name (registry.fields_of)."""
  if not output:
    raise DataError("--output is required (the vocab file to write)")
  paths = data_files.expand_glob(data_path, "--data_path")
  skips = skips_lib.SkipCounter()
  counter = {"records": 0}
  texts = _texts(data_formats.read_records(paths, data_format, skips, **fields),
                 counter)
  counts = vocab.count_words(_token_batches(texts, tokenizer, lowercase))
  if not counter["records"]:
    raise DataError(f"--data_path={data_path}: no usable records in {len(paths)} files "
                    f"({skips.summary()})")
  # Before anything is written: such a vocab's words are whole clauses no run can use.
  found = cjk.unsplit(counts)
  if found is not None:
    raise DataError(f"--tokenizer={tokenizer} makes the words of --data_path={data_path} "
                    f"{found.said()}. Pass --tokenizer=cjk")
  written = vocab.write_vocab(output, counts, max_size)
  sidecar = vocab.write_tokenization(output, tokenizer, lowercase, data_path=data_path,
                                     max_size=max_size)
  print(f"Read {counter['records']} records from {len(paths)} files; {skips.summary()}")
  print(f"Wrote {written} words (of {len(counts)} distinct) to {output}; how they were "
        f"tokenised to {sidecar}")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    make_vocab(FLAGS.data_path, FLAGS.data_format, FLAGS.output, FLAGS.max_size,
               FLAGS.tokenizer, FLAGS.lowercase, **data_formats.fields_of(FLAGS))
  except DataError as e:
    sys.exit(f"make_vocab: error: {e}")


if __name__ == "__main__":
  define_flags()
  usage.run_tool(main)
