"""What the fast implementations share: the step around their own kernels (the paper's weights
read as the reference reads them, the original's masked softmax) and the products they compute
at the attention's sizes.

A fast implementation subclasses ScoresAndContext and writes its kernels for the two passes over
the memory, where the time goes:

  scores(features, query_features, v, coverage=None, w_c=None, rows=1) -> e [B, L]
      features W_h h_i as its `memory` laid them out, query_features W_s s + b [B, U], v [U],
      coverage [B, L] and w_c [1, U] with coverage
  context(attn, memory, rows=1) -> sum_i a_i h_i [B, D], attn [B, L] in the states' dtype

The step reads the weights the paper's equations have; a formula with another weight
(eager.py) leaves these behind, and tests/attention/test_attention_implementations.py says so.
"""

import tensorflow as tf

from pointer_gen.attention import interface
from pointer_gen.base.precision import OUTPUT_DTYPE


class ScoresAndContext(interface.Implementation):
  """A step whose scores and context are the subclass's kernels."""

  def attend(self, layer, query, memory, coverage=None, rows=1):
    query_features = layer.query_layer(query)  # [B, U]
    v = tf.convert_to_tensor(layer.v)  # [U]
    coverage_args = ((coverage, tf.convert_to_tensor(layer.w_c))
                     if layer.use_coverage and coverage is not None else ())
    scores = self.scores(memory.features, query_features, v, *coverage_args,
                         rows=rows)  # [B, L]
    # As the original: softmax over every position, zero the padding, renormalise; float32.
    attn = (tf.nn.softmax(tf.cast(scores, OUTPUT_DTYPE))
            * tf.cast(memory.mask, OUTPUT_DTYPE))  # [B, L]
    attn /= tf.reduce_sum(attn, axis=1, keepdims=True)  # [B, L]
    context = self.context(tf.cast(attn, memory.states.dtype), memory, rows)  # [B, D]
    return context, attn

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    raise NotImplementedError

  def context(self, attn, memory, rows=1):
    raise NotImplementedError


def weighted_states(attn, encoder_states, beams=1):
  """sum_i a_i h_i: attn [N*beams, L], encoder_states [N, L, D] shared by `beams` consecutive
  rows -> [N*beams, D]; as an [N, beams, L] x [N, L, D] batched matmul, which is faster than
  tf.linalg.matvec with transpose_a at the attention's sizes."""
  shape = tf.shape(encoder_states)
  return tf.reshape(tf.matmul(tf.reshape(attn, [shape[0], beams, shape[1]]), encoder_states),
                    [-1, shape[2]])  # [N*beams, D]


def matvec(values, vector):
  """values [..., L, U] . vector [U] -> [..., L], as one [B*L, U] x [U, 1] matmul, which is
  faster than BatchMatMulV2 (tf.linalg.matvec) at the attention's sizes."""
  shape = tf.shape(values)
  return tf.reshape(tf.matmul(tf.reshape(values, [-1, shape[-1]]), vector[:, None]),
                    shape[:-1])  # [..., L]


def coverage_coefficients(coverage):
  """[cov_i, 1] for every position: coverage [..., L] -> [..., L, 2]."""
  return tf.stack([coverage, tf.ones_like(coverage)], axis=-1)
