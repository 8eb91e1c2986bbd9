"""`<run>/run_config.json`: the settings a run's model was trained with, so that every mode
builds the same model and turns text into the same ids.

Training writes it (each `--mode=train` rewrites it with the values it runs with, after the
checks below); the two train-mode utilities and a converted TF1 checkpoint write it too. Every
other mode, the utilities and a resumed train reconcile their flags with it: a flag the user left
out takes the recorded value; a flag given with another value than the recorded one is an error
naming the flag, both values and the file when it would change the model or the ids (the
settings declared settings.FIXED, and the vocab's checksum), and is used as given when it only
describes the data files (settings.DATA, `data_layout`). A FIXED setting missing from a record
written before it was declared has its default there. The other modules read the record as a
RunRecord (`read`).

Coverage is not fixed: a run has a phase without it and one with it, and each checkpoint holds
one model or the other (settle.py builds the model as the checkpoint it loads has it, and takes
the record's only without one). The record's `coverage` is the current phase's, and `phases`
lists the phases in the order they began (`Phase`: {"coverage", "from_step", "by"}).

How raw text became the model's tokens (`raw_tokenizer`, `raw_lowercase`; null when unknown) is
recorded too, but settled by raw_text.py: a statement of it the record lacks is added to the
record (`add_raw_text`), one that contradicts the record is an error there.

A vocab inside the log_root tree of the run is recorded relative to the run directory, so that
the run keeps working when the tree, or the checkout holding it, moves.
"""

import dataclasses
import hashlib
import json
import os
import types
from typing import Any, Mapping

import tensorflow as tf

from pointer_gen.base import files
from pointer_gen.base import settings
from pointer_gen.base.version import __version__
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import flag_text
from pointer_gen.base.errors import make_output_dir
from pointer_gen.formats import registry as formats_registry
from pointer_gen.text import vocab as vocab_lib

FILE_NAME = "run_config.json"
# The original trains on short articles first and raises max_enc_steps on resuming (its README,
# "Increasing sequence length during training"): train may change it, and the record follows.
CHANGEABLE_BY_TRAIN = ("max_enc_steps",)


def fixed(hps):
  """The settings of `hps` (an HParams) that make the model's shape and how text becomes ids,
  as declared (settings.FIXED): no mode may run a trained model with others."""
  return settings.recorded(type(hps), settings.FIXED)


def phase(hps):
  """Recorded, never reconciled: settle.py decides them from the checkpoint a mode loads."""
  return settings.recorded(type(hps), settings.PHASE)


def data_layout(hps):
  """How the data files are laid out (settings.DATA, and each data format's own settings):
  recorded and inherited, but eval and decode may read files laid out otherwise than the
  training data (a .bin test set for a JSONL-trained model)."""
  return (*settings.recorded(type(hps), settings.DATA), *formats_registry.setting_names())


def path_in(run_dir):
  return os.path.join(run_dir, FILE_NAME)


def file_checksum(path):
  """The sha256 of a file's bytes, as hex."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class Phase:
  """A phase of the run: its model with coverage or without, from the global step `from_step`,
  begun `by` "train" or a train-mode utility (both None for a run recorded before phases
  were)."""
  coverage: bool
  from_step: int | None
  by: str | None


@dataclasses.dataclass(frozen=True)
class RunRecord:
  """A run's run_config.json as read: each field but `settings` is the file's key of that name
  (None when an older version did not write it); `settings` holds every other key, the recorded
  settings (`fixed`, `data_layout`, `phase`) by name."""
  settings: Mapping[str, Any]
  phases: tuple[Phase, ...] = ()
  vocab_path: str | None = None  # relative to the run directory, or absolute
  vocab_sha256: str | None = None
  num_train_steps: int | None = None  # where the trainer stops (0: until stopped)
  raw_tokenizer: str | None = None
  raw_lowercase: bool | None = None
  pointer_gen_version: str | None = None
  tensorflow_version: str | None = None

  @classmethod
  def from_values(cls, values):
    """The record of the JSON object `values` (a dict); raises TypeError for `phases` that are
    not a list of objects of Phase's fields. The settings are read-only, as the record is."""
    own = {field.name for field in dataclasses.fields(cls)} - {"settings"}
    fields = {name: values[name] for name in own if name in values}
    fields["phases"] = tuple(Phase(**phase) for phase in fields.get("phases") or ())
    settings_values = {name: value for name, value in values.items() if name not in own}
    return cls(settings=types.MappingProxyType(settings_values), **fields)

  def values(self):
    """The JSON object to write, the settings' keys beside the others'."""
    values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
    values["phases"] = [dataclasses.asdict(phase) for phase in self.phases]
    return {**values.pop("settings"), **values}

  def vocab_in(self, run_dir):
    """The recorded vocab's path, a relative one resolved against `run_dir` (as the run lies
    now)."""
    return os.path.normpath(os.path.join(run_dir, self.vocab_path))


