"""Beam search of the original (its beam_search.run_beam_search), compiled: many articles x
beam hypotheses per step inside one tf.while_loop.

Per article it reproduces the original exactly: each live hypothesis proposes its top
2*beam_size extensions of the final distribution after the decoding controls (controls/; only
the first hypothesis at step 0, where all are identical); candidates are visited in order of
average log-probability (ties in proposal order, as Python's stable sort); a [STOP] candidate
becomes a result (the minimum length control gives a [STOP] before min_dec_steps probability 0:
never proposed, as the original drops it), other candidates become the new live hypotheses; the
visit stops once beam_size live hypotheses or beam_size results exist. Search ends at
max_dec_steps or when beam_size results exist; the winner is the result (or, with none,
the live hypothesis) of best average log-probability.

`BeamSearch` is a search strategy (the contract in contract.py): every article keeps its own
step counter, and an article whose search has ended stays as it is while the others go on, so
the same steps also run continuous batching (continuous_batching.py), where articles start at
different steps.
"""

import dataclasses
from typing import Any, NamedTuple

import tensorflow as tf

from pointer_gen.base import precision
from pointer_gen.base import settings as settings_lib
from pointer_gen.base.errors import DataError
from pointer_gen.search import contract
from pointer_gen.search.controls import base as controls_base
from pointer_gen.text import vocab as vocab_lib


def _gather_beams(tensor, indices):
  """tensor [N, K, ...], indices [N, K'] into K -> [N, K', ...]."""
  return tf.gather(tensor, indices, batch_dims=1)


def _split(tensor, articles, beam):
  """[N*K, ...] -> [N, K, ...]."""
  return tf.reshape(tensor, tf.concat([[articles, beam], tf.shape(tensor)[1:]], 0))


