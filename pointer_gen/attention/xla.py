"""`xla`: decoding only (no gradient), single-pass decode's attention: an article's memory kept
once for all its rows, as shared does, the scores as one XLA kernel over the features
transposed once per article.
"""

import tensorflow as tf

from pointer_gen.attention import shared


class Xla(shared.Shared):
  """Decoding only (no gradient): each article's memory read once by its rows, the scores as
  one XLA kernel."""

  uses_xla = True

  def memory(self, memory):
    return memory._replace(features=transpose_features(memory.features))  # [N, U, L]

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    extra = () if coverage is None else (coverage, w_c)
    return compiled_attention_scores(features, query_features, v, *extra, beams=rows)  # [B, L]


# Units summed per pass of compiled_attention_scores' loop (the largest divisor of the units up
# to this): the fastest of 2 to 32 at the paper's sizes over 64 articles of 4 hypotheses.
_UNITS_PER_PASS = 8


@tf.function(jit_compile=True, autograph=False)
def compiled_attention_scores(memory_features_t, query_features, v, coverage=None, w_c=None,
                              beams=1):
  """e_i = v . tanh(W_h h_i + W_s s + b [+ w_c cov_i]) without a gradient (decoding), as one
  XLA kernel. XLA's tanh and order of summation may differ from TensorFlow's in the last bit.
  Compiled once per shape: continuous batching's shapes are fixed.

  The features come transposed, memory_features_t [N, U, L] (transpose_features): with
  positions innermost each add over U is one vector instruction over 16 positions, where over
  a contiguous U it is a scalar chain. They are shared by `beams` consecutive rows of
  query_features [N*beams, U] and coverage [N*beams, L] (beam search's hypotheses of one
  article): each article's features are read once for all its hypotheses. Returns
  [N*beams, L].

  The sum over U runs as a loop adding 8 units per pass: XLA writes the whole [N, beams, U, L]
  tensor of a sum over all U at once before reducing it (its sums of more than 32 terms are
  split in two), 4 bytes per element, where a sum of 8 is one fused kernel that writes only
  [N*beams, L]; from one article it makes no difference.
  Plain formula: eager.Eager's scores with the features repeated per hypothesis;
  test_attention_implementations and
  test_kernels.test_compiled_attention_scores_equal_the_reference.
  """
  shape = tf.shape(memory_features_t)
  articles, length = shape[0], shape[2]
  units = memory_features_t.shape[1]
  chunk = max(c for c in range(1, _UNITS_PER_PASS + 1) if units % c == 0)
  query = tf.reshape(query_features, [articles, beams, units, 1])  # [N, K, U, 1]
  v = tf.reshape(v, [units, 1])  # [U, 1]
  if coverage is not None:
    coverage = tf.reshape(coverage, [articles, beams, 1, length])  # [N, K, 1, L]
    w_c = tf.reshape(w_c[0], [units, 1])  # [U, 1]

  def units_from(tensor, first, axis):  # chunk units of `tensor` from `first`, along `axis`
    begin = tf.one_hot(axis, tf.rank(tensor), on_value=first, dtype=tf.int32)
    size = tf.tensor_scatter_nd_update(tf.shape(tensor), [[axis]], [chunk])
    return tf.slice(tensor, begin, size)

  def add_units(first, scores):
    features = (units_from(memory_features_t, first, 1)[:, None]
                + units_from(query, first, 2))  # [N, K, chunk, L]
    if coverage is not None:
      features += coverage * units_from(w_c, first, 0)
    return first + chunk, scores + tf.reduce_sum(
        tf.tanh(features) * units_from(v, first, 0), axis=2)  # [N, K, L]

  _, scores = tf.while_loop(
      lambda first, _: first < units, add_units,
      (tf.constant(0), tf.zeros([articles, beams, length], memory_features_t.dtype)),
      # Not [None, beams, None]: with beams=1 (greedy decoding, --beam_size=1) and the sizes
      # unknown (a traced search's step-0 attention), a step's broadcast sum has an unknown
      # second dimension.
      shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None, None])))
  return tf.reshape(scores, [-1, length])  # [N*K, L]



def transpose_features(memory_features):
  """[N, L, U] -> [N, U, L], the layout compiled_attention_scores reads."""
  return tf.transpose(memory_features, [0, 2, 1])

