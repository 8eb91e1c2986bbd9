"""A component's own settings, declared beside its code: each a field of a frozen dataclass
(`Settings`) that is also the flag of the same name, with its default, help and check. The
entry layer defines the flags from the declarations, HParams holds them and `--help` lists
them; a value that fails its check is a DataError naming the flag. The search strategies
(search/) and the data formats (formats/) declare theirs so, and a new one brings its settings
without an edit anywhere else.
"""

import dataclasses
import types

from absl import flags

from pointer_gen.base.errors import DataError


# How a run's record (run_record.py, `<run>/run_config.json`) treats a setting. FIXED: the
# model's shape or how text becomes ids, recorded, and no mode may run the run's model with
# another value (a given one that differs is an error naming it). DATA: how the data files are
# laid out, recorded and inherited, but eval and decode may read files laid out otherwise.
# PHASE: recorded, decided by the checkpoint a mode loads (coverage). DECODING: how the run's
# model decodes (the search), which a run keeps as its decoding defaults when given to train
# (search/decoding_defaults.py; each search strategy's and decoding control's settings are so
# too, by being registered): the modes that decode take one where it is not given, and a given
# one wins. None: not recorded, free to differ between modes and runs.
FIXED, DATA, PHASE, DECODING = "fixed", "data", "phase", "decoding"
RECORDS = (FIXED, DATA, PHASE, DECODING)


def setting(default, help_text, check=None, metrics_after=None, choices=None, record=None,
            example=None, decoding=False):
  """A field of a Settings: the setting, and the flag of the same name that sets it.

  help_text: the flag's help; check: value -> None, or what is wrong with the value (the
  DataError names the flag); metrics_after: the flag after which single-pass decode's
  metrics.json writes it (None: after the flags it orders), so that a file's layout stays as it
  was when the setting was added; choices: the values it takes (an enum flag), which its check
  then also holds it to; record: how the run's record treats it (FIXED, DATA, PHASE, DECODING
  or None; a DECODING setting is kept as the run's decoding default, and each decode of a
  loaded run may set it anew); example: a value that turns on what the setting controls (a
  word for a word list, a number off the default), with which the generic tests of a
  registry's variants (a decoding control, a search strategy) switch each on, as no rule made
  from the type alone could (None: none declared); decoding: a setting of another group that
  decoding reads too, so that each decode of a loaded run may set it anew (the Python API's
  summarize() and export() take it, as they take what decode's own group declares). The flag's
  type is the field's (int, float, bool or str; `X | None` for a setting whose default is None).
  """
  if record not in (None, *RECORDS):
    raise ValueError(f"record={record!r}: expected one of {RECORDS} or None")
  if choices is not None:
    choices = tuple(choices)
    check = _one_of(choices, check)
  return dataclasses.field(default=default, metadata={
      "help": help_text, "check": check, "metrics_after": metrics_after, "choices": choices,
      "record": record, "example": example, "decoding": decoding})


def _one_of(choices, check=None):
  def checked(value):
    if value not in choices:
      return f"expected one of {', '.join(map(str, choices))}"
    return check(value) if check else None
  return checked


def positive(value):
  return None if value > 0 else "must be positive"


def at_least(low):
  """A check: the value is `low` or more."""
  return lambda value: None if value >= low else f"must be >= {low}"


@dataclasses.dataclass(frozen=True)
class Settings:
  """A component's own settings: a frozen dataclass whose fields, each declared with `setting`,
  are named as the flags (HParams fields) that set them, and checked when made. This one has
  none."""

  def __post_init__(self):
    check(self, type(self))

  @classmethod
  def flags(cls):
    """The names of the flags that set these settings."""
    return tuple(field.name for field in dataclasses.fields(cls))

  @classmethod
  def declared(cls):
    """Each setting as its flag: (name, type, default, help), the type without None."""
    return tuple((field.name, flag_type(field.type), field.default, field.metadata["help"])
                 for field in dataclasses.fields(cls))

  @classmethod
  def metrics_after(cls):
    """{setting: the flag metrics.json writes it after} for the settings placed so."""
    return {field.name: field.metadata["metrics_after"] for field in dataclasses.fields(cls)
            if field.metadata["metrics_after"]}

  @classmethod
  def examples(cls):
    """{setting: its declared example} of the settings that declare one, in the fields' order:
    together, what turns the component on."""
    return {field.name: field.metadata["example"] for field in dataclasses.fields(cls)
            if field.metadata["example"] is not None}

  @classmethod
  def from_hparams(cls, hps):
    return cls(**{name: getattr(hps, name) for name in cls.flags()})

  @classmethod
  def of(cls, values):
    """These settings from `values`, a mapping that may hold other components' too."""
    return cls(**{name: values[name] for name in cls.flags() if name in values})


def declarations(cls):
  """The fields of dataclass `cls` (a Settings, or a class made of several) declared with
  `setting`, in order: those without (a value worked out, not set) are left out."""
  return tuple(field for field in dataclasses.fields(cls) if "help" in field.metadata)


def recorded(cls, record):
  """The names of the settings of `cls` whose run-record treatment is `record` (FIXED, ...)."""
  return tuple(field.name for field in declarations(cls) if field.metadata["record"] == record)


def check(values, cls):
  """DataError naming the flag of the first setting of `cls` whose value in `values` (any
  object with those attributes) fails its declared check; None (not set) is never checked."""
  for field in declarations(cls):
    value = getattr(values, field.name)
    test = field.metadata["check"]
    problem = test(value) if test and value is not None else None
    if problem:
      raise DataError(f"--{field.name}={value}: {problem}")


def define_flags(classes, flag_values=flags.FLAGS):
  """Defines the flag of each setting of each class of `classes` (a group, or a registry's
  `options()`), as declared (an enum flag, its choices in --help, for one with choices), on
  `flag_values`."""
  define = {int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_boolean,
            str: flags.DEFINE_string}
  for field in (field for cls in classes for field in declarations(cls)):
    choices = field.metadata["choices"]
    if choices is not None:
      flags.DEFINE_enum(field.name, field.default, list(choices), field.metadata["help"],
                        flag_values=flag_values)
    else:
      define[flag_type(field.type)](field.name, field.default, field.metadata["help"],
                                     flag_values=flag_values)


def flag_type(annotation):
  """int, float, bool or str, from a setting's annotation (`X | None` gives X)."""
  if isinstance(annotation, types.UnionType):
    (annotation,) = (arg for arg in annotation.__args__ if arg is not type(None))
  return annotation