def read(run_dir):
  """The RunRecord of the run in `run_dir`, or None when it has none."""
  values = _read_values(run_dir)
  if values is None:
    return None
  try:
    return RunRecord.from_values(values)
  except TypeError as e:
    fields = ", ".join(field.name for field in dataclasses.fields(Phase))
    raise DataError(f"{path_in(run_dir)}: expected phases to be a list of objects of {fields} "
                    f"({e})") from e


def _read_values(run_dir):
  """The JSON object of the run's record as it is (a dict), or None when it has none."""
  path = path_in(run_dir)
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except (FileNotFoundError, NotADirectoryError):
    # No run there (a file on the path is the output directory's problem, named where the run
    # directory is made).
    return None
  except (OSError, ValueError) as e:
    raise DataError(f"{path}: cannot read the run's recorded settings ({e})") from e
  if not isinstance(values, dict):
    raise DataError(f"{path}: expected a JSON object of settings")
  return values


def write(hps, num_train_steps=None, new_run=False, phase_begins=None):
  """Records the settings of `hps` in its run directory, atomically; returns the path.

  `num_train_steps` (default hps.num_train_steps) is where the trainer stops, which an eval
  beside it reads to know when it has scored the last checkpoint. `new_run`: the record starts
  afresh (a train dir without checkpoints); else the recorded phases are kept, and
  `phase_begins`, (step, how) for a model written with another coverage than the current
  phase's, adds one.
  """
  previous = None if new_run else read(hps.run_dir)
  record = RunRecord(
      settings={name: getattr(hps, name) for name in fixed(hps) + data_layout(hps) + phase(hps)},
      phases=_phases(previous.phases if previous else (), hps.coverage, new_run, phase_begins),
      vocab_path=_vocab_path_to_record(hps),
      vocab_sha256=file_checksum(hps.vocab_path),
      num_train_steps=hps.num_train_steps if num_train_steps is None else num_train_steps,
      raw_tokenizer=hps.raw_tokenizer,
      raw_lowercase=hps.raw_lowercase,
      pointer_gen_version=__version__,
      tensorflow_version=tf.__version__)
  make_output_dir(hps.run_dir)
  return _write_values(hps.run_dir, record.values())


def add_raw_text(hps):
  """Adds how raw text became the tokens (`hps.raw_tokenizer`, `raw_lowercase`) to the run's
  record when the record lacks it (a run recorded before it was, or trained on data that did
  not say it); returns whether it did. Without a record, nothing is written: training writes
  the whole record."""
  # The file's object as it is, so that only the two keys change in a record of any version.
  recorded = _read_values(hps.run_dir)
  if recorded is None or recorded.get("raw_tokenizer") is not None or hps.raw_tokenizer is None:
    return False
  recorded.update(raw_tokenizer=hps.raw_tokenizer, raw_lowercase=bool(hps.raw_lowercase))
  _write_values(hps.run_dir, recorded)
  return True


def _write_values(run_dir, values):
  path = path_in(run_dir)
  files.write_text_atomic(
      path, json.dumps(dict(sorted(values.items())), indent=2, ensure_ascii=False) + "\n")
  return path


def _phases(recorded, coverage, new_run, begins):
  """The phases to record: `recorded` ones, and one more when `coverage` starts a phase."""
  if new_run:
    return (Phase(coverage, 0, "train"),)
  if recorded and recorded[-1].coverage == coverage:
    return recorded
  # Without `begins`, a run recorded before phases were: where its phase began is unknown.
  return (*recorded, Phase(coverage, *(begins or (None, None))))


