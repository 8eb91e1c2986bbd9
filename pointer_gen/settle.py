"""Settling the flags into the HParams a mode runs with, before anything is written (then
`record_raw_text` adds a statement of how raw text became the tokens to the run's record, and
`store_decoding_defaults` the decoding settings given with --save_decoding_defaults).

One trip down: the flags (config), the run's record (run_record, read once), the checkpoint the
mode loads (checkpoints), the run's decoding defaults for the modes that decode
(decoding_defaults), the data (formats: its files expanded and their formats found, once;
demo_data), the vocab's tokenisation (vocab) and how raw text became the tokens (raw_text), with
the tokenisation that reads the data (`HParams.reads`). Whether the model has coverage is
decided here alone (`_coverage`).
"""

import dataclasses
import os

from absl import logging
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import demo as demo_data
from pointer_gen.data import raw_text
from pointer_gen.data import run_record
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as formats_registry
from pointer_gen.search import decoding_defaults
from pointer_gen.search import registry as strategies
from pointer_gen.text import vocab as vocab_lib


def hparams(flag_values):
  """The run's HParams: the flags, with those left out taken from the run's run_config.json
  (a conflicting one is an error), the data resolved and checked and the tokenisation that reads
  it settled, before anything is written."""
  return settled(config.HParams.from_flags(flag_values), config.given_flags(flag_values))


def settled(hps, given, finds_data=None):
  """`hparams` of HParams `hps` whose fields named in `given` were set by the user (flags or the
  Python API's keywords). `finds_data`: whether the mode reads --data_path (default: every mode
  but export); a loaded run that only summarizes (api.load) reads none, and then needs neither
  data nor a statement of how raw text became the tokens until it summarizes raw text."""
  strategies.check_flags(hps, given)
  attention.check(hps, given)
  utility = hps.checkpoint_utility
  if utility and hps.mode != "train":
    raise DataError("--convert_to_coverage_model and --restore_best_model work with "
                    f"--mode=train, not --mode={hps.mode}")
  # Export reads no data; the utilities read none either, but what the data is still tells
  # how raw text became the run's tokens.
  if finds_data is None:
    finds_data = hps.mode != "export"
  reads_data = finds_data and not utility
  # The one expansion of --data_path, before any mkdir: a glob that matches nothing fails first.
  paths = data_files.expand_glob(hps.data_path) if finds_data and hps.data_path else None
  if hps.mode == "eval" and not hps.single_pass:
    checkpoints.wait_for_train_dir(hps)  # started with its trainer, it needs the trainer's record
  record = run_record.read(hps.run_dir)
  # A train dir without a checkpoint holds no model yet: training it (re)writes the record.
  recorded = None
  if utility or hps.mode != "train" or checkpoints.newest(hps.train_dir):
    hps, recorded = from_run(hps, given, record)
  if hps.mode in ("decode", "export"):
    hps = decoding_defaults.applied(hps, given)
  if finds_data or hps.mode == "export":
    hps = _resolve_data(hps, given, record)
  # The formats as the run's record may have named them (data_format is inherited).
  files = data_files.DataFiles.find(hps.data_path, hps.data_format,
                                    fields=formats_registry.fields_of(hps),
                                    paths=paths) if finds_data else None
  formats = files.formats if files is not None else ()
  if reads_data:
    files.check_fields()
  vocab_lib.check_tokenization(hps.vocab_path, hps.tokenizer, hps.lowercase, given)
  hps = raw_text.settle(hps, given, recorded, formats)
  if hps.mode == "export":
    raw_text.required(hps, "--mode=export")  # the SavedModel tokenises raw text
    return hps
  if not reads_data:
    return hps
  return hps.replace(data=dataclasses.replace(files, reads=raw_text.check_data(hps, formats)))


def record_raw_text(hps, given):
  """Adds a --raw_tokenizer statement that the run's record lacks to it, once `hps` is settled
  (`given`: the names the user set): train and the utilities write the whole record."""
  if "raw_tokenizer" in given and hps.mode != "train":
    run_record.add_raw_text(hps)


def store_decoding_defaults(hps, given):
  """With --save_decoding_defaults, stores the decoding settings in `given` (the names the user
  set) as the run's decoding defaults, once `hps` is settled (and so checked)."""
  if hps.save_decoding_defaults:
    decoding_defaults.store(hps, given)


