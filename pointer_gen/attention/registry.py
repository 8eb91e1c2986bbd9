"""The attention implementations by name (`--attention_implementation`), the one table of what
`auto` runs in each context, and the older flags that spell a choice in one context.

An implementation is an interface.Implementation in its own module; registering it is its line
in IMPLEMENTATIONS. The flag's choices, its help and
tests/attention/test_attention_implementations.py take it from there.
"""

from pointer_gen.attention import eager
from pointer_gen.attention import hand_gradient
from pointer_gen.attention import shared
from pointer_gen.attention import xla
from pointer_gen.base.errors import DataError

# --attention_implementation's choices, one line each: name -> interface.Implementation class.
IMPLEMENTATIONS = {
    "eager": eager.Eager,
    "hand_gradient": hand_gradient.HandGradient,
    "hand_gradient_xla": hand_gradient.HandGradientXla,
    "shared": shared.Shared,
    "xla": xla.Xla,
}
AUTO = "auto"

# Where the attention runs, as --help names them.
CONTEXTS = {
    "train": "train and eval",  # the teacher-forced pass
    "first_step": "a search's step 0",  # its attention from the encoder's final state
    "decode": "single-pass decode",  # its search steps
    "view": "continuous decode and eval's samples",  # searches that keep the attention, and
                                                     # searches built without flags
    "export": "export",  # the SavedModel's search steps
}
# What auto runs in each context: the fastest there.
DEFAULTS = {
    "train": "hand_gradient_xla",
    "first_step": "hand_gradient",
    "decode": "xla",
    "view": "hand_gradient",
    "export": "shared",
}

# The older flags, spellings of --attention_implementation under auto in one context each: the
# flag says whether that context's implementation uses XLA, DEFAULTS's or this one.
SPELLINGS = {
    "compiled_attention": ("decode", "hand_gradient"),  # --nocompiled_attention
    "export_compiled_attention": ("export", "xla"),     # --export_compiled_attention
}

_INSTANCES = {}


def get(name):
  """The registered implementation `name`, one instance a name."""
  if name not in IMPLEMENTATIONS:
    raise DataError(f"--attention_implementation={name}: expected {AUTO} or one of "
                    f"{', '.join(IMPLEMENTATIONS)}")
  if name not in _INSTANCES:
    _INSTANCES[name] = IMPLEMENTATIONS[name](name)
  return _INSTANCES[name]


def auto(context, hps=None):
  """The implementation auto runs in `context` (one of CONTEXTS): DEFAULTS's, unless `hps`
  (HParams) sets the context's older flag (SPELLINGS) to the other side of XLA."""
  if context not in DEFAULTS:
    raise ValueError(f"attention context {context!r}: expected one of {', '.join(CONTEXTS)}")
  name = DEFAULTS[context]
  for flag, (flag_context, other) in SPELLINGS.items():
    if hps is not None and flag_context == context and get(name).uses_xla != getattr(hps, flag):
      name = other
  return get(name)


def chosen(hps, context):
  """The implementation the HParams `hps` give `context`: an explicit
  --attention_implementation everywhere, else auto's."""
  if hps.attention_implementation == AUTO:
    return auto(context, hps)
  if context not in DEFAULTS:
    raise ValueError(f"attention context {context!r}: expected one of {', '.join(CONTEXTS)}")
  return get(hps.attention_implementation)


class SearchAttention:
  """The implementations a search runs: `steps` for every decoder step (which lays out and keeps
  the memory the search holds) and `first_step` for the step-0 attention from the encoder's
  final state, over the memory as encoded, one row per article."""

  def __init__(self, steps, first_step):
    self.steps, self.first_step = steps, first_step

  @classmethod
  def of(cls, hps, context):
    """For a search in `context` ("decode", "view" or "export")."""
    return cls(chosen(hps, context), chosen(hps, "first_step"))


# Searches built without HParams (tests, tools).
DEFAULT_SEARCH = SearchAttention(auto("view"), auto("first_step"))


def implementation_help():
  """--attention_implementation's help: each implementation's docstring, auto's table."""
  described = "; ".join(f"{name}: {_described(cls)}" for name, cls in IMPLEMENTATIONS.items())
  table = ", ".join(f"{name} for {CONTEXTS[context]}" for context, name in DEFAULTS.items())
  spelled = " and ".join(spelling_help(flag) for flag in SPELLINGS)
  return ("How the attention is computed, in every mode; each gives the same numbers to float32 "
          f"rounding (tests/attention/test_attention_implementations.py). {described}. {AUTO}: the "
          f"fastest in each context: {table}; {spelled}. An explicit value applies everywhere; "
          + ", ".join(f"--[no]{flag}" for flag in SPELLINGS)
          + " given with it must agree with it (XLA or not).")


def spelling_help(flag):
  """What the older flag `flag` spells: --attention_implementation's choice in its context."""
  context, other = SPELLINGS[flag]
  xla_side, ops_side = sorted((DEFAULTS[context], other), key=lambda n: not get(n).uses_xla)
  return f"--{flag} is {xla_side} for {CONTEXTS[context]}, --no{flag} {ops_side}"


def _described(implementation_class):
  """The class's docstring as one clause of the help."""
  text = " ".join(implementation_class.__doc__.split()).rstrip(".")
  return text[0].lower() + text[1:]


def check(hps, given):
  """Raises DataError naming the flags when --attention_implementation cannot serve the mode
  or contradicts an older flag given with it (`given`: the flags the user set). Those flags
  choose between XLA and TensorFlow's ops under auto; with an explicit implementation they may
  be left out, or must agree with it."""
  name = hps.attention_implementation
  if name == AUTO:
    return
  implementation = get(name)
  if hps.mode == "train" and not hps.checkpoint_utility and not implementation.differentiable:
    trainable = ", ".join(n for n, i in IMPLEMENTATIONS.items() if i.differentiable)
    raise DataError(f"--attention_implementation={name} has no gradient and cannot train "
                    f"(--mode=train): use {AUTO} or one of {trainable}")
  for flag, (context, _) in SPELLINGS.items():
    value = getattr(hps, flag)
    # The flag's context is the mode of that name.
    if flag in given and hps.mode == context and value != implementation.uses_xla:
      raise DataError(
          f"--{'' if value else 'no'}{flag} contradicts --attention_implementation={name}, "
          f"which {'uses' if implementation.uses_xla else 'does not use'} XLA: leave "
          f"--{flag} out (it chooses only with --attention_implementation={AUTO})")
