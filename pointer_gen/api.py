"""pointer_gen as a library: a run directory loaded as every mode loads it, summarizing text;
training, scoring and exporting as the command line does, from keyword settings instead of
flags (docs/python.md).

    import pointer_gen
    history = pointer_gen.fit("runs/mine", data=pairs, vocab_path="vocab", num_train_steps=100)
    summarizer = pointer_gen.load("runs/mine")
    summaries = summarizer.summarize(["an article ..."], search="beam", beam_size=4)

A setting is an HParams field, named as its flag (`beam_size`, `max_enc_steps`, ...); what the
run's record says (run_config.json) fills in what is not given, and a given setting that
contradicts it is the command line's DataError, naming it. `python -m pointer_gen.run` settles
its flags into the same HParams and runs `run_settled`, which `fit` runs too.
"""

import contextlib
import dataclasses
import difflib
import functools
import json
import logging
import os
import textwrap
import typing

from absl import logging as absl_logging
import numpy as np

from pointer_gen import attention as attention_lib
from pointer_gen import config
from pointer_gen import settle
from pointer_gen.base import checkpoints
from pointer_gen.base import distribute
from pointer_gen.base import environment
from pointer_gen.base import files
from pointer_gen.base import settings as settings_lib
from pointer_gen.base import stopping
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import in_keywords
from pointer_gen.base.errors import make_output_dir
from pointer_gen.data import batch as batch_lib
from pointer_gen.data import pipeline as data_lib
from pointer_gen.data import raw_text
from pointer_gen.data import run_record
from pointer_gen.inference import decode
from pointer_gen.inference import eval_samples
from pointer_gen.inference import export as export_lib
from pointer_gen.inference import summaries
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import continuous_batching
from pointer_gen.search import contract
from pointer_gen.search import decoding_defaults
from pointer_gen.search import registry as strategies
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate as evaluate_lib
from pointer_gen.training import train as train_lib
from pointer_gen.training import train_utilities

# Every setting's declaration by name, and the --help heading of what reads it.
_DECLARED = {field.name: field for _, field in config.declarations()}
_HEADING = {field.name: heading for heading, field in config.declarations()}
# The settings a summarize() call may change: what decode mode reads, as declared (its own,
# every search strategy's and every decoding control's) and those of other groups declared
# `decoding` (the summary's maximum length, how many articles run side by side). The model's and
# the data's settings belong to load().
SUMMARIZE_SETTINGS = frozenset(
    name for name, field in _DECLARED.items()
    if _HEADING[name] == config.DecodeSettings.HELP or field.metadata["decoding"]
    or field.metadata["record"] == settings_lib.DECODING)
EXPORT_SETTINGS = SUMMARIZE_SETTINGS | {"export_compiled_attention"}
# The fields that are no setting (settle.py works them out) and those the call's arguments set.
_NOT_SETTINGS = frozenset(config.SETTLED) | {"mode", "log_root", "exp_name", "ckpt_path"}
# A run trained from Python pairs keeps them here, so that the run directory says what it was
# trained on and `--mode=train --data_path=<run>/train_pairs.jsonl` resumes it.
TRAIN_PAIRS = "train_pairs.jsonl"
# Pairs evaluate() scored are kept in the eval directory beside the metrics of the same step
# (metrics-<step>.json), whose data_path names them.
EVAL_PAIRS = "eval_pairs-{step}.jsonl"


def _setting_names():
  return {f.name for f in dataclasses.fields(config.HParams)} - _NOT_SETTINGS


def _errors_in_keywords(call):
  """`call` with the errors the command line's code raises under it (worded in flags: its
  DataErrors) worded in the API's keywords (errors.in_keywords): `vocab_path=`, not
  `--vocab_path`."""

  @functools.wraps(call)
  def worded(*args, **kwargs):
    try:
      return call(*args, **kwargs)
    except DataError as e:
      names = _setting_names()
      booleans = {name for name in names if isinstance(_DECLARED[name].default, bool)}
      e.args = tuple(in_keywords(arg, names, booleans) if isinstance(arg, str) else arg
                     for arg in e.args)
      raise

  return worded