def _merge(tensor):
  """[N, K, ...] -> [N*K, ...]."""
  shape = tf.shape(tensor)
  return tf.reshape(tensor, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


# --coverage_penalty's forms (OpenNMT-py's), "none" the original's ranking.
COVERAGE_PENALTIES = ("none", "summary", "wu")


def _coverage_penalty(coverage, form, beta):
  """What a hypothesis's rank loses for its coverage [N, K, L] (its attention summed over its
  steps): "summary" (Gehrmann et al.'s) beta * sum(max(coverage, 1) - 1), attention repeated;
  "wu" (GNMT's) -beta * sum(log(min(coverage, 1))), words left unattended, over the positions
  attended at all (padding has attention 0; an article position never has). -> [N, K]."""
  if form == "summary":
    return beta * tf.reduce_sum(tf.maximum(coverage, 1.0) - 1.0, axis=2)
  safe = tf.where(coverage > 0, tf.minimum(coverage, 1.0), 1.0)  # [N, K, L]
  return -beta * tf.reduce_sum(tf.math.log(safe), axis=2)


def _score(log_prob_sum, generated, length_penalty_alpha):
  """A hypothesis's rank from the sum of its tokens' log-probabilities and the tokens it has
  generated ([STOP] included, [START] not), the one length every caller gives: the original's
  average log-probability over its tokens with [START] counted, generated + 1; with alpha,
  GNMT's normaliser ((5 + generated) / 6) ** alpha instead (an extra, off by default)."""
  if length_penalty_alpha is None:
    return log_prob_sum / tf.cast(generated + 1, log_prob_sum.dtype)
  return (log_prob_sum / ((5.0 + tf.cast(generated, log_prob_sum.dtype)) / 6.0)
          ** length_penalty_alpha)


class Hypotheses(NamedTuple):
  """Hypotheses of N articles, K each."""
  tokens: tf.Tensor  # [N, K, T] extended ids, [PAD] after the last
  log_prob: tf.Tensor  # [N, K] the sum of the tokens' log-probabilities
  p_gens: tf.Tensor  # [N, K, T]
  attn: Any  # [N, K, T, L] with Settings.keep_attention, else () (no tensor)
  coverage: Any = ()  # [N, K, L] the attention summed, with --coverage_penalty, else ()


class Beam(NamedTuple):
  """The beam search's own part of the search state (contract.State.hypotheses)."""
  live: Hypotheses  # the K live hypotheses, best first
  done: Hypotheses  # the results in the order found: the first num_done of K
  done_score: tf.Tensor  # [N, K] each result's rank (_score), -inf where none
  done_length: tf.Tensor  # [N, K] each result's tokens, [STOP] included
  num_done: tf.Tensor  # [N]


class Candidates(NamedTuple):
  """The extensions proposed at one step: [N, K, 2K] as proposed, [N, C] (C = 2K*K) as
  visited."""
  ids: tf.Tensor  # the extension's token, an extended id
  log_prob: tf.Tensor  # the extended hypothesis's log-probability sum
  score: tf.Tensor  # its rank (_score); -inf if not proposed
  proposed: tf.Tensor  # bool


class Outputs(NamedTuple):
  """What one decoder step records in the hypotheses that take it."""
  step_mask: tf.Tensor  # [N, 1, T]: 1.0 at each article's step
  p_gen: tf.Tensor  # [N, K] of each live hypothesis
  attn: tf.Tensor  # [N, K, L] of each live hypothesis


class Visit(NamedTuple):
  """One step's candidates in visiting order and what the visit made of them, [N, C] each."""
  candidates: Candidates
  parent: tf.Tensor  # the live hypothesis each extends
  live: tf.Tensor  # bool: visited, and a new live hypothesis
  done: tf.Tensor  # bool: visited, and a new result
  live_count: tf.Tensor  # live hypotheses up to and including each candidate
  done_count: tf.Tensor  # results up to and including each candidate


@dataclasses.dataclass(frozen=True)
class BeamSettings(contract.StrategySettings):
  """Beam search's own settings, each its flag. The extra, length_penalty_alpha, is off by
  default, so that summaries are the original's."""
  beam_size: int = settings_lib.setting(4, "Beam size for beam-search decoding.",
                                        settings_lib.positive, metrics_after="search",
                                        example=3)
  length_penalty_alpha: float | None = settings_lib.setting(
      None, "Beam search extra, off by default (the original ranks by average "
      "log-probability): rank by log-prob / ((5 + length) / 6) ** alpha (GNMT).",
      metrics_after="block_ngram_repeat", example=0.6)
  coverage_penalty: str = settings_lib.setting(
      "none", "Beam search extra, off by default: rank hypotheses also by a coverage penalty "
      "(OpenNMT-py's forms): summary, beta * sum(max(coverage, 1) - 1); wu (GNMT), -beta * "
      "sum(log(min(coverage, 1))).",
      choices=COVERAGE_PENALTIES, example="summary")
  coverage_penalty_beta: float = settings_lib.setting(
      0.0, "The coverage penalty's weight beta (with --coverage_penalty).",
      settings_lib.at_least(0.0), example=0.5)
  n_best: int = settings_lib.setting(
      1, "Beam search: the K best summaries an article (K <= --beam_size), in rank order with "
      "their scores (single-pass decode's n_best.jsonl, the export's n_best_* outputs); 1: the "
      "best alone.", settings_lib.positive, example=2)

  def __post_init__(self):
    super().__post_init__()
    if self.n_best > self.beam_size:
      raise DataError(f"--n_best={self.n_best}: must be <= --beam_size={self.beam_size}")
    if self.coverage_penalty == "none" and self.coverage_penalty_beta:
      raise DataError(f"--coverage_penalty_beta={self.coverage_penalty_beta:g}: applies only "
                      "with --coverage_penalty=summary or wu")

  def written(self, constants=False):
    alpha = self.length_penalty_alpha
    extras = {"coverage_penalty": self.coverage_penalty,
              "coverage_penalty_beta": float(self.coverage_penalty_beta), "n_best": self.n_best}
    if not constants:
      return {"beam_size": self.beam_size, "length_penalty_alpha": alpha, **extras}
    return {"beam_size": self.beam_size,
            # Named so that "off" needs no sentinel value: the original ranks by average
            # log-prob.
            "ranking": "average_log_prob" if alpha is None else "gnmt_length_penalty",
            "length_penalty_alpha": 0.0 if alpha is None else float(alpha), **extras}

  def dir_name(self, name):
    return f"{self.beam_size}{name}"

  def dir_suffix(self):
    alpha = self.length_penalty_alpha
    suffix = "" if alpha is None else f"_lp{alpha:g}"
    if self.coverage_penalty != "none":
      suffix += f"_cp{self.coverage_penalty}{self.coverage_penalty_beta:g}"
    return suffix + (f"_{self.n_best}best" if self.n_best > 1 else "")


class BeamSearch(contract.Strategy):
  """the original's beam search, beam_size hypotheses an article."""

  Options = BeamSettings

  @property
  def rows(self):
    return self.options.beam_size

  @property
  def _penalised(self):
    """Whether hypotheses are ranked with a coverage penalty (and so keep their coverage)."""
    return self.options.coverage_penalty != "none"

  def _penalty(self, coverage):
    return _coverage_penalty(coverage, self.options.coverage_penalty,
                             self.options.coverage_penalty_beta)

  def initial(self, decoder_state, memory, step=0):
    articles, length = self.articles_and_length(memory)
    k, steps = self.rows, self.settings.max_dec_steps
    # Probabilities, p_gens and attention are float32 in every --precision.
    dtype = precision.OUTPUT_DTYPE
    steps_shape = [articles, k, steps]

    def none():
      return Hypotheses(
          tokens=tf.fill(steps_shape, vocab_lib.PAD_ID),
          log_prob=tf.zeros([articles, k], dtype),
          p_gens=tf.zeros(steps_shape, dtype),
          attn=(tf.zeros([articles, k, steps, length], dtype) if self.settings.keep_attention
                else ()),
          coverage=(tf.zeros([articles, k, length], dtype) if self._penalised else ()))

    return contract.State(
        step=tf.fill([articles], step), decoder_state=decoder_state,
        hypotheses=Beam(live=none(), done=none(),
                        done_score=tf.fill([articles, k], tf.constant(float("-inf"), dtype)),
                        done_length=tf.zeros([articles, k], tf.int32),
                        num_done=tf.zeros([articles], tf.int32)))

  def finished(self, state):
    """Ended at max_dec_steps or with beam_size results."""
    return ((state.step >= self.settings.max_dec_steps)
            | (state.hypotheses.num_done >= self.options.beam_size))

  def advance(self, model, memory, state, max_oovs):
    """One decoder step of every article whose search has not ended; the others stay as they are.

    Each article has its own step counter, so articles that started at different times (a
    continuous batch) advance side by side exactly as each would alone. The steps: the live
    hypotheses propose (_propose), the candidates are visited best first (_visit), and the
    visited become the new live hypotheses (_next_live) and results (_next_done).
    """
    k = self.rows
    beam = state.hypotheses
    # Each stage under its own name, which is how a profile of the step tells them apart.
    proposals, outputs, decoder_state = self._propose(model, memory, state, max_oovs)
    with tf.name_scope("visit"):
      visit = self._visit(proposals, state.step, beam.num_done)
    with tf.name_scope("next_live"):
      live, parent = self._next_live(beam.live, visit, outputs)
    with tf.name_scope("next_done"):
      done, done_score, done_length = self._next_done(beam, visit, state.step, outputs)
      num_done = beam.num_done + tf.reduce_sum(tf.cast(visit.done, tf.int32), axis=1)  # [N]
    with tf.name_scope("reorder_decoder_state"):
      flat_parent = _merge(parent + tf.range(tf.shape(parent)[0])[:, None] * k)  # [N*K]
      new = contract.State(
          step=state.step + 1,
          decoder_state=tuple(tf.gather(s, flat_parent) for s in decoder_state),
          hypotheses=Beam(live, done, done_score, done_length, num_done))
    with tf.name_scope("hold_ended"):
      return contract.hold_ended(state, new, ~self.finished(state), k)

  def _propose(self, model, memory, state, max_oovs):
    """Every live hypothesis's top 2K extensions of the final distribution (only the first
    hypothesis's at step 0, where all are identical): Candidates [N, K, 2K], the step's Outputs
    and the decoder's new state ([N*K, ...]) of each live hypothesis."""
    live, step = state.hypotheses.live, state.step
    previous = tf.gather(live.tokens, tf.maximum(step - 1, 0), axis=2, batch_dims=1)  # [N, K]
    previous = tf.where((step > 0)[:, None], previous, vocab_lib.START_ID)  # [N, K]
    vocab_logits, attn, p_gen, decoder_state = self.decoder_step(
        model, memory, state.decoder_state, _merge(previous))  # vocab_logits [N*K, V]
    with tf.name_scope("candidates"):
      return self._candidates(vocab_logits, attn, p_gen, memory, state, max_oovs) + (
          decoder_state,)

  def _candidates(self, vocab_logits, attn, p_gen, memory, state, max_oovs):
    """_propose's Candidates and Outputs from the decoder step's."""
    k, settings, options = self.rows, self.settings, self.options
    live, step = state.hypotheses.live, state.step
    articles = tf.shape(step)[0]
    view = controls_base.View(tf.repeat(step, k), _merge(live.tokens))  # [N*K], [N*K, T]
    top_probs, top_ids = self.candidates(vocab_logits, attn, p_gen, memory, view, 2 * k,
                                         max_oovs)  # [N*K, 2K]
    dtype = live.log_prob.dtype
    if p_gen is None:
      p_gen = tf.ones([tf.shape(vocab_logits)[0]], dtype)  # [N*K]
    log_prob = live.log_prob[:, :, None] + _split(tf.math.log(top_probs), articles,
                                                  k)  # [N, K, 2K]
    # At step 0 every hypothesis is the same [START]: only the first one proposes. A token a
    # control zeroed is never proposed.
    proposed = (step > 0)[:, None] | (tf.range(k) == 0)[None, :]  # [N, K]
    proposed = (tf.broadcast_to(proposed[:, :, None], tf.shape(log_prob))
                & (_split(top_probs, articles, k) > 0))  # [N, K, 2K]
    rank = _score(log_prob, step[:, None, None] + 1,
                  options.length_penalty_alpha)  # [N, K, 2K]: step + 1 tokens generated
    if self._penalised:
      rank -= self._penalty(live.coverage + _split(attn, articles, k))[:, :, None]
    score = tf.where(proposed, rank, float("-inf"))  # [N, K, 2K]
    outputs = Outputs(tf.one_hot(step, settings.max_dec_steps, dtype=dtype)[:, None, :],
                      _split(p_gen, articles, k), _split(attn, articles, k))
    return Candidates(_split(top_ids, articles, k), log_prob, score, proposed), outputs

  def _visit(self, proposals, step, num_done):
    """The candidates visited in order of score, ties in proposal order (as the original's
    stable sort): a [STOP] candidate becomes a result (none is proposed before min_dec_steps:
    the minimum length control), any other a live hypothesis; the visit stops once K live
    hypotheses or K results exist."""
    k = self.rows
    articles, candidates = tf.shape(step)[0], 2 * k * k
    _, order = tf.math.top_k(tf.reshape(proposals.score, [articles, candidates]),
                             candidates)  # [N, C]; ties: lower index first
    ordered = tf.nest.map_structure(
        lambda t: tf.gather(tf.reshape(t, [articles, candidates]), order, batch_dims=1),
        proposals)  # [N, C] each
    is_stop = tf.equal(ordered.ids, vocab_lib.STOP_ID)
    is_live = tf.logical_not(is_stop) & ordered.proposed
    accept_stop = is_stop & ordered.proposed
    live_count = tf.cumsum(tf.cast(is_live, tf.int32), axis=1)  # [N, C]
    done_count = num_done[:, None] + tf.cumsum(tf.cast(accept_stop, tf.int32), axis=1)
    # The visit stops right after the candidate that fills the beam or the results.
    full = (live_count >= k) | (done_count >= k)  # [N, C]
    visited = tf.cumsum(tf.cast(full, tf.int32), axis=1, exclusive=True) == 0
    return Visit(ordered, parent=order // (2 * k), live=is_live & visited,
                 done=accept_stop & visited, live_count=live_count, done_count=done_count)

  def _next_live(self, live, visit, outputs):
    """The new live hypotheses, the first K visited non-[STOP] candidates in visiting order, and
    the live hypothesis [N, K] each extends."""
    k = self.rows
    rank = tf.where(visit.live, visit.live_count - 1, 2 * k * k)  # [N, C]
    pick = tf.math.top_k(-rank, k).indices  # [N, K] positions in visiting order
    parent = _gather_beams(visit.parent, pick)  # [N, K]
    return self._extend(live, parent, _gather_beams(visit.candidates.ids, pick),
                        _gather_beams(visit.candidates.log_prob, pick), outputs), parent

  def _next_done(self, beam, visit, step, outputs):
    """The results, their scores and lengths ([N, K] each) with the accepted [STOP] candidates
    in the next free result slots, in visiting order."""
    k = self.rows
    slot_of = tf.where(visit.done, visit.done_count - 1, -1)  # [N, C]
    slot_match = tf.equal(slot_of[:, None, :], tf.range(k)[None, :, None])  # [N, K, C]
    filled = tf.reduce_any(slot_match, axis=2)  # [N, K]
    source = tf.argmax(tf.cast(slot_match, tf.int32), axis=2, output_type=tf.int32)  # [N, K]
    found = lambda t: _gather_beams(t, source)  # [N, C] -> [N, K]
    stop = tf.fill(tf.shape(source), vocab_lib.STOP_ID)  # [N, K]
    new = (self._extend(beam.live, found(visit.parent), stop, found(visit.candidates.log_prob),
                        outputs),
           found(visit.candidates.score), tf.broadcast_to((step + 1)[:, None], tf.shape(source)))
    return tf.nest.map_structure(
        lambda value, old: tf.where(contract.expand_to(filled, old), value, old), new,
        (beam.done, beam.done_score, beam.done_length))

  def _extend(self, live, parents, tokens, log_prob, outputs):
    """The live hypotheses `parents` [N, M] extended by this step's `tokens` [N, M] and
    `outputs`, with their new log-probability sums `log_prob` [N, M]."""
    mask = outputs.step_mask  # [N, 1, T]
    history = lambda t: _gather_beams(t, parents)  # [N, K, ...] -> [N, M, ...]
    attn = ()
    if self.settings.keep_attention:
      attn = (history(live.attn) * (1.0 - mask)[..., None]
              + history(outputs.attn)[:, :, None, :] * mask[..., None])  # [N, M, T, L]
    step_ids = tf.cast(mask, tf.int32)  # [N, 1, T]
    return Hypotheses(
        tokens=history(live.tokens) * (1 - step_ids) + tokens[:, :, None] * step_ids,  # [N, M, T]
        log_prob=log_prob,
        p_gens=history(live.p_gens) * (1.0 - mask) + history(outputs.p_gen)[:, :, None] * mask,
        attn=attn,
        coverage=(history(live.coverage) + history(outputs.attn) if self._penalised
                  else ()))  # [N, M, L]

  def winners(self, state):
    """Best result per article by score; the live beam if none finished."""
    beam = state.hypotheses
    has_done = beam.num_done > 0  # [N]
    live_score = _score(beam.live.log_prob, state.step[:, None],
                        self.options.length_penalty_alpha)  # [N, K]: step tokens generated
    if self._penalised:
      live_score -= self._penalty(beam.live.coverage)
    score = tf.where(has_done[:, None], beam.done_score, live_score)  # [N, K]
    # Live hypotheses are already in visiting (best-first) order; results are not.
    best = tf.argmax(score, axis=1, output_type=tf.int32)  # [N]; ties: the first

    def pick(done, live):
      chosen_done = tf.gather(done, best, batch_dims=1)
      chosen_live = tf.gather(live, best, batch_dims=1)
      return tf.where(contract.expand_to(has_done, chosen_done), chosen_done, chosen_live)

    chosen = tf.nest.map_structure(pick, beam.done, beam.live)
    return contract.SearchResult(
        tokens=chosen.tokens,  # [N, T]
        length=pick(beam.done_length,
                    tf.broadcast_to(state.step[:, None], tf.shape(beam.done_length))),  # [N]
        score=tf.gather(score, best, batch_dims=1),  # [N]
        log_prob=chosen.log_prob,  # [N]
        p_gens=chosen.p_gens,  # [N, T]
        attn=chosen.attn if self.settings.keep_attention else None,  # [N, T, L]
        n_best=self._n_best(state, live_score) if self.options.n_best > 1 else None)

  def _n_best(self, state, live_score):
    """Each article's n_best summaries in rank order, the winner first: its results by score,
    then (when fewer) its live hypotheses by score; a contract.NBest (tokens [N, n, T],
    length, score and log_prob [N, n])."""
    beam, k, n = state.hypotheses, self.rows, self.options.n_best
    found = tf.range(k)[None, :] < beam.num_done[:, None]  # [N, K]
    done_order = tf.math.top_k(tf.where(found, beam.done_score, float("-inf")), k).indices
    live_order = tf.math.top_k(live_score, k).indices  # [N, K]; ties: the lower index first
    rank = tf.range(n)[None, :]  # [1, n]
    from_done = rank < beam.num_done[:, None]  # [N, n]
    live_rank = tf.gather(live_order, tf.maximum(rank - beam.num_done[:, None], 0),
                          batch_dims=1)  # [N, n]
    done_rank = done_order[:, :n]  # [N, n]

    def ranked(done, live):  # [N, K, ...] each -> [N, n, ...]
      chosen_done = _gather_beams(done, done_rank)
      chosen_live = _gather_beams(live, live_rank)
      return tf.where(contract.expand_to(from_done, chosen_done), chosen_done, chosen_live)

    return contract.NBest(
        tokens=ranked(beam.done.tokens, beam.live.tokens),
        length=ranked(beam.done_length, tf.broadcast_to(state.step[:, None],
                                                        tf.shape(beam.done_length))),
        score=ranked(beam.done_score, live_score),
        log_prob=ranked(beam.done.log_prob, beam.live.log_prob))
