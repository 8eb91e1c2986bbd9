"""`eager`: the paper's attention (See et al. 2017, eq. 1-2 and 11) with TensorFlow's ops,
differentiated by TensorFlow: the reference every other implementation is held to
(tests/attention/test_attention_implementations.py). A formula with a new weight is written here
alone."""

import tensorflow as tf

from pointer_gen.attention import interface
from pointer_gen.base.precision import OUTPUT_DTYPE


class Eager(interface.Implementation):
  """The paper's equations, differentiated by TensorFlow (the reference; slower)."""

  def attend(self, layer, query, memory, coverage=None, rows=1):
    del rows  # the memory per row
    states, features = memory.states, memory.features  # [B, L, D], W_h h_i [B, L, U]
    # e_i = v . tanh(W_h h_i + W_s s + b + w_c cov_i)
    pre_tanh = features + layer.query_layer(query)[:, None, :]  # [B, L, U]
    if layer.use_coverage and coverage is not None:
      pre_tanh += coverage[:, :, None] * tf.convert_to_tensor(layer.w_c)  # [B, L, U]
    scores = tf.reduce_sum(tf.convert_to_tensor(layer.v) * tf.tanh(pre_tanh), axis=2)  # [B, L]
    # a = softmax(e), as the original: over every position, the padding zeroed, renormalised;
    # in float32 in every precision.
    attn = (tf.nn.softmax(tf.cast(scores, OUTPUT_DTYPE))
            * tf.cast(memory.mask, OUTPUT_DTYPE))  # [B, L]
    attn /= tf.reduce_sum(attn, axis=1, keepdims=True)  # [B, L]
    # h* = sum_i a_i h_i
    context = tf.einsum("bl,bld->bd", tf.cast(attn, states.dtype), states)  # [B, D]
    return context, attn
