"""ROUGE of the lead baseline: each article's first N characters as its summary, N the mean
reference length in characters, scored as single-pass decode scores a model's summaries.

  python tools/lead_baseline.py --data_path=../shared/data/csl_titles/val.jsonl \
      --tokenizer=cjk --lowercase --rouge_tokenizer=cjk

The lead and the reference are tokenised as decode tokenises a reference (--tokenizer,
--lowercase: the run's), then scored by pointer_gen.inference.metrics.rouge with --rouge_tokenizer,
the same bootstrap intervals included. For text written without spaces, where a lead of N words
would be a lead of N characters anyway and a title is short, N characters is the baseline that
the papers' "lead" means (docs/decoding.md#text-written-without-spaces gives its figures).
"""

import sys

from absl import app
from absl import flags
import numpy as np

from pointer_gen import usage
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import metrics
from pointer_gen.inference import summaries
from pointer_gen.text import tokenizers as text

FLAGS = flags.FLAGS


def define_flags():
  """Called only when run as a script, so that tests can import lead_baseline beside
  pointer_gen's own flags (of the same names)."""
  flags.DEFINE_string("data_path", "", "Glob of the data files (JSONL, .bin, TFRecord) to "
                      "score.")
  flags.DEFINE_enum("data_format", "auto", ("auto",) + data_formats.NAMES,
                    "Format of the input files; auto goes by the file extension.")
  flags.DEFINE_enum("tokenizer", "cjk", text.TOKENIZERS, "How the lead and the references "
                    "become the tokens ROUGE's files hold (the run's --tokenizer).")
  flags.DEFINE_bool("lowercase", False, "Lower-case them too (the run's --lowercase).")
  flags.DEFINE_enum("rouge_tokenizer", "cjk", metrics.TOKENIZERS, metrics.TOKENIZERS_HELP)
  flags.DEFINE_integer("lead_chars", 0, "Characters of each article taken; 0: the mean length "
                       "of the references in characters, rounded.", lower_bound=0)
  settings.define_flags(data_formats.options())  # each format's own (JSONL's field names)


def lead_baseline(data_path, data_format, tokenizer, lowercase, rouge_tokenizer, lead_chars=0,
                  **fields):
  """(N, metrics.rouge's result) of the lead baseline on the records of `data_path`."""
  paths = data_files.expand_glob(data_path, "--data_path")
  records = list(data_formats.read_records(paths, data_format, skips_lib.SkipCounter(), **fields))
  if not records:
    raise DataError(f"--data_path={data_path}: no usable records in {len(paths)} files")
  if not lead_chars:
    lead_chars = round(float(np.mean([sum(len(s) for s in r.abstract_sentences)
                                      for r in records])))
  decoded = summaries.references_sentences([r.article[:lead_chars] for r in records],
                                           tokenizer, lowercase)
  references = summaries.references_sentences(
      ["\n".join(r.abstract_sentences) for r in records], tokenizer, lowercase)
  return lead_chars, metrics.rouge(decoded, references, tokenizer=rouge_tokenizer)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    lead_chars, result = lead_baseline(FLAGS.data_path, FLAGS.data_format, FLAGS.tokenizer,
                                       FLAGS.lowercase, FLAGS.rouge_tokenizer, FLAGS.lead_chars,
                                       **data_formats.fields_of(FLAGS))
  except DataError as e:
    sys.exit(f"lead_baseline: error: {e}")
  print(f"Lead baseline (each article's first {lead_chars} characters) on "
        f"{len(result['per_example']['rouge_1'])} examples of {FLAGS.data_path}, "
        f"--rouge_tokenizer={FLAGS.rouge_tokenizer}:")
  for key, name in (("rouge_1", "ROUGE-1"), ("rouge_2", "ROUGE-2"), ("rouge_l", "ROUGE-L")):
    f_score = result[key]["f_score"]
    print(f"  {name} F {f_score['mid']:.4f} (95% interval {f_score['low']:.4f}-"
          f"{f_score['high']:.4f})")


if __name__ == "__main__":
  define_flags()
  usage.run_tool(main)
