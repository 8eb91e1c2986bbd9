"""The attention's score and context, e_i = v . tanh(W_h h_i + W_s s + b + w_c cov_i) and
sum_i a_i h_i: the paper's equations as the reference implementation, `eager` (TensorFlow's
ops, differentiated by TensorFlow), and the fast implementations of the same interface, each
registered by name in IMPLEMENTATIONS. `--attention_implementation` chooses one (`chosen`);
"auto" is today's fastest for each context. tests/test_attention_implementations.py holds
every registered implementation to `eager`: editing `Eager` alone makes the others fail there.

An implementation computes, for B query rows (N articles of `rows` rows each when it shares
the memory, else N*rows articles of one row):

  scores(features, query_features, v, coverage=None, w_c=None, rows=1) -> e [B, L]
      features: W_h h_i as memory_layout made them ([N, L, U] unless it transposes them);
      query_features W_s s + b [B, U]; v [U]; coverage [B, L] and w_c [1, U] with coverage
  context(attn, states, rows=1, tap=None) -> sum_i a_i h_i [B, D]
      attn [B, L]; states [N, L, D]; tap [B, D] zeros, given in training when
      late_states_gradient: the context's gradient flows into it and the states get none here
  memory_layout(features) -> the features as `scores` reads them, made once per article

and says what it can do: differentiable (gradients for every input and weight: it can train),
uses_xla (an XLA kernel: an export of it runs only where XLA does), shares_memory (an
article's rows read one copy of its states and features: the search keeps them once per
article), late_states_gradient (training's decoder loop adds the states' gradient through
every step's context once, after the loop: model.PointerGenerator.call).

The layer (layers.BahdanauCoverageAttention) applies the softmax and the mask around these.
"""

import tensorflow as tf

from pointer_gen import kernels
from pointer_gen.errors import DataError

# Where the attention runs; "auto" picks for each (AUTO).
CONTEXTS = (
    "train",       # the teacher-forced pass: train, eval
    "first_step",  # a search's step-0 attention from the encoder's final state
    "decode",      # single-pass decode's search steps
    "view",        # searches that keep the attention: continuous decode, eval's samples
    "export",      # the SavedModel's search steps
)
AUTO = "auto"

IMPLEMENTATIONS = {}


def register(name):
  """Class decorator: registers one instance of the class under `name`."""

  def add(cls):
    if name in IMPLEMENTATIONS or name == AUTO:
      raise ValueError(f"attention implementation name {name!r} is taken")
    implementation = cls()
    implementation.name = name
    IMPLEMENTATIONS[name] = implementation
    return cls

  return add


class Implementation:
  """The interface (see the module's docstring); a subclass implements scores and context."""

  name = None
  differentiable = True
  uses_xla = False
  shares_memory = False
  late_states_gradient = False

  def memory_layout(self, features):
    return features

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    raise NotImplementedError

  def context(self, attn, states, rows=1, tap=None):
    raise NotImplementedError

  def __repr__(self):
    return f"<attention implementation {self.name}>"


@register("eager")
class Eager(Implementation):
  """The paper's equations with TensorFlow's ops and TensorFlow's own gradients: the model as
  the paper writes it, which every other implementation is held to."""

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    features = _per_row(features, rows)  # [B, L, U]
    pre_tanh = features + query_features[:, None, :]  # [B, L, U]
    if coverage is not None:
      pre_tanh += coverage[:, :, None] * w_c  # [B, L, U]
    return tf.reduce_sum(v * tf.tanh(pre_tanh), axis=2)  # [B, L]

  def context(self, attn, states, rows=1, tap=None):
    _no_tap(self, tap)
    return tf.einsum("bl,bld->bd", attn, _per_row(states, rows))  # [B, D]


class HandGradient(Implementation):
  """kernels.attention_scores' and attention_context's hand-written gradients; the memory per
  row; with uses_xla, the tanh and its gradient as XLA kernels."""

  late_states_gradient = True

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    extra = () if coverage is None else (coverage, w_c)
    return kernels.attention_scores(_per_row(features, rows), query_features, v, *extra,
                                    compiled=self.uses_xla)  # [B, L]

  def context(self, attn, states, rows=1, tap=None):
    states = _per_row(states, rows)  # [B, L, D]
    if tap is None:
      return kernels.attention_context(attn, states)  # [B, D]
    return kernels.attention_context_late_states_gradient(attn, states) + tap  # [B, D]


@register("hand_gradient")
class HandGradientOps(HandGradient):
  """The hand-written gradients with TensorFlow's ops (auto: a search's step 0, the attention
  views, --nocompiled_attention's decode)."""


@register("hand_gradient_xla")
class HandGradientXla(HandGradient):
  """The hand-written gradients with the tanh as XLA kernels (auto: training and eval)."""

  uses_xla = True


