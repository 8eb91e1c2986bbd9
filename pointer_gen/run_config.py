"""`<run>/run_config.json`: the settings a run's model was trained with, so that every mode
builds the same model and turns text into the same ids.

Training writes it (each `--mode=train` rewrites it with the values it runs with, after the
checks below); `--convert_to_coverage_model` and a converted TF1 checkpoint write it too. Every
other mode, the utilities and a resumed train reconcile their flags with it: a flag the user left
out takes the recorded value; a flag given with another value than the recorded one is an error
naming the flag, both values and the file when it would change the model or the ids (FIXED and
the vocab's checksum), and is used as given when it only describes the data files (DATA).
"""

import hashlib
import json
import os

import tensorflow as tf

import pointer_gen
from pointer_gen import files
from pointer_gen.errors import DataError
from pointer_gen.errors import make_output_dir

FILE_NAME = "run_config.json"
# The model's shape and how text becomes ids: no mode may run a trained model with others.
FIXED = ("vocab_size", "hidden_dim", "emb_dim", "pointer_gen", "coverage", "tokenizer",
         "lowercase", "max_enc_steps")
# How the data files are laid out: recorded and inherited, but eval and decode may read files
# laid out otherwise than the training data (a .bin test set for a JSONL-trained model).
DATA = ("data_format", "article_key", "abstract_key")
# The original trains on short articles first and raises max_enc_steps on resuming (its README,
# "Increasing sequence length during training"): train may change it, and the record follows.
CHANGEABLE_BY_TRAIN = ("max_enc_steps",)
_HINTS = {"coverage": " (--convert_to_coverage_model turns a model trained without coverage "
                      "into a coverage model)"}


def path_in(run_dir):
  return os.path.join(run_dir, FILE_NAME)


def file_checksum(path):
  """The sha256 of a file's bytes, as hex."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def read(run_dir):
  """The recorded settings of the run in `run_dir`, or None when it has none."""
  path = path_in(run_dir)
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except FileNotFoundError:
    return None
  except (OSError, ValueError) as e:
    raise DataError(f"{path}: cannot read the run's recorded settings ({e})") from e
  if not isinstance(values, dict):
    raise DataError(f"{path}: expected a JSON object of settings")
  return values


def write(hps, num_train_steps=None):
  """Records the settings of `hps` in its run directory, atomically; returns the path.

  `num_train_steps` (default hps.num_train_steps) is where the trainer stops, which an eval
  beside it reads to know when it has scored the last checkpoint.
  """
  values = {name: getattr(hps, name) for name in FIXED + DATA}
  values["vocab_path"] = os.path.abspath(hps.vocab_path)
  values["vocab_sha256"] = file_checksum(hps.vocab_path)
  values["num_train_steps"] = hps.num_train_steps if num_train_steps is None else num_train_steps
  values["pointer_gen_version"] = pointer_gen.__version__
  values["tensorflow_version"] = tf.__version__
  make_output_dir(hps.run_dir)
  path = path_in(hps.run_dir)
  files.write_text_atomic(
      path, json.dumps(dict(sorted(values.items())), indent=2, ensure_ascii=False) + "\n")
  return path


def recorded_num_train_steps(run_dir):
  """The step the run's trainer stops at (0: until stopped, or nothing recorded)."""
  values = read(run_dir) or {}
  return int(values.get("num_train_steps") or 0)


def reconcile(hps, given, changeable=()):
  """`hps` with the flags not in `given` (names the user set) taken from the run's record.

  Raises DataError for a given flag of FIXED (unless in `changeable`) that differs from the
  record, and for a vocab whose bytes differ from the recorded checksum. Without a record
  (a run older than this file, or not trained yet), returns `hps` unchanged.
  """
  recorded = read(hps.run_dir)
  if recorded is None:
    return hps
  path = path_in(hps.run_dir)
  changes = {}
  for name in FIXED + DATA:
    if name not in recorded:
      continue
    value = recorded[name]
    if name not in given:
      changes[name] = value
    elif getattr(hps, name) != value and name in FIXED and name not in changeable:
      raise DataError(
          f"--{name}={_text(getattr(hps, name))} conflicts with {name}={_text(value)} recorded "
          f"in {path}, with which this run's model was trained{_HINTS.get(name, '')}: leave "
          f"--{name} out to use the recorded value, or start a new run (another --exp_name)")
  changes["vocab_path"] = _reconcile_vocab(hps, given, recorded, path)
  return hps.replace(**changes).validated()


def _reconcile_vocab(hps, given, recorded, path):
  """The vocab path to use: the given one or the recorded one, whose bytes must be those the
  run was trained with (a copy elsewhere is fine)."""
  if "vocab_path" not in recorded:
    return hps.vocab_path
  vocab_path = hps.vocab_path if "vocab_path" in given else recorded["vocab_path"]
  if not os.path.isfile(vocab_path):
    if "vocab_path" in given:
      return vocab_path  # reading the vocab reports the missing file
    raise DataError(f"the vocab {vocab_path} recorded in {path} does not exist any more: pass "
                    "--vocab_path with that vocab file (the same bytes, sha256 "
                    f"{recorded.get('vocab_sha256')})")
  expected = recorded.get("vocab_sha256")
  actual = file_checksum(vocab_path)
  if expected and actual != expected:
    flag = f"--vocab_path={vocab_path}" if "vocab_path" in given else f"the vocab {vocab_path}"
    raise DataError(f"{flag} (sha256 {actual}) is not the vocab recorded in {path} "
                    f"({recorded['vocab_path']}, sha256 {expected}), with which this run's model "
                    "was trained: its ids would mean other words. Use that vocab file, or start "
                    "a new run (another --exp_name)")
  return vocab_path


def _text(value):
  return str(value).lower() if isinstance(value, bool) else str(value)
