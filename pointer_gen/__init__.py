"""pointer_gen: the pointer-generator network with coverage (See et al., 2017) in TF2 / Keras 3.

The code map: the package's folders are its layers, from the base up, and each folder's
`__init__.py` says what its modules hold. Data flows one way, text -> data -> model ->
training / search -> inference: a module imports only from its own layer and the layers listed
before it, and no two modules import each other, even through others (data never imports the
model, the model never training; nothing but the entry layer imports config).
tests/project/test_code_map.py reads every import and fails on one that goes up the map or closes a
loop.

  base        errors, settings, atomic files, stopping, the process's TensorFlow settings,
              precision, distribution, TensorBoard logs, the trainer's lock, checkpoints, loop
              gradients: what every layer may use
  text        the vocab, tokenisation as TensorFlow ops (ptb, cjk), text written back
  formats     the data formats, a registry (`--data_format`): the record, skipped records, the
              tf.train.Example, one module per format (the original's `.bin`, JSONL,
              TFRecord), each declaring its own settings; --data_path's files settled once
  data        the run record (`run_config.json`), how raw text became the data's tokens, the
              input pipeline (records -> padded, bucketed batches, typed), the demo corpus
  attention   the attention, a registry (`--attention_implementation`): the interface, the
              paper's equations (`eager`) and the fast implementations with their kernels
  model       the model's settings, the Keras layers, the pointer-generator, the losses
  search      the search, a registry (`--search`): the contract a strategy implements, one
              module per strategy, single-pass decode's continuous batching and the decoding
              controls every strategy applies (`search/controls/`, a registry of its own)
  training    `--mode=train` and `--mode=eval`, the training state, the run's conversions
              (coverage, best model, the original's TF1 checkpoints)
  inference   `--mode=decode` and `--mode=export`, ROUGE and n-gram figures, reference scores,
              the attention view, eval's decoded samples
The entry layer, flat at the package's top: the command line, the Python API and what only
they use:
  api         the Python API (`pointer_gen.load`, `fit`): a run loaded to summarize, evaluate
              and export; each mode run from keyword settings
  run         the entry point: parses the flags and runs api.run_settled
  settle      the flags, the run's record and the checkpoint into one HParams
  config      the flags (the original's names, defaults) and the HParams from them
  usage       `--help`: the project's flags grouped by the mode that reads them

Tools (`tools/`: the user's; `tools/dev/`: what measures the project) and the documentation
(`README.md`, `docs/`) sit beside the package.
"""

from pointer_gen.base.version import __version__

# The Python API (api.py, docs/python.md), imported when first used: importing the package
# imports no TensorFlow and changes no process-wide setting.
_API = ("fit", "load", "settings", "Summarizer", "Summary", "NBestSummary")
__all__ = list(_API)


def __getattr__(name):
  if name in _API:
    from pointer_gen import api  # pylint: disable=g-import-not-at-top
    return getattr(api, name)
  raise AttributeError(f"module 'pointer_gen' has no attribute {name!r}")


def __dir__():
  """The module's names and the API's, not yet imported: what dir() and a notebook's
  completion list."""
  return sorted({*globals(), *_API})