@contextlib.contextmanager
def _progress_shown():
  """absl's INFO lines (the training log's line every log_every_n_steps steps, the checkpoints
  saved) shown while fit() runs, as the command line shows them, where the caller chose no
  level for absl's logger: in a plain interpreter they would go to Python's root logger, whose
  default level (WARNING) drops them. A level the caller set (absl.logging.set_verbosity, as
  absl's app.run does on the command line; logging.getLogger("absl").setLevel) is kept."""
  logger = absl_logging.get_absl_logger()
  if logger.level != logging.NOTSET:
    yield
    return
  logger.setLevel(logging.INFO)
  try:
    yield
  finally:
    logger.setLevel(logging.NOTSET)


def _check_names(settings, allowed, where, hint):
  for name in settings:
    if name not in allowed:
      close = difflib.get_close_matches(name, sorted(allowed), n=1)
      suggestion = f" (did you mean {close[0]}?)" if close else ""
      raise TypeError(f"{where}: {name!r} is not {hint}{suggestion}")


class Setting(typing.NamedTuple):
  """A setting, a keyword of the API's calls named as its flag: its default (what a call that
  leaves it out runs with, unless the run's record holds it), the --help heading of what reads
  it (a mode's, or config.COMMON: every mode's) and its help."""
  name: str
  default: object
  read_by: str
  help: str


# What each call reads, by --help's headings: the common settings and its mode's (summarize()
# and export() read only decode's: SUMMARIZE_SETTINGS, EXPORT_SETTINGS). fit(), load() and
# evaluate() take any setting; one that nothing they run reads changes nothing.
_READ_BY = {"fit": (config.COMMON, config.TrainSettings.HELP, config.DistributeSettings.HELP),
            "load": (config.COMMON, config.DecodeSettings.HELP), "evaluate": (config.COMMON,)}
CALLS = ("fit", "load", "summarize", "evaluate", "export")


def settings(call=None):
  """The settings, each a Setting (name, default, read_by, help), in --help's order: every one
  (call=None), or those `call` reads, one of "fit", "load", "summarize", "evaluate" and
  "export"."""
  if call is not None and call not in CALLS:
    raise ValueError(f"settings(): call={call!r}: expected None or one of {', '.join(CALLS)}")
  takes = {"summarize": SUMMARIZE_SETTINGS, "export": EXPORT_SETTINGS}.get(call)
  return tuple(
      Setting(name, field.default, _HEADING[name], field.metadata["help"])
      for name, field in _DECLARED.items()
      if name in _setting_names() and (
          call is None or (name in takes if takes else _HEADING[name] in _READ_BY[call])))


def _settings_doc(call, indent):
  """The list that ends `call`'s docstring: the settings it reads with their defaults, by what
  reads them, indented by `indent` spaces as the docstring."""
  by_heading = {}
  for setting in settings(call):
    by_heading.setdefault(setting.read_by, []).append(f"{setting.name}={setting.default!r}")
  lines = textwrap.wrap(f"Settings (keyword=default) by what reads them; "
                        f"pointer_gen.settings({call!r}) gives each with its help:",
                        width=100 - indent)
  for heading, items in by_heading.items():
    lines += textwrap.wrap(", ".join(items), width=100 - indent, initial_indent=f"  {heading}: ",
                           subsequent_indent="    ", break_long_words=False,
                           break_on_hyphens=False)
  return textwrap.indent("\n".join(lines), " " * indent)


def _hparams(run_dir, mode, settings, where, **fixed):
  """(HParams of `settings` for the run directory `run_dir` in `mode`, the names given)."""
  _check_names(settings, _setting_names(), where,
               "a setting (pointer_gen.settings() and docs/python.md list them)")
  run_dir = os.path.abspath(os.fspath(run_dir))
  log_root, exp_name = os.path.split(run_dir)
  values = {**settings, **fixed, "mode": mode, "log_root": log_root, "exp_name": exp_name}
  hps = config.HParams(**values).validated()
  return hps, frozenset(values)


