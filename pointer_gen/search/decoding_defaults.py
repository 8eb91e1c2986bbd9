"""A run's decoding defaults, `<run>/decoding_defaults.json`: how the run's model decodes (the
search and its settings: those declared settings.DECODING, every search strategy's and decoding
control's), as given when the run was trained or stored since, so that decode, export, eval's
samples and the Python API decode it so without being told again (Hugging Face keeps a model's
generation_config.json beside its weights for the same).

A training records the decoding settings it was given (`record`: a new run's afresh, a resumed
run's over those stored); `store` adds those a user gives later (--save_decoding_defaults,
Summarizer.save_decoding_defaults). A mode that decodes takes each stored setting it is not
given (`applied`): a given one wins, and a strategy's own settings count only with that
strategy. A run without the file (older than it, trained without decoding settings, a converted
TF1 checkpoint) decodes with the declared defaults, the original's, as before.
"""

import dataclasses
import json
import os
from typing import Any

from absl import logging

from pointer_gen.base import files
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import flag_text
from pointer_gen.base.errors import make_output_dir
from pointer_gen.search import registry as strategies
from pointer_gen.search.controls import registry as controls

FILE_NAME = "decoding_defaults.json"


def path_in(run_dir):
  return os.path.join(run_dir, FILE_NAME)


def names(hps):
  """Every decoding setting of `hps` (an HParams), in order: those declared DECODING, then
  every strategy's own, then every control's."""
  return (*settings.recorded(type(hps), settings.DECODING),
          *(name for name, *_ in strategies.settings()), *controls.flags())


@dataclasses.dataclass(frozen=True)
class DecodingDefaults:
  """The run's decoding defaults a mode decodes with: `values`, ((setting, value), ...), the
  stored ones it was not given, in `names` order; `path`: the file (None: the run has none)."""
  values: tuple[tuple[str, Any], ...] = ()
  path: str | None = None

  def as_dict(self):
    return dict(self.values)

  def without(self, given):
    """These defaults but for the settings in `given`, given in their place."""
    return dataclasses.replace(
        self, values=tuple((name, value) for name, value in self.values if name not in given))

  def text(self):
    return _text(self.as_dict())


def _text(values):
  return ", ".join(f"{name}={flag_text(value)}" for name, value in values.items())


def read(hps):
  """{setting: value} stored for the run of `hps`, in `names` order ({} without the file); a
  DataError naming the file for a key that is no decoding setting or a value of another type."""
  path = path_in(hps.run_dir)
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except (FileNotFoundError, NotADirectoryError):
    return {}
  except (OSError, ValueError) as e:
    raise DataError(f"{path}: cannot read the run's decoding defaults ({e})") from e
  if not isinstance(values, dict):
    raise DataError(f"{path}: expected a JSON object of decoding settings")
  known = names(hps)
  fields = {field.name: field for field in dataclasses.fields(hps)}
  for name, value in values.items():
    if name not in known:
      raise DataError(f"{path}: {name} is not a decoding setting (expected some of "
                      f"{', '.join(known)})")
    values[name] = _typed(path, fields[name], value)
  return {name: values[name] for name in known if name in values}


def _typed(path, field, value):
  """`value` as the setting of HParams field `field` holds it (a JSON number as a float for a
  float setting); a DataError naming the file for a value of another type."""
  kind = settings.flag_type(field.type)
  if value is None and field.default is None:
    return value
  if kind is float and isinstance(value, int) and not isinstance(value, bool):
    return float(value)
  if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
    return value
  raise DataError(f"{path}: {field.name}={json.dumps(value)}: expected a {kind.__name__}")


def given(hps, given_names):
  """{setting: its value in `hps`} of the decoding settings named in `given_names` (those the
  user set), in `names` order."""
  return {name: getattr(hps, name) for name in names(hps) if name in given_names}


def _of_search(values, search):
  """`values` without the own settings of strategies other than `search`."""
  own = set(strategies.strategy_class(search).Options.flags())
  others = {flag for strategy in strategies.STRATEGIES.values()
            for flag in strategy.Options.flags()} - own
  return {name: value for name, value in values.items() if name not in others}


