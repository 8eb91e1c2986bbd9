"""`hand_gradient` and `hand_gradient_xla`: the paper's scores and context with hand-written
gradients (training's; `hand_gradient_xla` with the tanh and its gradient as XLA kernels), the
memory per row. In training's loop the encoder states' gradient through every step's context is
one matmul after the loop (LateStatesGradient) instead of a product and a running sum over
[B, L, D] at every step.

Each kernel stands for a plain formula, named in its docstring: attention.Eager's, to which
tests/attention/test_attention_implementations.py holds them.
"""

from typing import Any, NamedTuple

import tensorflow as tf

from pointer_gen.attention import fast
from pointer_gen.attention import interface
from pointer_gen.base import loop_gradients


class HandGradient(fast.ScoresAndContext):
  """Hand-written gradients, TensorFlow's ops."""

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    del rows  # the memory per row
    extra = () if coverage is None else (coverage, w_c)
    return attention_scores(features, query_features, v, *extra,
                            compiled=self.uses_xla)  # [B, L]

  def context(self, attn, memory, rows=1):
    del rows  # the memory per row
    if isinstance(memory.own, ContextTap):  # training's loop (LateStatesGradient)
      return (attention_context_late_states_gradient(attn, memory.states)
              + memory.own.tap)  # [B, D]
    return attention_context(attn, memory.states)  # [B, D]

  def teacher_forcing(self, memory, steps):
    return LateStatesGradient(memory, steps)


class HandGradientXla(HandGradient):
  """Hand-written gradients, the tanh and its gradient as XLA kernels."""

  uses_xla = True


class ContextTap(NamedTuple):
  """This implementation's own memory (interface.Memory.own) in training's loop: zeros [B, D]
  added to the step's context, whose gradient is the context's."""
  tap: Any


class LateStatesGradient(interface.TeacherForcing):
  """Training's loop: zeros added to every step's context (its ContextTap) take the
  contexts' gradient, from which the states' gradient through all the contexts is one matmul
  after the loop (context_states_gradient, given every step's attention by `after`)."""

  def __init__(self, memory, steps):
    super().__init__(memory)
    states = memory.states  # [B, L, D]
    self._late = loop_gradients.LateGradient(context_states_gradient)
    taps = self._late.attach(
        tf.zeros([steps, tf.shape(states)[0], tf.shape(states)[2]], states.dtype),
        states)  # [T, B, D]
    # A TensorArray, not indexing: see layers.Encoder.call.
    self._taps = tf.TensorArray(states.dtype, size=steps).unstack(taps)

  def at(self, step):
    return self.memory._replace(own=ContextTap(self._taps.read(step)))

  def after(self, attn):
    self._late.set_inputs(tf.cast(attn, self.memory.states.dtype))  # [B, T, L]


def attention_scores(memory_features, query_features, v, coverage=None, w_c=None,
                     compiled=False):
  """e_i = v . tanh(W_h h_i + W_s s + b [+ w_c cov_i]) with a hand-written gradient.

  memory_features [B, L, U], query_features [B, U], v [U], coverage [B, L], w_c [1, U] ->
  scores [B, L]. This runs at every decoder step over [B, L, U], which is where training's
  time goes, and each pass over such a tensor costs about the same whatever it computes: the
  dot with v is one matrix-vector product, and the backward pass reuses tanh's output and
  makes a single [B, L, U] tensor (the features' gradient) where the automatic gradient makes
  several broadcasts and products.

  compiled: tanh's input and output, and the gradient of its input, each from one XLA kernel
  (one pass over [B, L, U] where TensorFlow's ops make three and two), compiled once per
  [B, L] met. Else TensorFlow's ops alone, which any TensorFlow runtime can run (exports).
  Plain formula: eager.Eager's scores; test_attention_implementations.
  """
  scores, scores_with_coverage = _SCORES[compiled]
  if coverage is None:
    return scores(memory_features, query_features, v)
  return scores_with_coverage(memory_features, query_features, v, coverage, w_c)


def _activations(memory_features, query_features, coverage=None, w_c=None):
  """tanh(W_h h_i + W_s s + b [+ w_c cov_i]) [B, L, U] with TensorFlow's ops; the coverage
  term and the query as one batched matmul [cov_i, 1] @ [w_c; W_s s + b]: one pass over
  [B, L, U] where a broadcast product and a broadcast sum make two."""
  if coverage is None:
    return tf.tanh(memory_features + query_features[:, None, :])
  rows = tf.stack([tf.broadcast_to(w_c[0], tf.shape(query_features)), query_features],
                  axis=1)  # [B, 2, U]
  return tf.tanh(memory_features + tf.matmul(fast.coverage_coefficients(coverage), rows))


@tf.function(jit_compile=True, autograph=False)
def _compiled_activations(memory_features, query_features, coverage=None, w_c=None):
  """_activations as one XLA kernel."""
  features = memory_features + query_features[:, None, :]  # [B, L, U]
  if coverage is not None:
    features += coverage[:, :, None] * w_c[0]
  return tf.tanh(features)


