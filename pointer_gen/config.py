"""Flags of the original code (same names and defaults) and the hyper-parameters built from them."""

import dataclasses
import os

from absl import flags

from pointer_gen import attention
from pointer_gen import metrics
from pointer_gen import settings
from pointer_gen.errors import DataError
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as formats_registry
from pointer_gen.precision import PRECISIONS
from pointer_gen.search import registry as search_registry
from pointer_gen.search.controls import registry as controls_registry
from pointer_gen.search.contract import FIRST_STEP_CONTEXTS
from pointer_gen.text import TOKENIZERS

MODES = ("train", "eval", "decode", "export")
CLIP_NORMS = ("original", "true")


def define_flags():
  """Defines every flag on absl's global FLAGS; call once, from the entry point."""
  f = flags
  f.DEFINE_enum("mode", "train", list(MODES), "train, eval, decode or export.")
  f.DEFINE_string("data_path", "", "Glob of data files: "
                  f"{formats_registry.extensions_help()}. Empty: the built-in demo corpus (its "
                  "train split in train mode, val otherwise).")
  f.DEFINE_string("vocab_path", "", "Vocab file ('word count' lines). Empty with no "
                  "--data_path: the demo corpus's vocab.")
  f.DEFINE_enum("data_format", "auto", ["auto", *formats_registry.NAMES],
                "Format of --data_path files; auto: from the file extension.")
  f.DEFINE_enum("tokenizer", "whitespace", list(TOKENIZERS),
                "How the data files' text is split into tokens. whitespace: the text is "
                "pre-tokenised (.bin: CNN/DM's finished_files, vietnews); punct: also split "
                "punctuation off words (raw JSONL text); ptb: raw English as the original's "
                "CNN/DM data (CoreNLP 3.7.0's PTBTokenizer, a period added to each line); cjk: "
                "as punct, and each CJK ideograph or kana a token of its own (Chinese, "
                "Japanese: text written without spaces).")
  f.DEFINE_boolean("lowercase", False, "Lower-case text before tokenising (raw JSONL text).")
  f.DEFINE_enum("raw_tokenizer", None, list(TOKENIZERS),
                "How raw text became the tokens of pre-tokenised data, and so of the model: "
                "export builds it into the SavedModel, decode applies it to raw JSONL. Known "
                "from the run's run_config.json, the vocab's .tokenization.json "
                "(tools/make_datafiles.py writes one) or JSONL training data (--tokenizer); "
                "else state it once (train, export, decode or tools/convert_tf1_checkpoint.py) "
                "and it is recorded: ptb with --raw_lowercase for the original's finished_files "
                "and pretrained models. Contradicting a record is an error.")
  f.DEFINE_boolean("raw_lowercase", None, "With --raw_tokenizer: raw text was lower-cased too "
                   "(left out with --raw_tokenizer: false).")
  settings.define_flags(formats_registry.settings())  # each format's own, as it declares them
  f.DEFINE_boolean("single_pass", False, "One ordered pass over the data (eval/decode of a "
                   "fixed checkpoint) instead of shuffled batches forever.")
  f.DEFINE_string("log_root", "", "Root directory for all runs. Empty: ./runs")
  f.DEFINE_string("exp_name", "", "Run name; the run directory is log_root/exp_name. Empty: "
                  "'demo' on the demo corpus.")
  f.DEFINE_integer("hidden_dim", 256, "Dimension of the LSTM hidden states.")
  f.DEFINE_integer("emb_dim", 128, "Dimension of the word embeddings.")
  f.DEFINE_integer("batch_size", 16, "Minibatch size (per replica).")
  f.DEFINE_integer("max_enc_steps", 400, "Max article tokens (longer articles are truncated).")
  f.DEFINE_integer("max_dec_steps", 100, "Max summary tokens (decoder steps).")
  f.DEFINE_enum("search", search_registry.DEFAULT, list(search_registry.STRATEGIES),
                search_registry.search_help())
  settings.define_flags(search_registry.settings())  # each strategy's own, as declared
  settings.define_flags(controls_registry.settings())  # each decoding control's, as declared
  f.DEFINE_boolean("score_references", False, "With --mode=decode --single_pass: instead of "
                   "decoding, score each reference summary under the model (log-likelihood, "
                   "token NLL, coverage loss, copy share) into scores_<...>/scores.jsonl with "
                   "the corpus means in scores.json.")
  f.DEFINE_integer("vocab_size", 50000, "Vocab entries read from the file, the 4 specials "
                   "included; 0 reads the whole file.")
  f.DEFINE_boolean("allow_unknown_words", False, "Train even when over half of the first "
                   "articles' tokens are out of the vocabulary (a vocab of other data, a small "
                   "--vocab_size, another tokenisation), which is refused otherwise.")
  f.DEFINE_float("lr", 0.15, "Adagrad learning rate.")
  f.DEFINE_float("adagrad_init_acc", 0.1, "Initial Adagrad accumulator value.")
  f.DEFINE_float("rand_unif_init_mag", 0.02, "Magnitude of the LSTM weights' uniform init.")
  f.DEFINE_float("trunc_norm_init_std", 1e-4, "Std of the truncated-normal init.")
  f.DEFINE_float("max_grad_norm", 2.0, "Global-norm gradient clipping threshold.")
  f.DEFINE_enum("clip_norm", "original", list(CLIP_NORMS), "The global norm that "
                "--max_grad_norm clips with (and the logged global_norm). original: as the "
                "original's graph, each looked-up token's embedding-gradient row counted on its "
                "own (repeated words not summed); true: the norm of the summed gradient.")
  f.DEFINE_boolean("pointer_gen", True, "Pointer-generator (True) or attention baseline (False).")
  f.DEFINE_boolean("coverage", False, "Use the coverage mechanism and its loss.")
  f.DEFINE_float("cov_loss_wt", 1.0, "Weight of the coverage loss (lambda in the paper).")
  f.DEFINE_boolean("convert_to_coverage_model", False, "Convert a non-coverage checkpoint into "
                   "a coverage model (with --mode=train --coverage), save it, exit.")
  f.DEFINE_boolean("restore_best_model", False, "Copy the eval best model into the train dir "
                   "as its newest checkpoint (with --mode=train), exit.")
  f.DEFINE_boolean("debug", False, "Run tf.functions eagerly and check numerics (slow).")
  f.DEFINE_integer("num_train_steps", 0, "Stop training at this global step; 0 = until stopped.")
  f.DEFINE_integer("checkpoint_secs", 60, "Seconds of wall time between checkpoints.")
  f.DEFINE_integer("log_every_n_steps", 100, "Log one line every this many global steps (and "
                   "at the end) with the mean loss, coverage loss, p_gen and global norm since "
                   "the previous line, steps/s and, with --num_train_steps, the time left; 1 "
                   "logs every step, as the original. TensorBoard gets every step.")
  f.DEFINE_string("ckpt_path", "", "Checkpoint prefix for eval/decode (default: the newest "
                  "in the run's train dir).")
  f.DEFINE_string("export_dir", "", "Export: TF Serving base path; the SavedModel is written "
                  "to <export_dir>/<version>.")
  f.DEFINE_enum("export_source", "train", ["train", "best"], "Export: the newest checkpoint "
                "in the run's train dir, or eval's best model (unless --ckpt_path).")
  f.DEFINE_integer("export_version", None, "Export: version directory name (default: the "
                   "checkpoint's global step).")
  f.DEFINE_boolean("export_compiled_attention", False, "Export: the attention scores from "
                   "single-pass decode's XLA kernel in the SavedModel, for servers that run XLA "
                   "(TF Serving: --xla_cpu_compilation_enabled); compiled once per request "
                   "shape. Default: TensorFlow's ops only, which any TensorFlow runtime runs. "
                   "A spelling of --attention_implementation under auto: "
                   + attention.spelling_help("export_compiled_attention") + ".")
  f.DEFINE_integer("eval_batches_per_checkpoint", 1, "Eval beside training: validation batches "
                   "scored per new train checkpoint (the original scores one).")
  f.DEFINE_integer("eval_max_checkpoints", 0, "Eval beside training: stop after scoring this "
                   "many checkpoints; 0 = until stopped (it also stops after scoring the "
                   "checkpoint of the step the trainer stops at, read from its run_config.json).")
  f.DEFINE_integer("eval_samples", 3, "Eval beside training: at each checkpoint, decode the "
                   "first this many articles of --data_path with the decode flags and show "
                   "their summaries, attention pictures and figures in TensorBoard "
                   "(<run>/eval); 0 = none.")
  f.DEFINE_float("eval_poll_secs", 5.0, "Eval beside training: seconds between looks for a new "
                 "train checkpoint.")
  f.DEFINE_integer("max_decode_examples", 0, "Decode at most this many examples; 0 = all "
                   "(single_pass) or until stopped.")
  f.DEFINE_integer("max_attn_vis_files", 100, "Continuous decode: keep the attention JSON of "
                   "at most this many newest examples in <run>/decode/attn_vis/ (older ones "
                   "are deleted); 0 = none, only attn_vis_data.json.")
  f.DEFINE_string("decode_dir", "", "Single-pass decode: the directory of its summaries, "
                  "ROUGE and metrics.json, inside the run directory (or a path). Empty: the "
                  "original's decode_<split>_<settings>_ckpt-<step>, with the data's format after "
                  "the split when it is not .bin (decode_test_jsonl_...).")
  f.DEFINE_enum("rouge_tokenizer", "default", list(metrics.TOKENIZERS), metrics.TOKENIZERS_HELP
                + " One that loses most of the data's first references is refused.")
  f.DEFINE_enum("first_step_context", "original", list(FIRST_STEP_CONTEXTS), "The search's "
                "step 0 (decode, export and eval's samples). original: as the original's "
                "decode, the context and, with coverage, one extra coverage term from an "
                "attention over the encoder's final state; zeros: a zero context and zero "
                "coverage, as training's step 0.")
  f.DEFINE_boolean("compiled_attention", True, "Single-pass decode: compute the attention "
                   "scores with one XLA kernel (compiled once; about 2x faster at batch 32). "
                   "XLA's tanh may differ from TensorFlow's in the last bit; "
                   "--nocompiled_attention uses TensorFlow's ops. A spelling of "
                   "--attention_implementation under auto: "
                   + attention.spelling_help("compiled_attention") + ".")
  f.DEFINE_enum("attention_implementation", attention.AUTO,
                [attention.AUTO, *attention.IMPLEMENTATIONS], attention.implementation_help())
  f.DEFINE_enum("strategy", "default", ["default", "mirrored", "multi_worker", "tpu"],
                "tf.distribute strategy for training: one device, all local GPUs "
                "(MirroredStrategy), several machines (MultiWorkerMirroredStrategy, reads "
                "TF_CONFIG) or a TPU. --batch_size is per replica.")
  f.DEFINE_string("tpu", "", "TPU address for --strategy=tpu.")
  f.DEFINE_boolean("skip_nonfinite_batches", False, "Skip (count and log) a batch whose loss "
                   "or gradient is NaN/Inf instead of stopping training.")
  f.DEFINE_integer("inject_nonfinite_at_step", 0, "Testing only: make the loss NaN at this "
                   "global step.")
  f.DEFINE_enum("precision", "float32", list(PRECISIONS), "float32, or mixed_bfloat16: "
                "matmuls, LSTMs and attention in bfloat16; variables, Adagrad accumulators, "
                "softmaxes, p_gen, coverage, losses and the clipping norm in float32 "
                "(checkpoints are the same in both). For train, eval, decode and export; any "
                "device.")
  f.DEFINE_integer("seed", None, "Random seed for initialisation and data order (default: "
                   "random).")