def _articles_checked(articles, where):
  if isinstance(articles, (str, bytes)):
    raise TypeError(f"{where}: expected a list of articles (strings), not one "
                    f"{type(articles).__name__}")
  articles = list(articles)
  for index, article in enumerate(articles):
    if not isinstance(article, str):
      raise TypeError(f"{where}: article {index} is a {type(article).__name__}, not a str")
  return articles


def _pairs_checked(pairs, where):
  """(article, abstract) str pairs of an iterable of pairs or a tf.data.Dataset of them."""
  if hasattr(pairs, "as_numpy_iterator"):
    pairs = ((a.decode("utf-8"), b.decode("utf-8")) for a, b in pairs.as_numpy_iterator())
  checked = []
  for index, pair in enumerate(pairs):
    if (not isinstance(pair, (tuple, list)) or len(pair) != 2
        or not all(isinstance(part, str) for part in pair)):
      raise TypeError(f"{where}: pair {index} is not an (article, abstract) pair of strings: "
                      f"{pair!r:.80}")
    checked.append(tuple(pair))
  if not checked:
    raise DataError(f"{where}: no (article, abstract) pair")
  return checked


def _pairs_text(pairs):
  """The pairs as JSONL (article, abstract)."""
  return "".join(json.dumps({"article": article, "abstract": abstract}, ensure_ascii=False)
                 + "\n" for article, abstract in pairs)


def _write_pairs(pairs, path):
  """The pairs as JSONL, written atomically; returns the path."""
  make_output_dir(os.path.dirname(path))
  files.write_text_atomic(path, _pairs_text(pairs))
  return path


def _data_setting(data_arg, settings, where, pairs_path):
  """settings with data_path for `data_arg`: a glob (str) as --data_path, or pairs written to
  `pairs_path(pairs)` as JSONL."""
  if data_arg is None:
    return settings
  if "data_path" in settings:
    raise TypeError(f"{where}: give the data as data= or data_path=, not both")
  if isinstance(data_arg, (str, os.PathLike)):
    return {**settings, "data_path": os.fspath(data_arg)}
  pairs = _pairs_checked(data_arg, where)
  return {**settings, "data_path": _write_pairs(pairs, pairs_path(pairs))}


def run_settled(hps, given, samples=None):
  """What `python -m pointer_gen.run` does with its flags: HParams `hps` whose fields in
  `given` the user set, settled against the run's record, checked, then the mode run.
  `samples`: eval's decoded TensorBoard samples (eval_samples.Samples), or None."""
  hps = settle.settled(hps, given)
  # Before the first write (the run's record): a file that is not a vocab stops here.
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  settle.record_raw_text(hps, given)
  settle.store_decoding_defaults(hps, given)
  environment.configure_tensorflow(hps.debug)
  # Before any TensorFlow op runs: a multi-worker strategy can only be made at program start.
  strategy = (distribute.make_strategy(hps.strategy, hps.tpu)
              if hps.mode == "train" and not hps.checkpoint_utility else None)
  if hps.mode != "export" and not hps.checkpoint_utility:
    # Before the first write too: a training on data the vocab does not fit stops here.
    data_lib.check_unknown_words(hps, vocab)
  if hps.checkpoint_utility or hps.mode == "export":
    # One-shot writes with their own clean-up: Ctrl-C interrupts them as usual.
    stopping.exit_if_requested()
    stopping.uninstall()
  if hps.checkpoint_utility:
    return train_utilities.run(hps, vocab)
  if hps.mode == "train":
    return train_lib.run(hps, vocab, strategy, decoding_defaults.given(hps, given))
  if hps.mode == "eval":
    if samples is not None:
      samples = _decoding_as_the_run(samples, given)
    return evaluate_lib.run(hps, vocab, samples=samples)
  return {"decode": decode, "export": export_lib}[hps.mode].run(hps, vocab)


