"""Straightforward forms of what the library computes a faster way, which the tests hold it to."""

import tensorflow as tf

from pointer_gen.model import layers
from pointer_gen.text import tokenizers as text


def tokens_of(article, tokenizer="whitespace", lowercase=False):
  """The tokens (Python strings) of one text, by the ops the input pipeline runs."""
  return [t.decode("utf-8")
          for t in text.tokenize(tf.constant(article), tokenizer, lowercase).numpy()]


def gold_probs_scattered(outputs, target, enc_input_ext, max_oovs):
  """The same probabilities read from the full final distribution that
  layers.final_distribution builds with `tensor_scatter_nd_add` (the straightforward form).

  Returns [B, T].
  """
  probs = tf.nn.softmax(outputs.vocab_logits)  # [B, T, V]
  batch, steps = tf.shape(target)[0], tf.shape(target)[1]
  flat_target = tf.reshape(target, [-1])  # [B*T]
  flat_probs = tf.reshape(probs, [batch * steps, -1])  # [B*T, V]
  if outputs.p_gen is None:
    return tf.reshape(tf.gather(flat_probs, flat_target, batch_dims=1), [batch, steps])
  length = tf.shape(enc_input_ext)[1]
  dist = layers.final_distribution(
      flat_probs, tf.reshape(outputs.attn, [batch * steps, length]),
      tf.reshape(outputs.p_gen, [-1]),
      tf.repeat(enc_input_ext, steps, axis=0), max_oovs)  # [B*T, V + N]
  return tf.reshape(tf.gather(dist, flat_target, batch_dims=1), [batch, steps])
