"""`shared`: decoding only (no gradient), the export's attention: an article's states and
features kept once for all its rows (beam search's hypotheses), read by each, with TensorFlow's
ops alone, which any TensorFlow runtime runs.
"""

import tensorflow as tf

from pointer_gen.attention import fast


class Shared(fast.ScoresAndContext):
  """Decoding only (no gradient): each article's memory read once by its rows, TensorFlow's
  ops."""

  differentiable = False

  def rows_kept(self, rows):
    # An article's states and features shared by its rows; the mask per row (each row's
    # attention is masked).
    return super().rows_kept(rows)._replace(states=1, features=1)

  def scores(self, features, query_features, v, coverage=None, w_c=None, rows=1):
    extra = () if coverage is None else (coverage, w_c)
    return shared_attention_scores(features, query_features, v, *extra, beams=rows)  # [B, L]

  def context(self, attn, memory, rows=1):
    # The context as one batched matmul over the article's states, for all its rows.
    return fast.weighted_states(attn, memory.states, rows)  # [B, D]


# The activations one pass of shared_attention_scores' loop makes, at most (but at least one
# article's): a few MB stays in a CPU's cache between the ops that write and read it.
_SHARED_PASS_ELEMENTS = 1 << 20


def shared_attention_scores(memory_features, query_features, v, coverage=None, w_c=None,
                            beams=1):
  """e_i = v . tanh(W_h h_i + W_s s + b [+ w_c cov_i]) without a gradient (decoding), with
  TensorFlow's ops only (any TensorFlow runtime runs them: exports), for memory shared by
  `beams` consecutive rows:
  memory_features [N, L, U], query_features [N*beams, U], coverage [N*beams, L] -> [N*beams, L].

  Each article's features are read once for its rows (repeated per row, they would be read
  `beams` times), and the articles go through in groups, a group per pass of a loop: the whole
  batch's activations at once ([N*beams, L, U], 105 MB at 32 x 4 x 400 x 512) go out to memory
  and back between the ops that make and reduce them, where a group's stay in the cache. The
  coverage term and the query are one batched matmul [cov_i, 1] @ [w_c; W_s s + b], its
  operands made once.
  Plain formula: eager.Eager's scores with the features repeated per row;
  test_attention_implementations, test_kernels.test_shared_attention_scores_equal_the_reference.
  """
  shape = tf.shape(memory_features)
  articles, length, units = shape[0], shape[1], shape[2]
  per_pass = tf.maximum(_SHARED_PASS_ELEMENTS // (beams * length * units), 1)
  query = tf.reshape(query_features, [articles, beams, 1, units])  # [N, K, 1, U]
  if coverage is not None:
    rows = tf.concat([tf.broadcast_to(w_c, tf.shape(query)), query], axis=2)  # [N, K, 2, U]
    coefficients = fast.coverage_coefficients(
        tf.reshape(coverage, [articles, beams, length]))  # [N, K, L, 2]

  def add_group(first, scores):
    group = lambda t: t[first:first + per_pass]  # [N, ...] -> [G, ...]
    features = group(memory_features)[:, None]  # [G, 1, L, U]
    if coverage is None:
      activations = tf.tanh(features + group(query))  # [G, K, L, U]
    else:
      activations = tf.tanh(features + tf.matmul(group(coefficients), group(rows)))
    return first + per_pass, scores.write(1 + first // per_pass,
                                          tf.reshape(fast.matvec(activations, v), [-1]))  # [G*K*L]

  # Flat groups after an empty one: no articles (no groups) concatenate to [0] too.
  empty = tf.TensorArray(memory_features.dtype, size=1, dynamic_size=True, infer_shape=False,
                         element_shape=[None]).write(0, tf.zeros([0], memory_features.dtype))
  _, scores = tf.while_loop(lambda first, _: first < articles, add_group, (0, empty))
  return tf.reshape(scores.concat(), [-1, length])  # [N*K, L]