def _decoding_as_the_run(samples, given):
  """Eval's `samples` made with the run's decoding defaults for the decoding settings not in
  `given` (the names the user set): eval's losses keep the settings given, its samples decode
  as the run decodes."""
  return lambda hps, vocab, model: samples(decoding_defaults.applied(hps, given), vocab, model)


def _train_pairs_path(run_dir, pairs, where):
  """Where fit() keeps the training `pairs` of the run in `run_dir` (TRAIN_PAIRS): a DataError
  if the run was trained on other pairs, which the file holds (they would be lost, and the run
  would no longer say what it was trained on)."""
  path = os.path.join(os.fspath(run_dir), TRAIN_PAIRS)
  train_dir = os.path.join(os.fspath(run_dir), "train")
  if os.path.isfile(path) and checkpoints.newest(train_dir):
    with open(path, encoding="utf-8") as f:
      if f.read() != _pairs_text(pairs):
        raise DataError(
            f"{where}: {os.path.abspath(run_dir)} was trained on other pairs, kept in its "
            f"{TRAIN_PAIRS}: give data= those pairs (or data={path!r}) to train it on, or train "
            "on these in a new run directory")
  return path


@_errors_in_keywords
def fit(run_dir, data=None, **settings):
  """Trains the run in `run_dir` as `--mode=train` does (the same function): its record, the
  trainer lock, the checks of the data and the vocab, checkpoints every checkpoint_secs and at
  the end, TensorBoard, the non-finite guard, a clean stop on Ctrl-C, and resuming from the
  newest checkpoint. Logs the command line's training log (a line every log_every_n_steps
  steps) through absl's logger, shown without any set-up (a level set on it is kept). Returns
  the steps run, one dict of scalars each (step, loss, ...): [] for a run already at
  num_train_steps, which a warning says.

  data: a data_path glob, or (article, abstract) pairs of raw text (a list, any iterable, a
  tf.data.Dataset), tokenised as the settings say (tokenizer, lowercase) and kept in
  <run_dir>/train_pairs.jsonl; a trained run takes the pairs it keeps there again, not others
  (a DataError: they would be lost). settings: the run's, as the flags of the same names
  (listed at the end); left out, a resumed run's record fills the model's in.

  Examples:

  >>> history = pointer_gen.fit(run_dir, data=pairs, vocab_path=vocab, hidden_dim=8, emb_dim=8,
  ...                           batch_size=2, max_enc_steps=30, max_dec_steps=8,
  ...                           min_dec_steps=2, num_train_steps=2)
  Trained steps 1-2: loss ...
  Checkpoints and TensorBoard logs: .../train
  >>> [row["step"] for row in history]
  [1, 2]
  """
  where = "fit()"
  _hparams(run_dir, "train", settings, where)  # bad settings are refused before the pairs' write
  if (data is not None and not settings.get("vocab_path")
      and run_record.read(os.path.abspath(os.fspath(run_dir))) is None):
    # Said in keywords: the command line's error would name --vocab_path and --data_path.
    raise DataError(f"{where}: vocab_path= is required with data= for a new run (a vocab file "
                    "of 'word count' lines: tools/make_vocab.py makes one from the data)")
  settings = _data_setting(data, settings, where,
                           lambda pairs: _train_pairs_path(run_dir, pairs, where))
  hps, given = _hparams(run_dir, "train", settings, where)
  with stopping.until_stopped(), _progress_shown():
    return run_settled(hps, given)


