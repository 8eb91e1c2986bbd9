"""Converts examples between the data formats registered in pointer_gen.formats (.bin as
chunked files).

  python tools/convert_data.py --input=data/train.jsonl --output=data/chunked --to=bin
  python tools/convert_data.py --input='data/chunked/val_*.bin' --output=val.jsonl --to=jsonl
  python tools/convert_data.py --input='data/chunked/val_*.bin' --output=val.tfrecord \
      --to=tfrecord

The article and abstract sentences are written as read: a .bin converted to TFRecord holds the
same strings, tokens already, as its tf.train.Examples. Raw text (JSONL) written into a
pre-tokenised format (.bin, TFRecord) stays raw text, which a run reads with --tokenizer and
--lowercase: give the ones the JSONL is read with for the same tokens (tools/make_datafiles.py
tokenises raw text as the original's data was).
"""

import glob
import os
import sys

from absl import app
from absl import flags

from pointer_gen import usage
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib

FLAGS = flags.FLAGS
flags.DEFINE_string("input", "", "Glob of the files to convert (any format).")
flags.DEFINE_string("output", "", "--to=bin: directory for the chunked files; --to=jsonl or "
                    "--to=tfrecord: the file.")
flags.DEFINE_enum("to", None, data_formats.NAMES, "Output format.")
flags.DEFINE_string("split", "train", "--to=bin: chunk file prefix, as in train_000.bin.")
flags.DEFINE_integer("chunk_size", 1000, "--to=bin: records per chunk file.", lower_bound=1)
flags.DEFINE_enum("data_format", "auto", ("auto",) + data_formats.NAMES,
                  "Format of the input files; auto goes by the file extension.")
settings.define_flags(data_formats.options())  # each format's own (JSONL's field names)
flags.mark_flag_as_required("to")


def _check_no_old_chunks(out_dir, split, extension):
  # Old chunks beyond the new last one would be picked up by a later --data_path glob; they
  # could also be the very inputs being read.
  pattern = f"{glob.escape(split)}_*{extension}"
  old = sorted(glob.glob(os.path.join(glob.escape(out_dir), pattern)))
  if old:
    raise DataError(f"--output={out_dir} already holds {len(old)} {split}_*{extension} files "
                    f"(e.g. {old[0]}); remove them or choose another directory")


class _Counted:
  """Passes records through and counts them, since write_chunks only returns paths."""

  def __init__(self, recs):
    self._recs = recs
    self.count = 0

  def __iter__(self):
    for record in self._recs:
      self.count += 1
      yield record


def _write(recs, to, output, split, chunk_size):
  """Writes the records in the format `to`; returns (record count, paths written)."""
  data_format = data_formats.get(to)
  counted = _Counted(recs)
  if data_format.chunked:
    _check_no_old_chunks(output, split, data_format.extensions[0])
    paths = data_format.write_chunks(counted, output, split, chunk_size)
  else:
    parent = os.path.dirname(output)
    if parent:
      os.makedirs(parent, exist_ok=True)
    data_format.write(output, counted)
    paths = [output]
  return counted.count, paths


def _describe(paths):
  if len(paths) <= 3:
    return ", ".join(paths)
  return f"{paths[0]} ... {paths[-1]}"


def convert(input_glob, output, to, split, chunk_size, data_format, **fields):
  """fields: the input formats' own settings by name (registry.fields_of)."""
  if not output:
    raise DataError("--output is required")
  paths = data_files.expand_glob(input_glob, "--input")
  skips = skips_lib.SkipCounter()
  recs = data_formats.read_records(paths, data_format, skips, **fields)
  count, written = _write(recs, to, output, split, chunk_size)
  print(f"Read {len(paths)} files; {skips.summary()}")
  print(f"Wrote {count} records to {len(written)} {to} files: {_describe(written)}")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    convert(FLAGS.input, FLAGS.output, FLAGS.to, FLAGS.split, FLAGS.chunk_size,
            FLAGS.data_format, **data_formats.fields_of(FLAGS))
  except DataError as e:
    sys.exit(f"convert_data: error: {e}")


if __name__ == "__main__":
  usage.run_tool(main)