def from_run(hps, given, recorded):
  """(`hps` with the flags not in `given` taken from the run's RunRecord `recorded`
  (run_record.read, None without one) and coverage as the checkpoint the mode loads has it,
  `recorded`)."""
  changeable = run_record.CHANGEABLE_BY_TRAIN if hps.mode == "train" else ()
  hps = run_record.reconcile(hps, given, recorded, changeable)
  # The conversion reads a model without coverage and writes one with it (--coverage).
  checkpoint = None if hps.convert_to_coverage_model else checkpoints.to_load(hps)
  return hps.replace(coverage=_coverage(hps, given, recorded, checkpoint)), recorded


def _coverage(hps, given, recorded, checkpoint):
  """Whether the model has coverage. A run directory holds checkpoints of both phases (before
  and after the coverage conversion), so the `checkpoint` the mode loads decides, and a
  --coverage in `given` (the names the user set) that contradicts it is a DataError naming
  both; without one, the flag, else the `recorded` current phase."""
  if checkpoint is None:
    if "coverage" in given or not recorded or "coverage" not in recorded.settings:
      return hps.coverage
    return recorded.settings["coverage"]
  try:
    coverage = checkpoints.has_coverage(checkpoint)
  except tf.errors.OpError as e:
    raise DataError(f"{checkpoint}: not a readable checkpoint "
                    f"({str(e).strip().splitlines()[0]})") from e
  if "coverage" in given and hps.coverage != coverage:
    if coverage:
      fact, hint = "is a coverage model (it holds w_c)", ""
    else:
      fact = "has no coverage (no w_c)"
      hint = (" (--convert_to_coverage_model turns a model trained without coverage into a "
              "coverage model)")
    raise DataError(f"--coverage={str(hps.coverage).lower()} conflicts with the checkpoint "
                    f"{checkpoint}, which {fact}: leave --coverage out to build the model as the "
                    f"checkpoint has it{hint}")
  return coverage


def _resolve_data(hps, given, recorded):
  """Fills in the demo corpus when --data_path is empty; requires --exp_name otherwise.
  `given`: the flags the user set (a vocab_path not among them came from run_config.json);
  `recorded`: the run's record or None."""
  if hps.data_path:
    if not hps.exp_name:
      raise DataError("--exp_name is required with --data_path (the run directory is "
                      "--log_root/--exp_name)")
    if not hps.vocab_path:
      raise DataError("--vocab_path is required with --data_path")
    return hps
  if hps.vocab_path and hps.mode == "export":
    return hps  # export reads only the vocab, no data
  demo_dir = os.path.join(hps.log_root or "runs", "demo_data")
  demo_vocab = demo_data.demo_vocab_path(demo_dir)
  if "vocab_path" in given and not recorded:
    raise DataError("--vocab_path was given without --data_path; give both, or neither to "
                    "use the demo corpus")
  if ("vocab_path" not in given and hps.vocab_path
      and os.path.abspath(hps.vocab_path) != os.path.abspath(demo_vocab)):
    raise DataError(f"--data_path is required: {run_record.path_in(hps.run_dir)} says this run "
                    f"was trained with the vocab {hps.vocab_path}, not on the demo corpus")
  corpus = demo_data.ensure_demo_corpus(demo_dir)
  if "vocab_path" in given:
    # In place of a recorded vocab that is gone (the run was moved): the run's vocab, the
    # checksum says, must be the demo corpus's.
    _check_is_demo_run(hps, recorded, corpus["vocab"])
  split = "train" if hps.mode == "train" else "val"
  logging.info("No --data_path: using the built-in demo corpus (%s split) at %s", split,
               corpus[split])
  return hps.replace(data_path=corpus[split], vocab_path=corpus["vocab"])


def _check_is_demo_run(hps, recorded, demo_vocab):
  expected = recorded.vocab_sha256
  if expected and run_record.file_checksum(demo_vocab) != expected:
    vocab = recorded.vocab_in(hps.run_dir)
    raise DataError(f"--data_path is required: {run_record.path_in(hps.run_dir)} says this run "
                    f"was trained with the vocab {vocab} (sha256 {expected}), not on the demo "
                    f"corpus (vocab {demo_vocab})")