def _pre_tanh_gradient(activations, d_scores, v):
  """The gradient of scores = tanh(x) . v for x [B, L, U] from tanh(x) and d_scores [B, L]."""
  return tf.raw_ops.TanhGrad(y=activations, dy=d_scores[:, :, None] * v)  # [B, L, U]


@tf.function(jit_compile=True, autograph=False)
def _compiled_pre_tanh_gradient(activations, d_scores, v):
  """_pre_tanh_gradient as one XLA kernel."""
  return (1.0 - activations * activations) * (d_scores[:, :, None] * v)  # [B, L, U]


def _scores_functions(activations_fn, pre_tanh_gradient_fn):
  """The scores without and with coverage, with hand-written gradients, from these kernels."""

  def backward(activations, d_scores, v):
    """Gradients for the pre-tanh features [B, L, U] and for v [U]."""
    return (pre_tanh_gradient_fn(activations, d_scores, v),
            _weighted_position_sum(activations, d_scores))

  @tf.custom_gradient
  def scores(memory_features, query_features, v):
    activations = activations_fn(memory_features, query_features)  # [B, L, U]

    def gradient(d_scores):  # [B, L]
      d_features, d_v = backward(activations, d_scores, v)
      return d_features, tf.reduce_sum(d_features, axis=1), d_v

    return fast.matvec(activations, v), gradient  # [B, L]

  @tf.custom_gradient
  def scores_with_coverage(memory_features, query_features, v, coverage, w_c):
    activations = activations_fn(memory_features, query_features, coverage, w_c)  # [B, L, U]

    def gradient(d_scores):  # [B, L]
      d_features, d_v = backward(activations, d_scores, v)
      # One batched matmul over d_features gives both sum_i cov_i d_features_i (w_c's, per
      # article) and sum_i d_features_i (the query's).
      d_rows = tf.matmul(fast.coverage_coefficients(coverage), d_features,
                         transpose_a=True)  # [B, 2, U]
      return (d_features, d_rows[:, 1], d_v,
              fast.matvec(d_features, w_c[0]),  # [B, L]
              tf.reduce_sum(d_rows[:, 0], axis=0, keepdims=True))  # [1, U]

    return fast.matvec(activations, v), gradient  # [B, L]

  return scores, scores_with_coverage


def _weighted_position_sum(values, weights):
  """sum over b, l of weights[b, l] * values[b, l, :]: values [B, L, U], weights [B, L] -> [U].

  As one [1, B*L] x [B*L, U] matmul, which is faster than einsum("blu,bl->u").
  """
  units = tf.shape(values)[2]
  return tf.matmul(tf.reshape(weights, [1, -1]), tf.reshape(values, [-1, units]))[0]  # [U]


# attention_scores' functions: TensorFlow's ops (False) or XLA kernels (True).
_SCORES = {False: _scores_functions(_activations, _pre_tanh_gradient),
           True: _scores_functions(_compiled_activations, _compiled_pre_tanh_gradient)}


@tf.custom_gradient
def attention_context(attn, encoder_states):
  """sum_i a_i h_i: attn [B, L], encoder_states [B, L, D] -> [B, D].

  Einsum's gradient for the states builds the outer product a g^T as a batched matmul with an
  inner dimension of 1, the slowest part of the decoder's backward pass; a broadcast product
  gives the same numbers.
  Plain formula: eager.Eager's context, einsum("bl,bld->bd"); test_attention_implementations.
  """

  def gradient(d_context):  # [B, D]
    return (tf.linalg.matvec(encoder_states, d_context),  # [B, L]
            attn[:, :, None] * d_context[:, None, :])  # [B, L, D]

  return fast.weighted_states(attn, encoder_states), gradient


@tf.custom_gradient
def attention_context_late_states_gradient(attn, encoder_states):
  """attention_context whose gradient for the states is left out: training's decoder loop
  adds every step's at once after the loop (context_states_gradient), where at each step it
  would cost an outer product and a running sum over [B, L, D]. Plain formula: attention_context
  (einsum); test_attention_implementations.test_training_shape and
  test_model.test_training_gradients_equal_the_plain_formulation."""

  def gradient(d_context):  # [B, D]
    return tf.linalg.matvec(encoder_states, d_context), None  # [B, L]

  return fast.weighted_states(attn, encoder_states), gradient


def context_states_gradient(d_contexts, attn):
  """The encoder states' gradient through every step's context, sum over t of a_t d_t^T:
  d_contexts [T, B, D] (each step's context gradient), attn [B, T, L] -> [B, L, D].
  test_model.test_training_gradients_equal_the_plain_formulation holds it to the loop's own."""
  return tf.matmul(attn, tf.transpose(d_contexts, [1, 0, 2]), transpose_a=True)  # [B, L, D]