def _write(hps, values):
  """Writes `values` (with those stored, which they replace) as the run's decoding defaults,
  atomically, the settings of strategies other than theirs left out; returns the path."""
  values = {**read(hps), **values}
  values = _of_search(values, values.get("search", strategies.DEFAULT))
  path = path_in(hps.run_dir)
  make_output_dir(hps.run_dir)
  files.write_text_atomic(path, json.dumps(dict(sorted(values.items())), indent=2,
                                           ensure_ascii=False) + "\n")
  _warn_if_lengths_cross(hps, values, path)
  return path


def _declared_default(hps, name):
  """The declared default of setting `name` of `hps`."""
  return {field.name: field.default for field in dataclasses.fields(hps)}[name]


def _warn_if_lengths_cross(hps, values, path):
  """A warning when the stored lengths with the declared defaults of those not stored cannot
  decode (min_dec_steps over max_dec_steps): decode will need one given."""
  defaults = {field.name: field.default for field in dataclasses.fields(hps)}
  lengths = {name: values.get(name, defaults[name]) for name in ("min_dec_steps", "max_dec_steps")}
  if lengths["min_dec_steps"] > lengths["max_dec_steps"]:
    logging.warning("The run's decoding defaults (%s) have min_dec_steps=%d over "
                    "max_dec_steps=%d (%s the declared default): decoding takes the declared "
                    "lengths unless --min_dec_steps is given, or stored with "
                    "--save_decoding_defaults",
                    path, lengths["min_dec_steps"], lengths["max_dec_steps"],
                    "min_dec_steps" if "min_dec_steps" not in values else "max_dec_steps")


def record(hps, values, new_run=False):
  """Records `values` ({setting: value}: the decoding settings given to a training of the run
  of `hps`, as `given` returns them) as the run's decoding defaults: over those stored, or, for
  a new run, in their place (without any, the run has none). Returns the path, or None when
  nothing was written."""
  path = path_in(hps.run_dir)
  if new_run and os.path.exists(path):
    os.remove(path)  # a run started afresh in the directory of another one
  if not values:
    return None
  return _write(hps, values)


def store(hps, given_names, where="--save_decoding_defaults"):
  """Stores the decoding settings of `hps` named in `given_names` (checked: `hps` is validated)
  as the run's decoding defaults, over those stored; returns them. `where`: what asked, named by
  the error when none is given."""
  values = given(hps, given_names)
  if not values:
    raise DataError(f"{where}: no decoding setting given to store (those of --search and its "
                    f"strategy, --min_dec_steps, --max_dec_steps, the decoding controls')")
  path = _write(hps, values)
  logging.info("Stored as the run's decoding defaults (%s): %s", path, _text(values))
  return values


def applied(hps, given_names):
  """`hps` with the run's decoding defaults for the decoding settings not in `given_names` (those
  the user set), and `decoding_defaults`, the DecodingDefaults used; validated, with a
  DataError naming the file when a default makes the settings unusable (min_dec_steps over a
  given max_dec_steps). Logs one line naming the defaults used and those given instead."""
  stored = read(hps)
  if not stored:
    return hps.replace(decoding_defaults=DecodingDefaults()).validated()
  path = path_in(hps.run_dir)
  search = hps.search if "search" in given_names else stored.get("search", hps.search)
  stored = _of_search(stored, search)
  used = {name: value for name, value in stored.items() if name not in given_names}
  declared_min = _declared_default(hps, "min_dec_steps")
  if ("min_dec_steps" not in used and "min_dec_steps" not in given_names
      and used.get("max_dec_steps", declared_min) < declared_min):
    # A run trained with a short max_dec_steps alone: the declared min_dec_steps cannot decode
    # within it, so both lengths stay the declared ones, as before the run had defaults.
    logging.warning("The run's decoding default max_dec_steps=%d (%s) is below the declared "
                    "min_dec_steps=%d: decoding with the declared lengths; give "
                    "--min_dec_steps to use it", used.pop("max_dec_steps"), path, declared_min)
  defaults = DecodingDefaults(tuple(used.items()), path)
  result = hps.replace(**used, decoding_defaults=defaults)
  try:
    if "search" in used:
      strategies.check_flags(result, given_names)  # a given setting of another strategy
    result = result.validated()
  except DataError as e:
    raise DataError(f"{e} (with the run's decoding defaults {defaults.text()} from {path}: a "
                    "setting given here replaces its default)") from e
  instead = {name: getattr(hps, name) for name in stored if name in given_names}
  logging.info("The run's decoding defaults (%s): %s%s", path, defaults.text() or "none used",
               f"; given instead: {_text(instead)}" if instead else "")
  return result