@_errors_in_keywords
def load(run_dir, checkpoint=None, **settings):
  """The run in `run_dir` loaded as decode mode loads it: its record's model settings, vocab
  and tokenisation, the coverage its checkpoint has. checkpoint: None (the newest of train/),
  "best" (eval's best model), a step (train/model.ckpt-<step>; an int, or a str of digits: 300
  or "300") or a checkpoint prefix.
  settings: decode's for every summarize() call, and those the record holds, which must agree
  with it (all listed at the end). A decoding setting not given is the run's decoding default
  where it has one (`Summarizer.decoding_defaults`: as given to its training or stored since),
  else the declared default.

  Examples:

  >>> summarizer = pointer_gen.load(run_dir)
  >>> summarizer.step
  2
  >>> pointer_gen.load(run_dir, hidden_dim=16)
  Traceback (most recent call last):
  ...
  pointer_gen.base.errors.DataError: hidden_dim=16 conflicts with hidden_dim=8 recorded in ...
  """
  where = "load()"
  run_dir = os.path.abspath(os.fspath(run_dir))
  hps, _ = _hparams(run_dir, "decode", settings, where)
  if run_record.read(run_dir) is None:
    raise DataError(f"{run_dir}: holds no run ({run_record.FILE_NAME} is missing): give the "
                    "directory that fit() or --mode=train trained (<log_root>/<exp_name>)")
  ckpt_path = _checkpoint(hps, checkpoint)
  hps, given = _hparams(run_dir, "decode", settings, where, single_pass=True,
                        ckpt_path=ckpt_path)
  hps = settle.settled(hps, given, finds_data=False)
  settle.store_decoding_defaults(hps, given)
  environment.configure_tensorflow(hps.debug)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  step = checkpoints.restore_weights(model, ckpt_path)
  return Summarizer(hps, given, vocab, model, ckpt_path, step)


def _checkpoint(hps, checkpoint):
  """The checkpoint prefix `load`'s `checkpoint` names in the run of `hps`."""
  if checkpoint is None:
    path = checkpoints.newest(hps.train_dir)
    if not path:
      raise DataError(f"{hps.run_dir}: the run has no checkpoint in {hps.train_dir}: train it "
                      "first (fit() or --mode=train)")
    return path
  if checkpoint == "best":
    path = checkpoints.newest(hps.eval_dir)
    if not path:
      raise DataError(f"{hps.run_dir}: no best model in {hps.eval_dir}: run --mode=eval beside "
                      "training first, or load the newest checkpoint (checkpoint=None)")
    return path
  if isinstance(checkpoint, bool) or not isinstance(checkpoint, (int, str, os.PathLike)):
    raise TypeError(f"load(): checkpoint={checkpoint!r}: expected None, 'best', a step or a "
                    "checkpoint prefix")
  if isinstance(checkpoint, str) and checkpoint.isascii() and checkpoint.isdigit():
    # A step as text (read from a file name, a command line, a form): the step, not a path.
    checkpoint = int(checkpoint)
  if isinstance(checkpoint, int):
    path = os.path.join(hps.train_dir, f"{checkpoints.CHECKPOINT_NAME}-{checkpoint}")
    if not os.path.exists(path + ".index"):
      kept = sorted(checkpoints.step_of(p) for p in _train_checkpoints(hps.train_dir))
      raise DataError(f"{hps.run_dir}: no checkpoint of step {checkpoint} in {hps.train_dir} "
                      f"(it keeps steps {', '.join(map(str, kept)) or 'none'})")
    return path
  return checkpoints.resolve(hps, os.fspath(checkpoint))


def _train_checkpoints(train_dir):
  prefix = checkpoints.CHECKPOINT_NAME + "-"
  return [os.path.join(train_dir, name[:-len(".index")])
          for name in (os.listdir(train_dir) if os.path.isdir(train_dir) else [])
          if name.startswith(prefix) and name.endswith(".index")]


def _batch_of(example):
  """A batch of one article, `example` (summaries.examples'), as summaries.run_search takes
  it."""
  return batch_lib.Batch(enc_input=example.enc_input[None],
                         enc_input_ext=example.enc_input_ext[None],
                         enc_len=np.array([len(example.enc_input)], np.int32),
                         num_oovs=np.array([example.num_oovs], np.int32))


