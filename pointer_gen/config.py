"""The core settings, each declared once (settings.setting: name, type, default, help, check,
how the run's record treats it) in the group of what reads it, with the original's names and
defaults; the flags, `--help`'s groups (usage.py), the HParams, the run record's lists
(run_record.py) and the export's settings are made from the declarations. The model's own are
declared beside it (model_config.ModelSettings), the data formats', search strategies' and
decoding controls' by each of them (their registries)."""

import dataclasses
import os

from absl import flags

from pointer_gen import attention
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.base.precision import PRECISIONS
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as formats_registry
from pointer_gen.inference import metrics
from pointer_gen.model.model_config import ModelSettings
from pointer_gen.search import decoding_defaults
from pointer_gen.search import registry as search_registry
from pointer_gen.search.contract import FIRST_STEP_CONTEXTS
from pointer_gen.search.controls import registry as controls_registry
from pointer_gen.text.tokenizers import TOKENIZERS
from pointer_gen.text.tokenizers import Tokenization

MODES = ("train", "eval", "decode", "export")
CLIP_NORMS = ("original", "true")
setting, positive, at_least = settings.setting, settings.positive, settings.at_least
FIXED, DATA, DECODING = settings.FIXED, settings.DATA, settings.DECODING


def _vocab_size(value):
  if value < 0 or 0 < value <= 4:
    return "must be 0 (whole file) or more than the 4 special tokens"
  return None


@dataclasses.dataclass(frozen=True)
class RunSettings(settings.Settings):
  """The mode, the run directory and what every mode shares."""
  mode: str = setting("train", "train, eval, decode or export.", choices=MODES)
  single_pass: bool = setting(False, "One ordered pass over the data (eval/decode of a fixed "
                              "checkpoint) instead of shuffled batches forever.")
  log_root: str = setting("", "Root directory for all runs. Empty: ./runs")
  exp_name: str = setting("", "Run name; the run directory is log_root/exp_name. Empty: 'demo' "
                          "on the demo corpus.")
  ckpt_path: str = setting("", "Checkpoint prefix for eval/decode (default: the newest in the "
                           "run's train dir).")
  debug: bool = setting(False, "Run tf.functions eagerly and check numerics (slow).")
  precision: str = setting(
      "float32", "float32, or mixed_bfloat16: matmuls, LSTMs and attention in bfloat16; "
      "variables, Adagrad accumulators, softmaxes, p_gen, coverage, losses and the clipping norm "
      "in float32 (checkpoints are the same in both). For train, eval, decode and export; any "
      "device.", choices=PRECISIONS)
  attention_implementation: str = setting(
      attention.AUTO, attention.implementation_help(),
      choices=(attention.AUTO, *attention.IMPLEMENTATIONS))
  seed: int | None = setting(None, "Random seed for initialisation and data order (default: "
                             "random).")


@dataclasses.dataclass(frozen=True)
class DataSettings(settings.Settings):
  """The data, the vocab and how text becomes the model's tokens."""
  data_path: str = setting("", "Glob of data files: "
                           f"{formats_registry.extensions_help()}. Empty: the built-in demo "
                           "corpus (its train split in train mode, val otherwise).")
  vocab_path: str = setting("", "Vocab file ('word count' lines). Empty with no --data_path: "
                            "the demo corpus's vocab.")
  vocab_size: int = setting(50000, "Vocab entries read from the file, the 4 specials "
                            "included; 0 reads the whole file.", _vocab_size, record=FIXED)
  data_format: str = setting("auto", "Format of --data_path files; auto: from the file "
                             "extension.", choices=("auto", *formats_registry.NAMES),
                             record=DATA)
  tokenizer: str = setting(
      "whitespace", "How the data files' text is split into tokens. whitespace: the text is "
      "pre-tokenised (.bin: CNN/DM's finished_files, vietnews); punct: also split punctuation "
      "off words (raw JSONL text); ptb: raw English as the original's CNN/DM data (CoreNLP "
      "3.7.0's PTBTokenizer, a period added to each line); cjk: as punct, and each CJK "
      "ideograph or kana a token of its own (Chinese, Japanese: text written without spaces).",
      choices=TOKENIZERS, record=FIXED)
  lowercase: bool = setting(False, "Lower-case text before tokenising (raw JSONL text).",
                            record=FIXED)
  # Recorded too, but settled by raw_text.py (a statement the record lacks is added to it).
  raw_tokenizer: str | None = setting(
      None, "How raw text became the tokens of pre-tokenised data, and so of the model: export "
      "builds it into the SavedModel, decode applies it to raw JSONL. Known from the run's "
      "run_config.json, the vocab's .tokenization.json (tools/make_datafiles.py writes one) or "
      "JSONL training data (--tokenizer); else state it once (train, export, decode or "
      "tools/convert_tf1_checkpoint.py) and it is recorded: ptb with --raw_lowercase for the "
      "original's finished_files and pretrained models. Contradicting a record is an error.",
      choices=TOKENIZERS)
  raw_lowercase: bool | None = setting(None, "With --raw_tokenizer: raw text was lower-cased "
                                       "too (left out with --raw_tokenizer: false).")
  # The original trains on short articles first and raises max_enc_steps on resuming (its
  # README, "Increasing sequence length during training"): train may change it
  # (run_record.CHANGEABLE_BY_TRAIN).
  max_enc_steps: int = setting(400, "Max article tokens (longer articles are truncated).",
                               positive, record=FIXED)
  max_dec_steps: int = setting(100, "Max summary tokens (decoder steps).", positive,
                               record=DECODING)
  batch_size: int = setting(16, "Minibatch size (per replica).", positive, decoding=True)


