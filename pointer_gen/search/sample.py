"""Sampling (`--search=sample`): each article's one row draws its next token from the final
distribution (after the decoding controls: controls/).

A step's draw, as Hugging Face's `generate(do_sample=True)` orders it: the final distribution
(p_gen * P_vocab + (1 - p_gen) * attention, article words included; controlled) raised to
1/--temperature and renormalised (the softmax of its log-probabilities / temperature), cut to
its --top_k most probable tokens (0: no cut), then to the fewest most probable whose
renormalised probabilities sum to at least --top_p (1: no cut), renormalised again. With
--top_k=1, or a temperature near zero, it is greedy decoding (greedy.py), whose steps it
shares: only `choose` differs.

The draw is keyed by --sample_seed, the article and the step, never by the slot or the batch:
its uniform number is a fingerprint (FarmHash, tf.fingerprint) of (seed, article key, step), the
article key one of its tokens and their positions (the extended ids the model reads). An
article's summary is then the same in single-pass decode's slots, a one-batch search, eval's
samples and the export, whatever it is decoded beside, and in every run with the same seed.
Each summary's log_prob is the sum of the drawn tokens' log-probabilities in the controlled
final distribution (before temperature and cuts), as greedy decoding's.
"""

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib
from pointer_gen.search import contract
from pointer_gen.search import greedy

# Bits of the fingerprint a uniform number takes: exact in a float64.
_UNIFORM_BITS = 48


def _in_unit_interval(value):
  return None if 0.0 < value <= 1.0 else "must be in (0, 1]"


@dataclasses.dataclass(frozen=True)
class SampleSettings(contract.StrategySettings):
  """Sampling's own settings, each its flag."""
  top_k: int = settings_lib.setting(
      0, "Sampling: draw among the k most probable tokens of the final distribution (article "
      "words included); 0: among all.", settings_lib.at_least(0), example=5)
  top_p: float = settings_lib.setting(
      1.0, "Sampling: draw among the fewest most probable tokens whose probabilities (after "
      "--temperature and --top_k) sum to at least p (nucleus sampling); 1: no cut.",
      _in_unit_interval, example=0.9)
  temperature: float = settings_lib.setting(
      1.0, "Sampling: draw from the final distribution raised to 1/temperature, renormalised; "
      "below 1 sharper (towards greedy decoding), above 1 flatter.", settings_lib.positive,
      example=0.7)
  sample_seed: int = settings_lib.setting(
      0, "Sampling: the draws' seed. A summary depends only on it, its article and the model: "
      "the same in every run, batch and mode (decode, eval's samples, export).", example=1)

  def dir_suffix(self):
    defaults = SampleSettings()
    parts = [(self.top_k != defaults.top_k, f"_top{self.top_k}"),
             (self.top_p != defaults.top_p, f"_topp{self.top_p:g}"),
             (self.temperature != defaults.temperature, f"_temp{self.temperature:g}"),
             (self.sample_seed != defaults.sample_seed, f"_seed{self.sample_seed}")]
    return "".join(part for off_default, part in parts if off_default)


def article_keys(ext_ids, mask):
  """Each row's key [M] int64: a sum of fingerprints of (token, position) over the positions
  `mask` [M, L] covers, so that the padding of a batch or a slot changes nothing.
  ext_ids [M, L] int32."""
  shape = tf.shape(ext_ids)
  positions = tf.broadcast_to(tf.range(shape[1])[None, :], shape)  # [M, L]
  pairs = tf.stack([tf.cast(ext_ids, tf.int64), tf.cast(positions, tf.int64)], axis=2)
  hashed = tf.bitcast(tf.fingerprint(tf.reshape(pairs, [-1, 2])), tf.int64)  # [M*L]
  # 48 bits each, so that a sum over up to 2^15 positions cannot overflow.
  hashed = tf.bitwise.right_shift(tf.reshape(hashed, shape), 16)  # [M, L]
  return tf.reduce_sum(tf.where(mask > 0, hashed, tf.zeros_like(hashed)), axis=1)  # [M]


