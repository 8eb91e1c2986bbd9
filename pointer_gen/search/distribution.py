"""The best candidates of the pointer-generator's final distribution, which every strategy draws
its tokens from: a fast top-k, and the top k of the final distribution without building it."""

import tensorflow as tf


# Positions per block of top_k's first pass where no block size divides the width (the values
# are then padded to a multiple of it): the fastest of 32-256 at beam search's widths.
_TOP_K_BLOCK = 64
# Block sizes tried first, smallest first: one that divides the width saves the padding's copy
# of the values.
_DIVIDING_BLOCKS = range(64, 129)


def _block_size(width):
  """top_k's block size for a width known when tracing (None: not known) and whether the
  values must be padded to a multiple of it."""
  for block in _DIVIDING_BLOCKS if width is not None else ():
    if width % block == 0:
      return block, False
  return _TOP_K_BLOCK, True


def top_k(values, k):
  """tf.math.top_k(values, k) (values and ids; equal values: the lower id first) of values
  [M, W], in two cheap passes instead of one slow one: the maxima of blocks of 64-128
  positions, the top k blocks, then the top k among their values. The k largest values lie in
  the k blocks of largest maxima (ties going to the lower block), and the chosen blocks are
  kept in id order, so ties still go to the lower id. Returns values [M, k], ids [M, k] int32.
  """
  rows, width = tf.shape(values)[0], tf.shape(values)[1]
  block, pad = _block_size(values.shape[1])
  blocks = (width + block - 1) // block

  def by_blocks():
    tiled = values
    if pad:
      tiled = tf.pad(values, [[0, 0], [0, blocks * block - width]],
                     constant_values=float("-inf"))  # [M, blocks*block]
    tiled = tf.reshape(tiled, [rows, blocks, block])  # [M, blocks, block]
    _, best = tf.math.top_k(tf.reduce_max(tiled, axis=2), k)  # [M, k]
    best = tf.sort(best, axis=1)
    candidates = tf.reshape(tf.gather(tiled, best, batch_dims=1),
                            [rows, k * block])  # [M, k*block]
    top, position = tf.math.top_k(candidates, k)  # [M, k]
    return top, (tf.gather(best, position // block, batch_dims=1) * block
                 + position % block)

  return tf.cond(blocks >= k, by_blocks, lambda: tuple(tf.math.top_k(values, k)))


def _flat_gather(values, ids):
  """values [M, W] at ids [M, C] (each in [0, W)) -> [M, C], as one gather from the flattened
  values (cheaper than a gather with batch_dims)."""
  rows, width = tf.shape(values)[0], tf.shape(values)[1]
  flat = tf.reshape(ids + tf.range(rows)[:, None] * width, [-1])  # [M*C]
  return tf.reshape(tf.gather(tf.reshape(values, [-1]), flat), tf.shape(ids))


def _vocabulary_terms(vocab_logits, k, article_ids):
  """The k best P_vocab [M, k] with their ids [M, k] and, with article_ids [M, L] (else None),
  P_vocab at those ids [M, L] (0 for an id outside the vocabulary or -1): the softmax, then
  the top k of it (TensorFlow's ops alone)."""
  with tf.name_scope("softmax"):
    vocab_probs = tf.nn.softmax(vocab_logits)  # [M, V]
  with tf.name_scope("top_k"):
    best_probs, best = top_k(vocab_probs, k)  # [M, k]
  if article_ids is None:
    return best_probs, best, None
  in_vocab = (article_ids >= 0) & (article_ids < tf.shape(vocab_logits)[1])  # [M, L]
  return best_probs, best, tf.where(
      in_vocab, _flat_gather(vocab_probs, tf.where(in_vocab, article_ids, 0)), 0.0)


def top_of_final_distribution(vocab_logits, attn, p_gen, index, k):
  """top_k(final_distribution(softmax(vocab_logits), attn, p_gen, ext_ids, ...), k) without
  building the [M, V + N] distribution: k values [M, k] and extended ids [M, k] int32.

  An id outside the article has probability p_gen * P_vocab, so the k best ids are among the k
  best vocabulary ids and the article's own ids. Those candidates alone get their probability
  (p_gen * P_vocab where in the vocabulary, plus the attention on the id summed over its
  positions), and the best k of them are chosen with ties going to the lower id, as top_k over
  the whole distribution does. (Where p_gen * P_vocab rounds two different P_vocab to one value
  at the cut, the larger P_vocab is kept.) This replaces the padding, scatter and top-k passes
  over [M, V + N] with a top-k over [M, V] and work over [M, L].

  vocab_logits [M, V], attn [M, L], p_gen [M] (None: no copying), index:
  search.copy_index(ext_ids) (or the search's memory, which holds it).
  """
  article_ids = None if p_gen is None else index.article_ids  # [M, L]
  best_probs, best, article_vocab_probs = _vocabulary_terms(vocab_logits, k, article_ids)
  if p_gen is None:
    return best_probs, best
  rows = tf.shape(vocab_logits)[0]
  # The attention on each distinct article id, summed over its positions in article order
  # (no gather into id order first, which costs more than the sums).
  length = tf.shape(attn)[1]
  segments = tf.reshape(index.copy_segment + tf.range(rows)[:, None] * length,
                        [-1])  # [M*L]
  copied = tf.reshape(tf.math.unsorted_segment_sum(tf.reshape(attn, [-1]), segments,
                                                   rows * length),
                      [rows, length])  # [M, L]: distinct id r's summed attention
  is_id = article_ids >= 0  # [M, L]
  article_probs = (p_gen[:, None] * article_vocab_probs
                   + (1.0 - p_gen)[:, None] * copied)  # [M, L]
  # A best vocabulary id that is also in the article is counted once, with the article's.
  in_article = tf.reduce_any(best[:, :, None] == article_ids[:, None, :], axis=2)  # [M, k]
  ids = tf.concat([best, article_ids], axis=1)  # [M, k + L]
  probs = tf.concat([p_gen[:, None] * best_probs, article_probs], axis=1)  # [M, k + L]
  valid = tf.concat([~in_article, is_id], axis=1)  # [M, k + L]
  # One int64 key per candidate, larger for a larger probability, then for a lower id: the
  # bits of a non-negative float32 order as the float does.
  keys = (tf.cast(tf.bitcast(probs, tf.int32), tf.int64) * 2**32
          + tf.cast(tf.int32.max - ids, tf.int64))  # [M, k + L]
  _, position = tf.math.top_k(tf.where(valid, keys, -1), k)  # [M, k]
  return (tf.gather(probs, position, batch_dims=1),
          tf.gather(ids, position, batch_dims=1))