@dataclasses.dataclass(frozen=True)
class TrainSettings(settings.Settings):
  """What --mode=train reads."""
  HELP = "Train (--mode=train)"
  lr: float = setting(0.15, "Adagrad learning rate.", positive)
  adagrad_init_acc: float = setting(0.1, "Initial Adagrad accumulator value.", positive)
  max_grad_norm: float = setting(2.0, "Global-norm gradient clipping threshold.", positive)
  clip_norm: str = setting(
      "original", "The global norm that --max_grad_norm clips with (and the logged "
      "global_norm). original: as the original's graph, each looked-up token's "
      "embedding-gradient row counted on its own (repeated words not summed); true: the norm of "
      "the summed gradient.", choices=CLIP_NORMS)
  cov_loss_wt: float = setting(1.0, "Weight of the coverage loss (lambda in the paper).")
  num_train_steps: int = setting(0, "Stop training at this global step; 0 = until stopped.",
                                 at_least(0))
  checkpoint_secs: int = setting(60, "Seconds of wall time between checkpoints.", positive)
  log_every_n_steps: int = setting(
      100, "Log one line every this many global steps (and at the end) with the mean loss, "
      "coverage loss, p_gen and global norm since the previous line, steps/s and, with "
      "--num_train_steps, the time left; 1 logs every step, as the original. TensorBoard gets "
      "every step.", positive)
  convert_to_coverage_model: bool = setting(
      False, "Convert a non-coverage checkpoint into a coverage model (with --mode=train "
      "--coverage), save it, exit.")
  restore_best_model: bool = setting(False, "Copy the eval best model into the train dir as "
                                     "its newest checkpoint (with --mode=train), exit.")
  skip_nonfinite_batches: bool = setting(False, "Skip (count and log) a batch whose loss or "
                                         "gradient is NaN/Inf instead of stopping training.")
  allow_unknown_words: bool = setting(
      False, "Train even when over half of the first articles' tokens are out of the "
      "vocabulary (a vocab of other data, a small --vocab_size, another tokenisation), which "
      "is refused otherwise.")


@dataclasses.dataclass(frozen=True)
class EvalSettings(settings.Settings):
  """What --mode=eval reads."""
  HELP = "Eval (--mode=eval)"
  eval_batches_per_checkpoint: int = setting(
      1, "Eval beside training: validation batches scored per new train checkpoint (the "
      "original scores one).", positive)
  eval_max_checkpoints: int = setting(
      0, "Eval beside training: stop after scoring this many checkpoints; 0 = until stopped "
      "(it also stops after scoring the checkpoint of the step the trainer stops at, read from "
      "its run_config.json).", at_least(0))
  eval_poll_secs: float = setting(5.0, "Eval beside training: seconds between looks for a new "
                                  "train checkpoint.", positive)
  eval_samples: int = setting(
      3, "Eval beside training: at each checkpoint, decode the first this many articles of "
      "--data_path with the decode flags and show their summaries, attention pictures and "
      "figures in TensorBoard (<run>/eval); 0 = none.", at_least(0))


