"""Converts examples between the chunked .bin format and JSON Lines.

  python tools/convert_data.py --input=data/train.jsonl --output=data/chunked --to=bin
  python tools/convert_data.py --input='data/chunked/val_*.bin' --output=val.jsonl --to=jsonl
"""

import glob
import os
import sys

from absl import app
from absl import flags

from pointer_gen import records
from pointer_gen.errors import DataError

FLAGS = flags.FLAGS
flags.DEFINE_string("input", "", "Glob of the .bin or JSONL files to convert.")
flags.DEFINE_string("output", "",
                    "--to=bin: directory for the chunked files; --to=jsonl: the .jsonl file.")
flags.DEFINE_enum("to", None, records.FORMATS, "Output format.")
flags.DEFINE_string("split", "train", "--to=bin: chunk file prefix, as in train_000.bin.")
flags.DEFINE_integer("chunk_size", 1000, "--to=bin: records per chunk file.", lower_bound=1)
flags.DEFINE_enum("data_format", "auto", ("auto",) + records.FORMATS,
                  "Format of the input files; auto goes by the file extension.")
flags.DEFINE_string("article_key", records.ARTICLE_KEY, "JSONL input: the field holding the "
                    "article.")
flags.DEFINE_string("abstract_key", records.DEFAULT_ABSTRACT_KEY, "JSONL input: the field "
                    "holding the summary (string or list of sentences). Empty: "
                    "abstract_sentences if present, else abstract.")
flags.mark_flag_as_required("to")


def _check_no_old_chunks(out_dir, split):
  # Old chunks beyond the new last one would be picked up by a later --data_path glob; they
  # could also be the very inputs being read.
  old = sorted(glob.glob(os.path.join(glob.escape(out_dir), f"{glob.escape(split)}_*.bin")))
  if old:
    raise DataError(f"--output={out_dir} already holds {len(old)} {split}_*.bin files "
                    f"(e.g. {old[0]}); remove them or choose another directory")


class _Counted:
  """Passes records through and counts them, since write_chunked only returns paths."""

  def __init__(self, recs):
    self._recs = recs
    self.count = 0

  def __iter__(self):
    for record in self._recs:
      self.count += 1
      yield record


def _write(recs, to, output, split, chunk_size):
  """Writes the records; returns (record count, paths written)."""
  counted = _Counted(recs)
  if to == "bin":
    _check_no_old_chunks(output, split)
    paths = records.write_chunked(counted, output, split, chunk_size)
  else:
    parent = os.path.dirname(output)
    if parent:
      os.makedirs(parent, exist_ok=True)
    records.write_jsonl(output, counted)
    paths = [output]
  return counted.count, paths


def _describe(paths):
  if len(paths) <= 3:
    return ", ".join(paths)
  return f"{paths[0]} ... {paths[-1]}"


def convert(input_glob, output, to, split, chunk_size, data_format,
            article_key=records.ARTICLE_KEY, abstract_key=records.DEFAULT_ABSTRACT_KEY):
  if not output:
    raise DataError("--output is required")
  paths = records.expand_glob(input_glob, "--input")
  skips = records.SkipCounter()
  recs = records.read_records(paths, data_format, skips, article_key, abstract_key)
  count, written = _write(recs, to, output, split, chunk_size)
  print(f"Read {len(paths)} files; {skips.summary()}")
  print(f"Wrote {count} records to {len(written)} {to} files: {_describe(written)}")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    convert(FLAGS.input, FLAGS.output, FLAGS.to, FLAGS.split, FLAGS.chunk_size,
            FLAGS.data_format, FLAGS.article_key, FLAGS.abstract_key)
  except DataError as e:
    sys.exit(f"convert_data: error: {e}")


if __name__ == "__main__":
  app.run(main)