def _empty_summary(hps, attention):
  """The Summary of an article without tokens: what the export gives it (no words, log_prob
  and p_gen_mean 0, each of the n best the same)."""
  n_best = (tuple(NBestSummary("", 0.0, 0.0) for _ in range(hps.n_best)) if hps.n_best > 1
            else None)
  return Summary(text="", tokens=(), log_prob=0.0, p_gen_mean=0.0, article_tokens=(),
                 attention=np.zeros((0, 0), np.float32) if attention else None, n_best=n_best)


class NBestSummary(typing.NamedTuple):
  """One of a Summary's n best, with n_best.jsonl's field names: summary, its text (written as
  Summary.text is); score, what the search ranked it by (the beam search's --ranking); log_prob,
  the log-probability of its tokens."""
  summary: str
  score: float
  log_prob: float


@dataclasses.dataclass(frozen=True)
class Summary:
  """One article's summary.

  text: the summary as the run's tokenizer writes its words (with spaces, but none between
  CJK characters); tokens: its words, [STOP] left out; log_prob: the search's log-probability
  of them; p_gen_mean: the mean generation probability over its steps; attention: with
  summarize(attention=True), the attention of each step over the article's tokens, a float
  array [len(tokens) + 1 if it ended by [STOP] else len(tokens), len(article_tokens)], else
  None; article_tokens: the article's tokens the model read (max_enc_steps at most); n_best:
  with n_best > 1, the search's best summaries, best first, each an NBestSummary (summary,
  score, log_prob), else None. An article without tokens (empty or whitespace only) is not
  searched: its summary is "", with no tokens, log_prob and p_gen_mean 0, as the export's.
  """
  text: str
  tokens: tuple
  log_prob: float
  p_gen_mean: float
  article_tokens: tuple
  attention: np.ndarray | None = None
  n_best: tuple | None = None