@dataclasses.dataclass(frozen=True)
class DecodeSettings(settings.Settings):
  """What --mode=decode reads (the search strategies' and decoding controls' own settings are
  declared by each of them)."""
  HELP = "Decode (--mode=decode)"
  search: str = setting(search_registry.DEFAULT, search_registry.search_help(),
                        choices=tuple(search_registry.STRATEGIES), record=DECODING)
  score_references: bool = setting(
      False, "With --mode=decode --single_pass: instead of decoding, score each reference "
      "summary under the model (log-likelihood, token NLL, coverage loss, copy share) into "
      "scores_<...>/scores.jsonl with the corpus means in scores.json.")
  max_decode_examples: int = setting(0, "Decode at most this many examples; 0 = all "
                                     "(single_pass) or until stopped.")
  max_attn_vis_files: int = setting(
      100, "Continuous decode: keep the attention JSON of at most this many newest examples in "
      "<run>/decode/attn_vis/ (older ones are deleted); 0 = none, only attn_vis_data.json.",
      at_least(0))
  decode_dir: str = setting(
      "", "Single-pass decode: the directory of its summaries, ROUGE and metrics.json, inside "
      "the run directory (or a path). Empty: the original's "
      "decode_<split>_<settings>_ckpt-<step>, with the data's format after the split when it is "
      "not .bin (decode_test_jsonl_...).")
  first_step_context: str = setting(
      "original", "The search's step 0 (decode, export and eval's samples). original: as the "
      "original's decode, the context and, with coverage, one extra coverage term from an "
      "attention over the encoder's final state; zeros: a zero context and zero coverage, as "
      "training's step 0.", choices=FIRST_STEP_CONTEXTS, record=DECODING)
  rouge_tokenizer: str = setting(
      "default", metrics.TOKENIZERS_HELP + " One that loses most of the data's first "
      "references is refused.", choices=metrics.TOKENIZERS)
  compiled_attention: bool = setting(
      True, "Single-pass decode: compute the attention scores with one XLA kernel (compiled "
      "once; about 2x faster at batch 32). XLA's tanh may differ from TensorFlow's in the last "
      "bit; --nocompiled_attention uses TensorFlow's ops. A spelling of "
      "--attention_implementation under auto: " + attention.spelling_help("compiled_attention")
      + ".")
  save_decoding_defaults: bool = setting(
      False, "With --mode=decode or export: store the decoding settings given (--search and its "
      "strategy's, --min_dec_steps, --max_dec_steps, the decoding controls') as the run's "
      f"decoding defaults (<run>/{decoding_defaults.FILE_NAME}, over those stored), then run "
      "the mode. A run keeps the decoding settings given to its training so; decode, export, "
      "eval's samples and pointer_gen.load take them where not given.")


@dataclasses.dataclass(frozen=True)
class ExportSettings(settings.Settings):
  """What --mode=export reads."""
  HELP = "Export (--mode=export)"
  export_dir: str = setting("", "Export: TF Serving base path; the SavedModel is written to "
                            "<export_dir>/<version>.")
  export_source: str = setting("train", "Export: the newest checkpoint in the run's train dir, "
                               "or eval's best model (unless --ckpt_path).",
                               choices=("train", "best"))
  export_version: int | None = setting(None, "Export: version directory name (default: the "
                                       "checkpoint's global step).", at_least(0))
  export_compiled_attention: bool = setting(
      False, "Export: the attention scores from single-pass decode's XLA kernel in the "
      "SavedModel, for servers that run XLA (TF Serving: --xla_cpu_compilation_enabled); "
      "compiled once per request shape. Default: TensorFlow's ops only, which any TensorFlow "
      "runtime runs. A spelling of --attention_implementation under auto: "
      + attention.spelling_help("export_compiled_attention") + ".")


@dataclasses.dataclass(frozen=True)
class DistributeSettings(settings.Settings):
  """How --mode=train spreads over devices."""
  HELP = "Distribute (--mode=train on several devices)"
  strategy: str = setting(
      "default", "tf.distribute strategy for training: one device, all local GPUs "
      "(MirroredStrategy), several machines (MultiWorkerMirroredStrategy, reads TF_CONFIG) or a "
      "TPU. --batch_size is per replica.", choices=("default", "mirrored", "multi_worker", "tpu"))
  tpu: str = setting("", "TPU address for --strategy=tpu.")


# The groups of core settings, in the order their flags are defined; those without HELP are
# listed under COMMON by --help (every mode reads them).
GROUPS = (RunSettings, DataSettings, ModelSettings, TrainSettings, EvalSettings, DecodeSettings,
          ExportSettings, DistributeSettings)
COMMON = "Common and model (every mode)"
# The registries' variants' settings classes, each listed with the group of what reads them.
_REGISTERED = ((formats_registry.options, DataSettings),
               (search_registry.options, DecodeSettings),
               (controls_registry.options, DecodeSettings))


def _with_registered(group):
  """`group` and the settings classes of the variants listed with it."""
  return (group, *(cls for options, owner in _REGISTERED if owner is group for cls in options()))