def uniforms(seed, keys, step):
  """One uniform number in [0, 1) [M] float64 for each key [M] int64 at its step [M]: a
  fingerprint of (seed, key, step)."""
  words = tf.stack([tf.fill(tf.shape(keys), tf.constant(seed, tf.int64)), keys,
                    tf.cast(step, tf.int64)], axis=1)  # [M, 3]
  digits = tf.cast(tf.fingerprint(words)[:, :_UNIFORM_BITS // 8], tf.float64)  # [M, 6] bytes
  scale = tf.constant([256.0 ** -(i + 1) for i in range(_UNIFORM_BITS // 8)], tf.float64)
  return tf.reduce_sum(digits * scale, axis=1)  # [M]


def kept_weights(probs, allowed, options):
  """The probability of drawing each candidate [M, C] (float32, rows summing to 1): probs
  [M, C] the final distribution's probabilities of C candidates in decreasing order (needed
  for top_k and top_p only), allowed [M, C] bool those that may be drawn, options a
  SampleSettings."""
  keep = allowed
  if options.top_k:
    keep &= tf.cumsum(tf.cast(allowed, tf.int32), axis=1) <= options.top_k  # [M, C]
  logits = tf.where(keep, tf.math.log(probs) / options.temperature, float("-inf"))  # [M, C]
  weights = tf.nn.softmax(logits)  # [M, C]
  if options.top_p < 1.0:
    # A candidate stays while the ones before it hold less than top_p: the first always does.
    keep &= tf.cumsum(weights, axis=1, exclusive=True) < options.top_p  # [M, C]
    weights = tf.where(keep, weights, 0.0)
    weights /= tf.reduce_sum(weights, axis=1, keepdims=True)
  return weights


def draw(weights, uniform):
  """The candidate [M] int32 each row's uniform [M] (float64 in [0, 1)) picks from weights
  [M, C]: the first whose cumulative weight exceeds uniform * total (never one of weight 0)."""
  cumulative = tf.cumsum(tf.cast(weights, tf.float64), axis=1)  # [M, C]
  threshold = uniform * cumulative[:, -1]  # [M]
  choice = tf.reduce_sum(tf.cast(cumulative <= threshold[:, None], tf.int32), axis=1)  # [M]
  # Float rounding could leave the threshold at the total: the last candidate of weight > 0.
  last = tf.shape(weights)[1] - 1 - tf.argmax(tf.reverse(weights, [1]) > 0, axis=1,
                                               output_type=tf.int32)  # [M]
  return tf.minimum(choice, last)


class Sampling(greedy.GreedySearch):
  """a draw from the final distribution at each step, keyed by the seed, the article and the
  step.

  Greedy decoding's steps with another `choose`; each article keeps its key (article_keys).
  """

  Options = SampleSettings

  def article_state(self, memory):
    return article_keys(memory.ext_ids, memory.mask)  # [N]: one row an article

  def choose(self, vocab_logits, attn, p_gen, memory, state, max_oovs):
    probs, ids = self._candidates(vocab_logits, attn, p_gen, memory, state,
                                  max_oovs)  # [N, C]
    weights = kept_weights(probs, probs > 0, self.options)  # [N, C]
    chosen = draw(weights, uniforms(self.options.sample_seed, state.hypotheses.article,
                                    state.step))  # [N]
    return tf.gather(ids, chosen, batch_dims=1), tf.gather(probs, chosen, batch_dims=1)

  def _candidates(self, vocab_logits, attn, p_gen, memory, state, max_oovs):
    """The tokens a draw chooses among, their controlled final-distribution probabilities
    [N, C] and extended ids [N, C]: with --top_k, the top_k most probable (the shared step's
    candidates); else every token, in decreasing order of probability where --top_p needs it
    (ties: the lower id first). A token a control zeroed has probability 0: never drawn."""
    k, width = self.options.top_k, vocab_logits.shape[1]
    view = self.view(state)
    if k and (width is None or k < width):
      return self.candidates(vocab_logits, attn, p_gen, memory, view, k, max_oovs)
    dist = self.distribution(vocab_logits, attn, p_gen, memory, view,
                             max_oovs)  # [N, V(+max_oovs)]
    ids = tf.broadcast_to(tf.range(tf.shape(dist)[1])[None, :], tf.shape(dist))  # [N, W]
    if k or self.options.top_p < 1.0:
      order = tf.argsort(dist, axis=1, direction="DESCENDING", stable=True)  # [N, W]
      return tf.gather(dist, order, batch_dims=1), order
    return dist, ids
