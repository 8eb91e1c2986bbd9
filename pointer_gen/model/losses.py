"""The original's losses: masked NLL (pointer or baseline form) and the coverage loss."""

from typing import NamedTuple

import tensorflow as tf


# Guards log(0): a gold word that is neither generable nor in the article, with p_gen
# saturated at 1, has probability 0 (the original then produced inf / NaN losses).
PROB_FLOOR = 1e-10


@tf.custom_gradient
def softmax_at(logits, ids):
  """softmax(logits)[r, ids[r]] for logits [R, V], ids [R] -> [R], with a hand-written gradient.

  The automatic gradient of gather-after-softmax scatters into a fresh [R, V] zero tensor and
  then runs softmax's generic backward over it; the gradient is simply
  d * p_r * (onehot(ids[r]) - softmax(logits)[r]), one pass over the kept probabilities plus
  an add at R entries. Tests compare it with the automatic gradient.
  """
  probs = tf.nn.softmax(logits)  # [R, V]
  picked = tf.gather(probs, ids, batch_dims=1)  # [R]

  def gradient(d_picked):  # [R]
    scale = d_picked * picked  # [R]
    on_ids = tf.stack([tf.range(tf.shape(ids)[0]), ids], axis=1)  # [R, 2]
    return tf.tensor_scatter_nd_add(-scale[:, None] * probs, on_ids, scale), None  # [R, V]

  return picked, gradient


def _generated_probs(outputs, target, vocab_size):
  """P_vocab(target_t) where the target is in the fixed vocabulary, else 0: [B, T]."""
  in_vocab = target < vocab_size  # [B, T]
  vocab_ids = tf.where(in_vocab, target, tf.zeros_like(target))  # [B, T]
  if outputs.vocab_logits is not None:
    probs = tf.nn.softmax(outputs.vocab_logits)  # [B, T, V]
    generated = tf.gather(probs, vocab_ids, batch_dims=2)  # [B, T]
  else:
    positions = outputs.real_positions  # [R, 2]
    real = softmax_at(outputs.real_vocab_logits, tf.gather_nd(vocab_ids, positions))  # [R]
    generated = tf.scatter_nd(positions, real, tf.shape(target))  # [B, T], 0 on padding
  return generated * tf.cast(in_vocab, generated.dtype)


def gold_parts(outputs, target, enc_input_ext, vocab_size):
  """P(target_t)'s two parts without materialising the [B, T, V + N] distribution: the
  vocabulary part p_gen * P_vocab[w] (w < V) and the copy part (1 - p_gen) * sum of attention
  on w (None without copying). outputs: the model's Outputs. Returns [B, T] each."""
  generated = _generated_probs(outputs, target, vocab_size)  # [B, T]
  if outputs.p_gen is None:
    return generated, None
  p_gen = outputs.p_gen  # [B, T]
  on_target = tf.equal(enc_input_ext[:, None, :], target[:, :, None])  # [B, T, L]
  copied = tf.reduce_sum(outputs.attn * tf.cast(on_target, generated.dtype), axis=2)  # [B, T]
  return p_gen * generated, (1.0 - p_gen) * copied


def gold_probs(outputs, target, enc_input_ext, vocab_size):
  """P(target_t) (gold_parts summed): [B, T]."""
  generated, copied = gold_parts(outputs, target, enc_input_ext, vocab_size)
  return generated if copied is None else generated + copied


def coverage_loss_per_step(attn):
  """sum_i min(a_i^t, cov_i^t) with cov^t the sum of earlier attention: attn [B, T, L] -> [B, T]."""
  coverage = tf.cumsum(attn, axis=1, exclusive=True)  # [B, T, L]
  return tf.reduce_sum(tf.minimum(attn, coverage), axis=2)


def mask_and_average(values, dec_len):
  """Per example: sum of the real steps / their number; then the mean over the batch.

  Returns the per-example values [B] (callers needing a global-batch mean divide the sum).
  """
  mask = tf.sequence_mask(dec_len, tf.shape(values)[1], values.dtype)  # [B, T]
  lengths = tf.maximum(tf.cast(dec_len, values.dtype), 1.0)  # [B]
  return tf.reduce_sum(values * mask, axis=1) / lengths  # [B]


class PerExample(NamedTuple):
  """The losses of each example of a batch (`compute_losses`)."""
  nll: tf.Tensor  # [B] the mean NLL of the example's real steps
  nll_tokens: tf.Tensor  # [B] the sum of that NLL
  tokens: tf.Tensor  # [B] the real steps (target tokens)
  coverage_loss: tf.Tensor = None  # [B] the mean coverage loss of the real steps; with coverage


class BatchLosses(NamedTuple):
  """The scalar losses of a batch (`batch_losses`)."""
  loss: tf.Tensor  # [] the NLL of the batch
  total_loss: tf.Tensor  # [] what is trained: loss, plus cov_loss_wt * coverage_loss
  coverage_loss: tf.Tensor = None  # [] with coverage


def compute_losses(outputs, batch, vocab_size, coverage):
  """The PerExample losses of `batch`: NLL and coverage loss, plus the token-weighted baseline
  NLL's parts.

  In pointer mode the batch loss is the mean of the per-example losses; the baseline (as the
  original's sequence_loss) weights every real target token equally: `nll_tokens` / `tokens`.
  """
  probs = gold_probs(outputs, batch.target, batch.enc_input_ext, vocab_size)  # [B, T]
  step_nll = -tf.math.log(tf.maximum(probs, PROB_FLOOR))  # [B, T]
  mask = tf.sequence_mask(batch.dec_len, tf.shape(step_nll)[1], step_nll.dtype)  # [B, T]
  return PerExample(
      nll=mask_and_average(step_nll, batch.dec_len),  # [B]
      nll_tokens=tf.reduce_sum(step_nll * mask, axis=1),  # [B]
      tokens=tf.reduce_sum(mask, axis=1),  # [B]
      coverage_loss=(mask_and_average(coverage_loss_per_step(outputs.attn), batch.dec_len)
                     if coverage else None))  # [B]


def batch_losses(per_example, pointer_gen, coverage, cov_loss_wt, num_examples=None,
                 num_tokens=None):
  """The BatchLosses of a batch from its PerExample losses (`compute_losses`).

  `num_examples` / `num_tokens` default to this batch's; distributed training passes the
  GLOBAL batch's counts, so that the replicas' losses (and gradients) sum to the global mean.
  """
  dtype = per_example.nll.dtype
  if num_examples is None:
    num_examples = tf.shape(per_example.nll)[0]
  if num_tokens is None:
    num_tokens = tf.reduce_sum(per_example.tokens)
  num_examples = tf.cast(num_examples, dtype)
  if pointer_gen:
    nll = tf.reduce_sum(per_example.nll) / num_examples
  else:
    nll = tf.reduce_sum(per_example.nll_tokens) / tf.maximum(tf.cast(num_tokens, dtype), 1.0)
  if not coverage:
    return BatchLosses(loss=nll, total_loss=nll)
  coverage_loss = tf.reduce_sum(per_example.coverage_loss) / num_examples
  return BatchLosses(loss=nll, total_loss=nll + cov_loss_wt * coverage_loss,
                     coverage_loss=coverage_loss)
