"""pointer_gen: the pointer-generator network with coverage (See et al., 2017) in TF2 / Keras 3.

The code map, by layer, from the base up; a package (`formats`, `search`) is one entry. Data
flows one way, files -> examples -> batches -> model -> loss -> training, then search -> decode:
a module imports only from its own layer and the layers listed before it (data never imports the
model, layers never the model, losses never train; nothing but the entry layer imports config).
tests/test_code_map.py reads every import and fails on one that goes up the map.

The base, which every layer may use:
  errors               the errors for bad user input, naming the file, record or flag
  settings             a component's own settings declared as flags beside its code
  files                atomic writes: a reader sees the old file or the complete new one
  stopping             Ctrl-C and SIGTERM as one clean stop between steps
  environment          the process's TensorFlow settings: CPU allocator, XLA's vector width
                       (the command line's choice), optimiser, --debug
  precision            `--precision`: the Keras dtype policy, float32 or mixed_bfloat16
  distribute           `--strategy`: one device, local GPUs, many workers, TPU
  tensorboard_log      TensorBoard scalars, text and pictures written with core TensorFlow alone
  cjk                  text written without spaces: the characters `--tokenizer=cjk` splits
                       off, and its rule in plain Python for ROUGE
  metrics              ROUGE with intervals, n-gram figures (no TensorFlow)
  run_lock             one trainer per run directory: the flock on `<run>/trainer.lock`
  checkpoints          where checkpoints live; which one each mode loads and how it restores it
Files and examples:
  formats              the data formats, a package: the record, skipped records, the
                       tf.train.Example, the DataFormat interface and registry
                       (`--data_format`), one module per format (the original's `.bin`, JSONL,
                       TFRecord), each declaring its own settings; --data_path's files settled
                       once (DataFiles)
  vocab                the original's vocab file and the `.tokenization.json` beside it
  text                 tokenisation as TensorFlow ops, shared by training and serving
  ptb                  `--tokenizer=ptb`: CoreNLP 3.7.0's PTBTokenizer as RE2 rewrites
  raw_text             how raw text became the data's tokens, apart from how files are read
  run_record           `<run>/run_config.json`: the model's settings, which every mode follows
Batches:
  data                 the input pipeline: records -> id tensors -> padded, bucketed batches
The model:
  model_config         the model's sizes and switches: one value the model and its cell hold
  loop_gradients       a loop's gradients taken once around it: sums over its steps after it,
                       kernels transposed before it (the encoder's, the attention's states)
  attention            the attention, a package: the interface (the whole step, from the
                       layer's weights), the paper's equations (`eager`) and the fast
                       implementations with their kernels, registered by name
                       (--attention_implementation), auto's table of defaults by context
  layers               the Keras layers: encoder, reduce-state, attention, decoder cell
  model                the pointer-generator: embedding, encoder, decoder loop
The loss:
  losses               masked NLL (pointer or baseline form) and the coverage loss
Training:
  training_state       the model, its Adagrad and the step as one checkpoint; the train dir's upkeep
  train                `--mode=train`: the loop, its saves, TensorBoard, non-finite guard
  evaluate             `--mode=eval`: scores checkpoints on validation data, keeps the best
Decoding and serving:
  search               the search, a package: the contract a strategy implements and its
                       registry (`--search`), one module per strategy (registry.py names them) each
                       declaring its own settings, single-pass decode's continuous batching and
                       the decoding controls every strategy applies (`search/controls/`)
  reference_scores     `--score_references`: the model's score of each reference summary, as
                       training's loss
  decode               `--mode=decode`: single-pass with ROUGE, or endless with attention
  attention_view       a summary's attention as decode's JSON record and as a picture (its
                       text in Pillow's bundled font)
  eval_samples         `--eval_samples`: eval's decoded articles for TensorBoard, handed to
                       evaluate by the entry point
  export               `--mode=export`: a self-contained SavedModel, raw text to summaries

The entry layer: the command line, the Python API and what only they use:
  api                  the Python API (`pointer_gen.load`, `fit`): a run loaded to summarize,
                       evaluate and export; each mode run from keyword settings
  run                  the entry point: parses the flags and runs api.run_settled
  settle               the flags, the run's record and the checkpoint into one HParams
  config               the flags (the original's names, defaults) and the HParams from them
  usage                `--help`: the project's flags grouped by the mode that reads them
  train_utilities      `--convert_to_coverage_model` and `--restore_best_model`
  tf1_checkpoint       reads the original TF1 code's checkpoints into a run
  demo_data            the built-in demo corpus, generated in the `.bin` format

Tools (`tools/`) and the documentation (`README.md`, `docs/`) sit beside the package.
"""

__version__ = "0.1.0"

# The Python API (api.py, docs/python.md), imported when first used: importing the package
# imports no TensorFlow and changes no process-wide setting.
_API = ("fit", "load", "Summarizer", "Summary")
__all__ = list(_API)


def __getattr__(name):
  if name in _API:
    from pointer_gen import api  # pylint: disable=g-import-not-at-top
    return getattr(api, name)
  raise AttributeError(f"module 'pointer_gen' has no attribute {name!r}")