def given_flags(flag_values):
  """The names of the HParams flags the user set (on the command line or in a --flagfile), as
  opposed to those left at their defaults, which a run's run_config.json fills in."""
  return frozenset(f.name for f in dataclasses.fields(HParams)
                   if f.name in flag_values and flag_values[f.name].present)


# The HParams fields that are no flag: settle.py works them out once from the flags and the data.
SETTLED = ("data",)


@dataclasses.dataclass(frozen=True)
class _Flags:
  """The HParams fields but the data formats' and search strategies' own settings (HParams
  below)."""
  mode: str = "train"
  data_path: str = ""
  vocab_path: str = ""
  data_format: str = "auto"
  tokenizer: str = "whitespace"
  lowercase: bool = False
  # How raw text became the tokens (raw_text.py); None: not known.
  raw_tokenizer: str | None = None
  raw_lowercase: bool | None = None
  # --data_path settled (settle.py): its files, their formats, how their text becomes the
  # model's tokens (raw_text.reading) and its fields; None: not settled (data.files_of).
  data: data_files.DataFiles | None = None
  single_pass: bool = False
  log_root: str = ""
  exp_name: str = ""
  hidden_dim: int = 256
  emb_dim: int = 128
  batch_size: int = 16
  max_enc_steps: int = 400
  max_dec_steps: int = 100
  search: str = search_registry.DEFAULT
  score_references: bool = False
  vocab_size: int = 50000
  allow_unknown_words: bool = False
  lr: float = 0.15
  adagrad_init_acc: float = 0.1
  rand_unif_init_mag: float = 0.02
  trunc_norm_init_std: float = 1e-4
  max_grad_norm: float = 2.0
  clip_norm: str = "original"
  pointer_gen: bool = True
  coverage: bool = False
  cov_loss_wt: float = 1.0
  convert_to_coverage_model: bool = False
  restore_best_model: bool = False
  debug: bool = False
  num_train_steps: int = 0
  checkpoint_secs: int = 60
  log_every_n_steps: int = 100
  ckpt_path: str = ""
  export_dir: str = ""
  export_source: str = "train"
  export_version: int | None = None
  export_compiled_attention: bool = False
  eval_batches_per_checkpoint: int = 1
  eval_max_checkpoints: int = 0
  eval_poll_secs: float = 5.0
  eval_samples: int = 3
  max_decode_examples: int = 0
  max_attn_vis_files: int = 100
  decode_dir: str = ""
  rouge_tokenizer: str = "default"
  first_step_context: str = "original"
  compiled_attention: bool = True
  attention_implementation: str = attention.AUTO
  strategy: str = "default"
  tpu: str = ""
  skip_nonfinite_batches: bool = False
  inject_nonfinite_at_step: int = 0
  seed: int | None = None
  precision: str = "float32"

  @classmethod
  def from_flags(cls, flag_values):
    values = {f.name: flag_values[f.name].value for f in dataclasses.fields(cls)
              if f.name in flag_values}
    return cls(**values).validated()

  def replace(self, **changes):
    return dataclasses.replace(self, **changes)

  def validated(self):
    """Raises DataError naming the flag for values the model cannot run with."""
    positive = ("hidden_dim", "emb_dim", "batch_size", "max_enc_steps", "max_dec_steps",
                "checkpoint_secs", "log_every_n_steps", "eval_batches_per_checkpoint",
                "eval_poll_secs")
    for name in positive:
      if getattr(self, name) <= 0:
        raise DataError(f"--{name}={getattr(self, name)}: must be positive")
    if self.vocab_size < 0 or 0 < self.vocab_size <= 4:
      raise DataError(f"--vocab_size={self.vocab_size}: must be 0 (whole file) or more than the "
                      "4 special tokens")
    for name in ("lr", "adagrad_init_acc", "max_grad_norm"):
      if getattr(self, name) <= 0:
        raise DataError(f"--{name}={getattr(self, name)}: must be positive")
    if self.precision not in PRECISIONS:
      raise DataError(f"--precision={self.precision}: expected one of {', '.join(PRECISIONS)}")
    if (self.attention_implementation != attention.AUTO
        and self.attention_implementation not in attention.IMPLEMENTATIONS):
      attention.get(self.attention_implementation)  # the DataError naming the flag
    if self.clip_norm not in CLIP_NORMS:
      raise DataError(f"--clip_norm={self.clip_norm}: expected one of {', '.join(CLIP_NORMS)}")
    # Only decoding reads min_dec_steps; training with short summaries must not trip on it.
    if self.mode not in ("train", "eval") and not 0 <= self.min_dec_steps <= self.max_dec_steps:
      raise DataError(f"--min_dec_steps={self.min_dec_steps}: must be between 0 and "
                      f"--max_dec_steps={self.max_dec_steps}")
    search_registry.check(self)  # a DataError naming --search or the strategy's flag
    if self.score_references and not (self.mode == "decode" and self.single_pass):
      raise DataError("--score_references: applies only with --mode=decode --single_pass")
    if self.first_step_context not in FIRST_STEP_CONTEXTS:
      raise DataError(f"--first_step_context={self.first_step_context}: expected one of "
                      f"{', '.join(FIRST_STEP_CONTEXTS)}")
    if self.num_train_steps < 0:
      raise DataError(f"--num_train_steps={self.num_train_steps}: must be >= 0")
    if self.max_attn_vis_files < 0:
      raise DataError(f"--max_attn_vis_files={self.max_attn_vis_files}: must be >= 0")
    for data_format in formats_registry.FORMATS:
      data_format.Options.from_hparams(self)  # a DataError naming the format's flag
    if self.eval_samples < 0:
      raise DataError(f"--eval_samples={self.eval_samples}: must be >= 0")
    if self.eval_max_checkpoints < 0:
      raise DataError(f"--eval_max_checkpoints={self.eval_max_checkpoints}: must be >= 0")
    return self

  @property
  def reads(self):
    """(tokenizer, lowercase) that turn the text of --data_path into the model's tokens: as
    settled (raw text in a run trained on pre-tokenised text: as that text was made), else the
    flags'."""
    if self.data is None:
      return self.tokenizer, self.lowercase
    return self.data.reads

  @property
  def checkpoint_utility(self):
    """--convert_to_coverage_model or --restore_best_model: train mode writes one checkpoint."""
    return self.convert_to_coverage_model or self.restore_best_model

  @property
  def run_dir(self):
    return os.path.join(self.log_root or "runs", self.exp_name or "demo")

  @property
  def train_dir(self):
    return os.path.join(self.run_dir, "train")

  @property
  def eval_dir(self):
    return os.path.join(self.run_dir, "eval")


# Everything the library needs, so that no module below the entry point reads FLAGS: _Flags and
# the data formats', search strategies' and decoding controls' own settings, as they declare
# them (formats/registry.py, search/registry.py, search/controls/registry.py).
HParams = dataclasses.make_dataclass(
    "HParams", [(name, kind if default is not None else kind | None,
                 dataclasses.field(default=default))
                for name, kind, default, _ in (*formats_registry.settings(),
                                               *search_registry.settings(),
                                               *controls_registry.settings())],
    bases=(_Flags,), frozen=True, namespace={"__module__": __name__})
