"""Greedy decoding (`--search=greedy`): each article's one row takes the most probable token of
the final distribution at every step (after the decoding controls: controls/).

It is what the beam search (beam.py) does with one hypothesis, and gives its summaries
and scores at --beam_size=1: the same candidates (the top of the controlled final distribution,
ties to the lower id) and the same score, the average log-probability with the
[START] token counted. It has no settings of its own (contract.StrategySettings); another
strategy's are refused with it (registry.check_flags).
"""

from typing import Any, NamedTuple

import tensorflow as tf

from pointer_gen.base import precision
from pointer_gen.search import contract
from pointer_gen.search.controls import base as controls_base
from pointer_gen.text import vocab as vocab_lib


class Summaries(NamedTuple):
  """A one-row strategy's own part of the search state (contract.State.hypotheses): one
  summary an article."""
  tokens: tf.Tensor  # [N, T] extended ids, [PAD] after the last
  log_prob: tf.Tensor  # [N] the sum of the tokens' log-probabilities
  p_gens: tf.Tensor  # [N, T]
  attn: Any  # [N, T, L] with Settings.keep_attention, else () (no tensor)
  stopped: tf.Tensor  # [N] bool: [STOP] generated
  article: Any  # what the strategy keeps of each article for its choices (article_state)


class GreedySearch(contract.Strategy):
  """the most probable token at each step, the beam search's summaries at --beam_size=1.

  It is also the base of strategies that choose one token a step in another way (a subclass
  overrides `choose`, and `article_state` for what its choices need of each article).
  """

  rows = 1

  def initial(self, decoder_state, memory, step=0):
    articles, length = self.articles_and_length(memory)
    steps = self.settings.max_dec_steps
    # Probabilities, p_gens and attention are float32 in every --precision.
    dtype = precision.OUTPUT_DTYPE
    return contract.State(
        step=tf.fill([articles], step), decoder_state=decoder_state,
        hypotheses=Summaries(
            tokens=tf.fill([articles, steps], vocab_lib.PAD_ID),
            log_prob=tf.zeros([articles], dtype), p_gens=tf.zeros([articles, steps], dtype),
            attn=(tf.zeros([articles, steps, length], dtype) if self.settings.keep_attention
                  else ()),
            stopped=tf.zeros([articles], tf.bool), article=self.article_state(memory)))

  def article_state(self, memory):
    """What choose needs of each article, a nest of [N, ...] tensors made once from the rows'
    memory; greedy decoding needs nothing."""
    del memory
    return ()

  def view(self, state):
    """What the controls read of each article's row (controls.base.View)."""
    return controls_base.View(state.step, state.hypotheses.tokens)

  def choose(self, vocab_logits, attn, p_gen, memory, state, max_oovs):
    """Each article's next token [N] (an extended id) and its probability [N] in the
    controlled final distribution: the most probable. vocab_logits [N, V], attn [N, L], p_gen
    [N] (None without copying)."""
    probs, ids = self.candidates(vocab_logits, attn, p_gen, memory, self.view(state), 1,
                                 max_oovs)  # [N, 1]
    return ids[:, 0], probs[:, 0]

  def finished(self, state):
    """Ended at max_dec_steps or with [STOP]."""
    return (state.step >= self.settings.max_dec_steps) | state.hypotheses.stopped

  def advance(self, model, memory, state, max_oovs):
    done, step = state.hypotheses, state.step
    previous = tf.gather(done.tokens, tf.maximum(step - 1, 0), batch_dims=1)  # [N]
    previous = tf.where(step > 0, previous, vocab_lib.START_ID)  # [N]
    vocab_logits, attn, p_gen, decoder_state = self.decoder_step(
        model, memory, state.decoder_state, previous)  # vocab_logits [N, V]
    best, prob = self.choose(vocab_logits, attn, p_gen, memory, state, max_oovs)  # [N] each
    dtype = done.log_prob.dtype
    if p_gen is None:
      p_gen = tf.ones([tf.shape(vocab_logits)[0]], dtype)  # [N]
    now = tf.one_hot(step, self.settings.max_dec_steps, on_value=True,
                     off_value=False)  # [N, T]
    attn_now = ()
    if self.settings.keep_attention:
      attn_now = tf.where(now[:, :, None], attn[:, None, :], done.attn)  # [N, T, L]
    new = Summaries(
        tokens=tf.where(now, best[:, None], done.tokens),
        log_prob=done.log_prob + tf.math.log(prob),
        p_gens=tf.where(now, p_gen[:, None], done.p_gens), attn=attn_now,
        stopped=tf.equal(best, vocab_lib.STOP_ID), article=done.article)
    return contract.hold_ended(state, contract.State(step + 1, decoder_state, new),
                               ~self.finished(state), self.rows)

  def winners(self, state):
    done = state.hypotheses
    return contract.SearchResult(
        tokens=done.tokens, length=state.step,  # [N, T], [N]
        score=done.log_prob / tf.cast(state.step + 1, done.log_prob.dtype),  # [N]
        log_prob=done.log_prob, p_gens=done.p_gens,  # [N], [N, T]
        attn=done.attn if self.settings.keep_attention else None)  # [N, T, L]
