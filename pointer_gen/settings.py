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

from pointer_gen.errors import DataError


def setting(default, help_text, check=None, metrics_after=None):
  """A field of a Settings: the setting, and the flag of the same name that sets it.

  help_text: the flag's help; check: value -> None, or what is wrong with the value (the
  DataError names the flag); metrics_after: the flag after which single-pass decode's
  metrics.json writes it (None: after the flags it orders), so that a file's layout stays as it
  was when the setting was added. The flag's type is the field's (int, float, bool or str;
  `X | None` for a setting whose default is None).
  """
  return dataclasses.field(default=default, metadata={
      "help": help_text, "check": check, "metrics_after": metrics_after})


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
    for field in dataclasses.fields(self):
      check = field.metadata.get("check")
      value = getattr(self, field.name)
      problem = check(value) if check and value is not None else None
      if problem:
        raise DataError(f"--{field.name}={value}: {problem}")

  @classmethod
  def flags(cls):
    """The names of the flags that set these settings."""
    return tuple(field.name for field in dataclasses.fields(cls))

  @classmethod
  def declared(cls):
    """Each setting as its flag: (name, type, default, help), the type without None."""
    return tuple((field.name, _flag_type(field.type), field.default, field.metadata["help"])
                 for field in dataclasses.fields(cls))

  @classmethod
  def metrics_after(cls):
    """{setting: the flag metrics.json writes it after} for the settings placed so."""
    return {field.name: field.metadata["metrics_after"] for field in dataclasses.fields(cls)
            if field.metadata["metrics_after"]}

  @classmethod
  def from_hparams(cls, hps):
    return cls(**{name: getattr(hps, name) for name in cls.flags()})

  @classmethod
  def of(cls, values):
    """These settings from `values`, a mapping that may hold other components' too."""
    return cls(**{name: values[name] for name in cls.flags() if name in values})


def define_flags(declared, flag_values=flags.FLAGS):
  """Defines the flags of settings (name, type, default, help) each, as `declared` gives them
  (a registry's `settings()`), on `flag_values`."""
  define = {int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_boolean,
            str: flags.DEFINE_string}
  for name, kind, default, help_text in declared:
    define[kind](name, default, help_text, flag_values=flag_values)


def _flag_type(annotation):
  """int, float, bool or str, from a setting's annotation (`X | None` gives X)."""
  if isinstance(annotation, types.UnionType):
    (annotation,) = (arg for arg in annotation.__args__ if arg is not type(None))
  return annotation
