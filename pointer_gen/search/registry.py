"""The search strategies by name (`--search`), their own settings as flags, and the search's
settings written out.

A strategy is a contract.Strategy in its own module; registering it is its line in STRATEGIES.
Its own settings (its Options, each declared with settings.setting) are flags of the same
names, which config.py defines from `settings` and `--help` lists under decode; one given with
another strategy is an error naming it (check_flags). The first sentence of a strategy's
docstring is its part of --search's help. The search's settings are written out here alone, for
single-pass decode's directory name (dir_name), its metrics.json and the export's `settings`
signature (written), the decoding controls' (controls/registry.py) beside the strategy's.
"""

from pointer_gen.base.errors import DataError
from pointer_gen.search import beam
from pointer_gen.search import greedy
from pointer_gen.search import sample
from pointer_gen.search.controls import registry as controls

# --search's choices, one line each: name -> contract.Strategy class.
STRATEGIES = {
    "beam": beam.BeamSearch,
    "greedy": greedy.GreedySearch,
    "sample": sample.Sampling,
}
# The original's, which the decode directory's name and metrics.json leave unnamed.
DEFAULT = "beam"


def strategy_class(name):
  """The contract.Strategy class registered as `name`; DataError naming --search if none is."""
  if name not in STRATEGIES:
    raise DataError(f"--search={name}: expected one of {', '.join(STRATEGIES)}")
  return STRATEGIES[name]


def options():
  """Every strategy's settings class (its Options), in registry order."""
  return tuple(strategy.Options for strategy in STRATEGIES.values())


def settings():
  """Every strategy's own settings as flags: (name, type, default, help), in registry order."""
  return tuple(declared for cls in options() for declared in cls.declared())


def metrics_after():
  """{setting: the flag metrics.json writes it after}, of every control and strategy that
  places some, the controls' first (a strategy's may follow one)."""
  return {**controls.metrics_after(),
          **{name: after for strategy in STRATEGIES.values()
             for name, after in strategy.Options.metrics_after().items()}}


def search_help():
  """--search's help: each strategy's name, the first sentence of its docstring and its
  flags."""

  def described(name, strategy):
    own = ", ".join(f"--{flag}" for flag in strategy.Options.flags())
    return f"{name}: {first_sentence(strategy)}" + (f" ({own})" if own else "")

  return ("The search strategy of decode (single-pass and continuous), export and eval's "
          "samples. " + "; ".join(described(*item) for item in STRATEGIES.items())
          + ". A strategy's own flags are refused with another.")


def first_sentence(strategy):
  """The first sentence of the strategy's docstring, on one line, without its period."""
  paragraph = strategy.__doc__.strip().split("\n\n")[0]
  return " ".join(paragraph.split()).split(". ")[0].rstrip(".")


def make(hps, settings, attention=None):
  """The strategy --search names, with contract.Settings `settings`, its own settings from
  `hps` and `attention` (an attention.SearchAttention; default attention.DEFAULT_SEARCH)."""
  return strategy_class(hps.search).from_hparams(hps, settings, attention)


def check(hps):
  """DataError naming the flag for a strategy name, a strategy's or a control's setting the
  search cannot run with."""
  strategy_class(hps.search).Options.from_hparams(hps)
  controls.check(hps)


def check_flags(hps, given):
  """DataError for a flag in `given` (the names the user set) that sets another strategy's own
  settings and none of --search's: it would be ignored."""
  own = set(strategy_class(hps.search).Options.flags())
  for name, strategy in STRATEGIES.items():
    for flag in strategy.Options.flags():
      if flag in given and flag not in own:
        raise DataError(f"--{flag} is a setting of --search={name}, not of "
                        f"--search={hps.search}: leave it out (or out of the --flagfile)")


def written(hps, constants=False):
  """The search's settings by name, in this order: the strategy (`search`, left out for
  DEFAULT unless `constants`), min_dec_steps, max_dec_steps, the strategy's own settings,
  first_step_context, the other controls' settings. constants: every value one a tf.constant
  holds (the export's `settings` signature, which names the strategy always), else JSON values
  (metrics.json)."""
  options = strategy_class(hps.search).Options.from_hparams(hps)
  named = {"search": hps.search} if constants or hps.search != DEFAULT else {}
  control_settings = controls.written(hps, constants)
  return {**named, "min_dec_steps": control_settings.pop("min_dec_steps"),
          "max_dec_steps": hps.max_dec_steps, **options.written(constants),
          "first_step_context": hps.first_step_context, **control_settings}


def dir_name(hps):
  """The search's part of single-pass decode's directory name: the original's
  `<B>beam_<m>mindec_<M>maxdec` (`greedy_...` for greedy decoding), then a suffix for each
  setting off its default (`_zerosctx`, the controls': `_block<n>gram`, `_banunk`,
  `_reppen<p>`, the strategy's own: `_lp<alpha>`)."""
  options = strategy_class(hps.search).Options.from_hparams(hps)
  context = "" if hps.first_step_context == "original" else f"_{hps.first_step_context}ctx"
  return (f"{options.dir_name(hps.search)}_{hps.min_dec_steps}mindec_{hps.max_dec_steps}maxdec"
          f"{context}{controls.dir_suffix(hps)}{options.dir_suffix()}")
