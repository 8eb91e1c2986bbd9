"""The decoding controls by name, their settings as flags, made from the flags and written out.

A control is a base.Control in its own module; registering it is its line in CONTROLS. Its
settings (its Options, each declared with settings.setting) are flags of the same names, which
config.py defines from `settings` and `--help` lists under decode. The search's shared step
applies the active ones in this order.
"""

from pointer_gen.search.controls import ban_unk
from pointer_gen.search.controls import min_length
from pointer_gen.search.controls import ngram_blocking
from pointer_gen.search.controls import repetition_penalty

# name -> base.Control class, in the order the shared step applies them.
CONTROLS = {
    "min_length": min_length.MinLength,
    "ngram_blocking": ngram_blocking.NgramBlocking,
    "ban_unk": ban_unk.BanUnk,
    "repetition_penalty": repetition_penalty.RepetitionPenalty,
}


def options():
  """Every control's settings class (its Options), in registry order."""
  return tuple(control.Options for control in CONTROLS.values())


def settings():
  """Every control's settings as flags: (name, type, default, help), in registry order."""
  return tuple(declared for cls in options() for declared in cls.declared())


def flags():
  """The names of every control's flags."""
  return tuple(name for name, *_ in settings())


def metrics_after():
  """{setting: the flag metrics.json writes it after}, of every control that places some."""
  return {name: after for control in CONTROLS.values()
          for name, after in control.Options.metrics_after().items()}


def values_of(hps):
  """{flag: value} of every control's settings in `hps` (HParams)."""
  return {name: getattr(hps, name) for name in flags()}


def check(hps):
  """DataError naming the flag for a control's setting the search cannot run with."""
  for control in CONTROLS.values():
    control.Options.of(values_of(hps))


def every(values, vocab=None):
  """Every control, with its settings from `values` (a mapping; missing ones at their
  defaults), active or not, in registry order."""
  return tuple(control.from_values(values, vocab) for control in CONTROLS.values())


def make(values, vocab=None):
  """The active controls of `values` (as `every`), in registry order: what the search applies.
  vocab: the vocab.Vocab that settings naming words read."""
  return tuple(control for control in every(values, vocab) if control.active)


def written(hps, constants=False):
  """Every control's settings by name (constants: values a tf.constant holds), in registry
  order."""
  values = values_of(hps)
  return {name: value for control in CONTROLS.values()
          for name, value in control.Options.of(values).written(constants).items()}


def dir_suffix(hps):
  """Single-pass decode's directory name's part for the active controls (min_length's setting
  the name always holds)."""
  values = values_of(hps)
  options = (control.Options.of(values) for control in CONTROLS.values())
  return "".join(option.dir_suffix() for option in options if option.active)