def _vocab_path_to_record(hps):
  """The vocab's path as recorded: relative to the run directory when the vocab is inside the
  log_root tree (moved together), else absolute."""
  vocab = os.path.abspath(hps.vocab_path)
  root = os.path.abspath(hps.log_root or "runs")
  if os.path.commonpath([vocab, root]) == root:
    return os.path.relpath(vocab, os.path.abspath(hps.run_dir))
  return vocab


def recorded_num_train_steps(run_dir):
  """The step the run's trainer stops at, as it recorded it (0: until stopped); None when the
  run has no record of it."""
  recorded = read(run_dir)
  if recorded is None or recorded.num_train_steps is None:
    return None
  return int(recorded.num_train_steps)


def reconcile(hps, given, recorded, changeable=()):
  """`hps` with the flags not in `given` (names the user set) taken from the run's RunRecord
  `recorded` (`read`), but for coverage (settle.py decides it).

  Raises DataError for a given flag of `fixed` (unless in `changeable`) that differs from the
  record, and for a vocab whose bytes differ from the recorded checksum. A setting of `fixed`
  that the record lacks (one written before the setting was declared) has its declared default:
  a new setting keeps, by default, what the code did before it. Without a record (None: a run
  older than this file, or not trained yet), returns `hps` unchanged.
  """
  if recorded is None:
    return hps
  path = path_in(hps.run_dir)
  changes = {"vocab_path": _reconcile_vocab(hps, given, recorded, path)}
  fixed_names = fixed(hps)
  defaults = {field.name: field.default for field in dataclasses.fields(hps)}
  for name in fixed_names + data_layout(hps):
    if name in recorded.settings:
      value, source, kept = recorded.settings[name], f" recorded in {path},", "recorded value"
    elif name in fixed_names:
      value, source, kept = defaults[name], f", the default ({path} predates --{name}),", "default"
    else:
      continue
    if name not in given:
      changes[name] = value
    elif (getattr(hps, name) != value and name in fixed_names and name not in changeable
          and not (name == "vocab_size"
                   and _same_vocab(changes["vocab_path"], getattr(hps, name), value))):
      raise DataError(
          f"--{name}={flag_text(getattr(hps, name))} conflicts with {name}={flag_text(value)}"
          f"{source} with which this run's model was trained: leave --{name} out to use the "
          f"{kept}, or start a new run (another --exp_name)")
  return hps.replace(**changes).validated()


def _same_vocab(vocab_path, size, other_size):
  """Whether --vocab_size `size` and `other_size` keep the same entries of the vocab file (0
  and any size from the file's whole size up keep it all). A vocab that cannot be read is not
  the same: reading it later reports why."""
  try:
    whole = len(vocab_lib.Vocab.from_file(vocab_path, 0))
  except DataError:
    return False
  return min(size or whole, whole) == min(other_size or whole, whole)


def _reconcile_vocab(hps, given, recorded, path):
  """The vocab path to use: the given one or the recorded one, whose bytes must be those the
  run was trained with (a copy elsewhere is fine)."""
  if recorded.vocab_path is None:
    return hps.vocab_path
  recorded_path = recorded.vocab_in(hps.run_dir)
  vocab_path = hps.vocab_path if "vocab_path" in given else recorded_path
  if "vocab_path" in given:
    # A directory, a missing or an unreadable file: each named for what it is.
    vocab_lib.open_vocab_file(vocab_path).close()
  elif not os.path.isfile(vocab_path):
    raise DataError(f"the vocab {vocab_path} recorded in {path} does not exist any more: pass "
                    "--vocab_path with that vocab file (the same bytes, sha256 "
                    f"{recorded.vocab_sha256})")
  expected = recorded.vocab_sha256
  actual = file_checksum(vocab_path)
  if expected and actual != expected:
    flag = f"--vocab_path={vocab_path}" if "vocab_path" in given else f"the vocab {vocab_path}"
    raise DataError(f"{flag} (sha256 {actual}) is not the vocab recorded in {path} "
                    f"({recorded_path}, sha256 {expected}), with which this run's model "
                    "was trained: its ids would mean other words. Use that vocab file, or start "
                    "a new run (another --exp_name)")
  return vocab_path