class SharedMemory(Implementation):
  """Decoding only (no gradient): the states and features once per article, read by its rows,
  the context as one batched matmul (kernels.weighted_states)."""

  differentiable = False
  shares_memory = True

  def context(self, attn, states, rows=1, tap=None):
    _no_tap(self, tap)
    return kernels.weighted_states(attn, states, rows)  # [B, D]


@register("shared")
class SharedOps(SharedMemory):
  """kernels.shared_attention_scores: TensorFlow's ops, a few articles a pass (auto: export)."""

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    extra = () if coverage is None else (coverage, w_c)
    return kernels.shared_attention_scores(features, query_features, v, *extra,
                                           beams=rows)  # [B, L]


@register("xla")
class SharedXla(SharedMemory):
  """kernels.compiled_attention_scores, one XLA kernel over the transposed features (auto:
  single-pass decode with --compiled_attention, export with --export_compiled_attention)."""

  uses_xla = True

  def memory_layout(self, features):
    return kernels.transpose_features(features)  # [N, U, L]

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    extra = () if coverage is None else (coverage, w_c)
    return kernels.compiled_attention_scores(features, query_features, v, *extra,
                                             beams=rows)  # [B, L]


def _per_row(memory, rows):
  """memory [N, L, ...] shared by `rows` consecutive rows -> [N*rows, L, ...]."""
  return memory if rows == 1 else tf.repeat(memory, rows, axis=0)


def _no_tap(implementation, tap):
  if tap is not None:
    raise ValueError(f"{implementation!r} does not leave the states' gradient to after the loop")


def get(name):
  """The registered implementation `name`."""
  try:
    return IMPLEMENTATIONS[name]
  except KeyError:
    raise DataError(f"--attention_implementation={name}: expected {AUTO} or one of "
                    f"{', '.join(IMPLEMENTATIONS)}") from None


def auto(context, compiled_attention=True, export_compiled_attention=False):
  """The implementation "auto" gives `context`: the fastest there, as before the flag was."""
  if context == "train":
    return get("hand_gradient_xla")
  if context == "decode":
    return get("xla" if compiled_attention else "hand_gradient")
  if context == "export":
    return get("xla" if export_compiled_attention else "shared")
  if context in ("first_step", "view"):
    return get("hand_gradient")
  raise ValueError(f"attention context {context!r}: expected one of {', '.join(CONTEXTS)}")


def chosen(hps, context):
  """The implementation the HParams `hps` give `context` (one of CONTEXTS): an explicit
  --attention_implementation everywhere, else `auto` with --compiled_attention (decode) and
  --export_compiled_attention (export)."""
  if hps.attention_implementation == AUTO:
    return auto(context, hps.compiled_attention, hps.export_compiled_attention)
  if context not in CONTEXTS:
    raise ValueError(f"attention context {context!r}: expected one of {', '.join(CONTEXTS)}")
  return get(hps.attention_implementation)


class SearchAttention:
  """The implementations a search runs: `steps` for every decoder step (its memory_layout and
  shares_memory decide how the search stores the memory) and `first_step` for the step-0
  attention from the encoder's final state, over the memory as encoded, one row per article."""

  def __init__(self, steps, first_step):
    self.steps, self.first_step = steps, first_step

  @classmethod
  def of(cls, hps, context):
    """For a search in `context` ("decode", "view" or "export")."""
    return cls(chosen(hps, context), chosen(hps, "first_step"))


# Searches built without HParams (tests, tools): the memory per row, TensorFlow's ops.
DEFAULT_SEARCH = SearchAttention(get("hand_gradient"), get("hand_gradient"))


def check(hps, given):
  """Raises DataError naming the flags when --attention_implementation cannot serve the mode
  or contradicts --compiled_attention / --export_compiled_attention given with it (`given`:
  the flags the user set). Those two flags choose between XLA and TensorFlow's ops under
  "auto"; with an explicit implementation they may be left out, or must agree with it."""
  name = hps.attention_implementation
  if name == AUTO:
    return
  implementation = get(name)
  if hps.mode == "train" and not hps.checkpoint_utility and not implementation.differentiable:
    trainable = ", ".join(n for n, i in IMPLEMENTATIONS.items() if i.differentiable)
    raise DataError(f"--attention_implementation={name} has no gradient and cannot train "
                    f"(--mode=train): use {AUTO} or one of {trainable}")
  for flag, mode in (("compiled_attention", "decode"), ("export_compiled_attention", "export")):
    value = getattr(hps, flag)
    if flag in given and hps.mode == mode and value != implementation.uses_xla:
      raise DataError(
          f"--{'' if value else 'no'}{flag} contradicts --attention_implementation={name}, "
          f"which {'uses' if implementation.uses_xla else 'does not use'} XLA: leave "
          f"--{flag} out (it chooses only with --attention_implementation={AUTO})")