def define_flags():
  """Defines every flag on absl's global FLAGS, from the declarations; call once, from the
  entry point."""
  for group in GROUPS:
    settings.define_flags(_with_registered(group))


def declarations():
  """((--help's heading, the setting's declaration: the dataclasses.Field settings.setting
  made), ...): every setting once, in --help's order (the common ones first)."""
  fields = {}
  for group in GROUPS:
    fields.setdefault(getattr(group, "HELP", COMMON), []).extend(
        field for cls in _with_registered(group) for field in settings.declarations(cls))
  return tuple((title, field) for title, members in fields.items() for field in members)


def help_groups():
  """((--help's heading, the flag names under it), ...): every setting once, the common ones
  first."""
  names = {}
  for title, field in declarations():
    names.setdefault(title, []).append(field.name)
  return tuple((title, tuple(members)) for title, members in names.items())


def given_flags(flag_values):
  """The names of the HParams flags the user set (on the command line or in a --flagfile), as
  opposed to those left at their defaults, which a run's run_config.json fills in."""
  return frozenset(f.name for f in dataclasses.fields(HParams)
                   if f.name in flag_values and flag_values[f.name].present)


# The HParams fields that are no flag: settle.py works them out once from the flags, the data
# and the run's decoding defaults.
SETTLED = ("data", "decoding_defaults")


class _HParamsMethods:
  """HParams' methods (HParams is made below, from the groups and the registries)."""

  @classmethod
  def from_flags(cls, flag_values):
    values = {f.name: flag_values[f.name].value for f in dataclasses.fields(cls)
              if f.name in flag_values}
    return cls(**values).validated()

  def replace(self, **changes):
    return dataclasses.replace(self, **changes)

  def validated(self):
    """Raises DataError naming the flag for values the model cannot run with: each setting's
    declared check, then those that read several."""
    if (self.attention_implementation != attention.AUTO
        and self.attention_implementation not in attention.IMPLEMENTATIONS):
      attention.get(self.attention_implementation)  # the DataError naming the flag
    for group in GROUPS:
      settings.check(self, group)
    # Only decoding reads min_dec_steps; training with short summaries must not trip on it. The
    # run's decoding defaults may give either length, so the two are compared once they are
    # settled (decoding_defaults.applied).
    if self.mode not in ("train", "eval") and not (
        0 <= self.min_dec_steps and (self.decoding_defaults is None
                                     or self.min_dec_steps <= self.max_dec_steps)):
      raise DataError(f"--min_dec_steps={self.min_dec_steps}: must be between 0 and "
                      f"--max_dec_steps={self.max_dec_steps}")
    search_registry.check(self)  # a DataError naming --search or the strategy's flag
    if self.score_references and not (self.mode == "decode" and self.single_pass):
      raise DataError("--score_references: applies only with --mode=decode --single_pass")
    if self.save_decoding_defaults and self.mode not in ("decode", "export"):
      raise DataError("--save_decoding_defaults: applies only with --mode=decode or "
                      "--mode=export")
    for data_format in formats_registry.FORMATS:
      data_format.Options.from_hparams(self)  # a DataError naming the format's flag
    return self

  @property
  def reads(self):
    """The Tokenization that turns the text of --data_path into the model's tokens: as settled
    (raw text in a run trained on pre-tokenised text: as that text was made), else the
    flags'."""
    if self.data is None:
      return Tokenization(self.tokenizer, self.lowercase)
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


# Everything the library needs, so that no module below the entry point reads FLAGS: the groups'
# settings (fields an IDE and a type checker see), the data formats', search strategies' and
# decoding controls' own, as they declare them (formats/registry.py, search/registry.py,
# search/controls/registry.py), and the settled data. Not checked when made: `validated` checks.
HParams = dataclasses.make_dataclass(
    "HParams",
    [(name, kind if default is not None else kind | None, dataclasses.field(default=default))
     for name, kind, default, _ in (*formats_registry.settings(), *search_registry.settings(),
                                    *controls_registry.settings())]
    # --data_path settled (settle.py): its files, their formats, how their text becomes the
    # model's tokens (raw_text.for_data) and its fields; None: not settled (data.files_of).
    + [("data", data_files.DataFiles | None, dataclasses.field(default=None)),
       # The run's decoding defaults a mode that decodes takes (decoding_defaults.applied);
       # None: not settled against the run's.
       ("decoding_defaults", decoding_defaults.DecodingDefaults | None,
        dataclasses.field(default=None))],
    bases=(_HParamsMethods, *reversed(GROUPS)), frozen=True,
    namespace={"__module__": __name__, "__post_init__": lambda self: None})