class Summarizer:
  """A trained run's model, loaded by `load`: summarize, evaluate and export it.

  hparams: the settled HParams (the record's, with load's settings); vocab: its vocab.Vocab;
  model: the Keras model; checkpoint, step: which weights it holds. Each set of settings builds
  and compiles its search once; a later summarize() with the same settings reuses it.
  """

  def __init__(self, hps, given, vocab, model, checkpoint, step):
    self.hparams, self._given = hps, given
    self.vocab, self.model = vocab, model
    self.checkpoint, self.step = checkpoint, step
    self._searches = {}

  def __repr__(self):
    return (f"Summarizer({self.hparams.run_dir!r}, checkpoint={self.checkpoint!r}, "
            f"search={self.hparams.search!r})")

  @property
  def decoding_defaults(self):
    """The run's decoding defaults this Summarizer decodes with, {setting: value}: those of
    <run>/decoding_defaults.json that load() was not given ({} for a run without any, which
    decodes with the declared defaults)."""
    return self.hparams.decoding_defaults.as_dict()

  def _settings(self, settings, where, allowed=SUMMARIZE_SETTINGS):
    call = where.removesuffix("()")
    for name in settings:
      # A setting, but the run's: no closest decoding setting is offered in its place.
      if name in _setting_names() and name not in allowed:
        value = getattr(self.hparams, name)
        fixed = _DECLARED[name].metadata["record"] == settings_lib.FIXED
        why = (f"the run's record ({run_record.FILE_NAME}) fixes it: the model runs with the "
               f"value it was trained with (this run's is {value!r})" if fixed
               else f"the run's other settings are load()'s (this one's is {value!r})")
        raise TypeError(f"{where}: {name!r} is not a decoding setting: {why}")
    _check_names(settings, allowed, where,
                 f"a decoding setting (pointer_gen.settings({call!r}) lists them)")
    hps = self.hparams.replace(
        **settings, decoding_defaults=self.hparams.decoding_defaults.without(settings))
    hps = hps.validated()
    strategies.check_flags(hps, self._given | set(settings))
    if settings.get("save_decoding_defaults"):
      stored = decoding_defaults.store(hps, set(settings), where)
      # From now on, this Summarizer decodes as load() would, those stored not given to it.
      self._given = self._given - set(stored)
      self.hparams = decoding_defaults.applied(self.hparams.replace(**stored), self._given)
    return hps

  @_errors_in_keywords
  def save_decoding_defaults(self, **settings):
    """Stores decoding `settings` (the search's: search, its strategy's, min_dec_steps,
    max_dec_steps, the controls'; checked as summarize() checks them) as the run's decoding
    defaults, over those stored (<run>/decoding_defaults.json, as --save_decoding_defaults
    does): decode, export, eval's samples and load() take them where not given, and this
    Summarizer decodes with them from now on. Returns the settings stored, {setting: value}
    (`summarizer.save_decoding_defaults(min_dec_steps=8, max_dec_steps=32)`)."""
    self._settings({**settings, "save_decoding_defaults": True}, "save_decoding_defaults()",
                   frozenset(decoding_defaults.names(self.hparams)) | {"save_decoding_defaults"})
    return decoding_defaults.given(self.hparams, settings)

  @_errors_in_keywords
  def summarize(self, articles, *, tokenized=False, attention=False, **settings):
    """The Summary of each of `articles` (a list of str), in order: the same summaries as
    `--mode=decode --single_pass` gives the same articles with the same settings.

    tokenized: the articles are already the model's tokens, separated by spaces, as the
    run's data files were (the .bin format's text); else raw text, tokenised as the run's
    raw text was (its record's raw_tokenizer). attention: also each step's attention (searched
    one article at a time, as decode mode's attention files). settings: decode's (the search,
    its strategy's, the controls', max_dec_steps, batch_size: articles searched side by side;
    all listed at the end), for this call.

    Examples:

    >>> summary = summarizer.summarize(["the police said the man was arrested ."])[0]
    >>> summary.text == " ".join(summary.tokens)
    True
    >>> 0 < summary.p_gen_mean < 1
    True
    >>> summarizer.summarize(["an article"], search="sample", beam_size=2)
    Traceback (most recent call last):
    ...
    pointer_gen.base.errors.DataError: beam_size= is a setting of search=beam, not of search=sample...
    """
    where = "summarize()"
    articles = _articles_checked(articles, where)
    hps = self._settings(settings, where)
    if tokenized:
      reads = text.Tokenization(hps.tokenizer, hps.lowercase)
    else:
      reads = raw_text.required(hps, "summarize() of raw text (tokenized=False)")
    if not articles:
      return []
    batches = data_lib.make_dataset(
        lambda: ((article, "") for article in articles), self.vocab.lookup_table(),
        len(self.vocab),
        hps.replace(single_pass=True, tokenizer=reads.tokenizer, lowercase=reads.lowercase),
        1 if attention else hps.batch_size)
    # An article without tokens (empty or whitespace only) is not searched (it has no position
    # to attend over): its summary is empty, as the export's is (docs/serving.md).
    examples = list(summaries.examples(batches))
    searched = [example for example in examples if len(example.enc_input)]
    if attention:
      search = self._search(hps, attention=True)
      results = (result for example in searched
                 for result in summaries.run_search(search, _batch_of(example)))
    else:
      results = (result for _, result in self._search(hps, attention=False).decode(searched))
    return [self._summary(hps, example, next(results), reads.tokenizer)
            if len(example.enc_input) else _empty_summary(hps, attention)
            for example in examples]

  def _search(self, hps, attention):
    """The compiled search of `hps` (decode's continuous batching, or a one-article search
    keeping the attention), built once per set of what it reads: settings that change only
    decode mode's files (decode_dir, rouge_tokenizer, ...) reuse it."""
    settings = contract.Settings.from_hparams(hps, keep_attention=attention, vocab=self.vocab)
    search_attention = attention_lib.SearchAttention.of(hps, "view" if attention else "decode")
    key = (hps.search, strategies.strategy_class(hps.search).Options.from_hparams(hps), settings,
           search_attention.steps, search_attention.first_step,
           None if attention else hps.batch_size)
    if key not in self._searches:
      strategy = strategies.make(hps, settings, search_attention)
      self._searches[key] = (
          summaries.make_search(self.model, strategy) if attention
          else continuous_batching.SlotDecoder(self.model, strategy, hps.batch_size,
                                               hps.max_enc_steps))
    return self._searches[key]

  def _summary(self, hps, example, result, tokenizer):
    summary = summaries.DecodedSummary(self.vocab, result, example, (hps.tokenizer, hps.lowercase))
    article_tokens = tuple(self.vocab.outputids2words(
        [int(i) for i in example.enc_input_ext], example.article_oovs))
    n_best = None
    if hps.n_best > 1:
      line = summaries.n_best_line(self.vocab, result, example, 0)
      n_best = tuple(NBestSummary(text.written_text(entry["summary"].split(), tokenizer),
                                  entry["score"], entry["log_prob"]) for entry in line["n_best"])
    return Summary(
        text=text.written_text(summary.words, tokenizer) if summary.words else "",
        tokens=tuple(summary.words), log_prob=float(result.log_prob),
        p_gen_mean=float(np.mean(summary.p_gens)) if len(summary.p_gens) else 0.0,
        article_tokens=article_tokens, attention=summary.attn, n_best=n_best)

  @_errors_in_keywords
  def evaluate(self, data=None, **settings):
    """The checkpoint's losses on `data` as `--mode=eval --single_pass` scores them (and
    writes them: <run>/eval/metrics-<step>.json and TensorBoard): {"loss", "num_examples",
    "mean_nll_per_token", ...}. data: a data_path glob, or (article, abstract) pairs of raw
    text, kept beside the metrics in <run>/eval/eval_pairs-<step>.jsonl (the metrics'
    data_path); settings: the data's (listed at the end).

    Examples:

    >>> scores = summarizer.evaluate(pairs)
    >>> scores["num_examples"] == len(pairs)
    True
    """
    where = "evaluate()"
    if data is None and "data_path" not in settings:
      raise TypeError(f"{where}: give the data to score (data=, a glob or pairs)")
    settings = _data_setting(data, settings, where, lambda pairs: os.path.join(
        self.hparams.eval_dir, EVAL_PAIRS.format(step=self.step)))
    hps, given = _hparams(self.hparams.run_dir, "eval", settings, where, single_pass=True,
                          ckpt_path=self.checkpoint)
    hps = settle.settled(hps, given)
    data_lib.check_unknown_words(hps, self.vocab)
    with stopping.until_stopped():
      scored = evaluate_lib.run_single_pass(hps, self.vocab)
    return None if scored is None else scored.metrics

  @_errors_in_keywords
  def export(self, export_dir, version=None, **settings):
    """Writes the SavedModel `--mode=export` writes (raw text in, summaries out; its serving
    signatures and settings) of this checkpoint to export_dir/<version> (default: its step)
    and returns that path. settings: decode's, as summarize()'s, built into the export.

    Examples:

    >>> path = summarizer.export(export_dir)
    >>> os.path.basename(path)
    '2'
    """
    hps = self._settings(settings, "export()", EXPORT_SETTINGS)
    hps = hps.replace(mode="export")
    raw_text.required(hps, "export()")  # the SavedModel tokenises raw text
    return export_lib.export(hps, self.vocab, self.checkpoint, export_dir,
                             version=version)


def _document_settings():
  """Ends each call's docstring (help(pointer_gen.load), ...) with the settings it reads and
  their defaults, from the declarations."""
  for function, call, indent in ((fit, "fit", 2), (load, "load", 2),
                                 (Summarizer.summarize, "summarize", 4),
                                 (Summarizer.evaluate, "evaluate", 4),
                                 (Summarizer.export, "export", 4)):
    function.__doc__ = (f"{function.__doc__.rstrip()}\n\n{_settings_doc(call, indent)}\n"
                        + " " * indent)


_document_settings()
