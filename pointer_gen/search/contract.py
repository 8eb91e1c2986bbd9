"""The search's contract: the settings, the state and the steps a decoding strategy implements,
the memory every strategy decodes from, and the settings of a strategy's own.

A strategy searches N articles side by side with `rows` decoder rows per article (beam search:
its beam_size hypotheses; greedy decoding: 1), all N*rows rows in one decoder call a step. It
subclasses `Strategy`, reads the search's `Settings` (every strategy's) and its own `Options`
(a `StrategySettings` whose fields, each declared with settings.setting, are its flags), and
implements:

  rows                      the decoder rows per article, K below
  initial(decoder_state, memory, step=0) -> State
                            N articles' searches at `step` with nothing decoded yet, from the
                            decoder state of step 0 ([N*K, ...] tuple) and their memory (below;
                            N*K rows of width L)
  advance(model, memory, state, max_oovs) -> State
                            one decoder step of every article whose search has not ended; an
                            ended one stays exactly as it is (hold_ended)
  finished(state) -> [N] bool
                            the articles whose search has ended: every article at or past
                            max_dec_steps (continuous batching's empty slots stand there)
  winners(state) -> SearchResult
                            each article's summary so far (below)

and inherits `start` (encode N articles, set up their searches) and `search` (start, advance
until every search has ended, winners: one tf.while_loop). `decoder_step` runs the model one step
for every row and `hold_ended` keeps ended searches as they were; both are there to share.

The state is a `State` of tensors (a NamedTuple, so tf.nest, tf.while_loop and tf.function
signatures take it as it is): each article's step counter [N], the decoder state per row
[N*K, ...], and the strategy's own `hypotheses`, a nest (NamedTuples) of [N, ...] tensors.
Continuous batching moves searches between slots by these two kinds alone (map_state): a field
of `hypotheses` must have the article as its first dimension.

A search's result is a `SearchResult` of N articles (a NamedTuple, which tf.function returns
as it is; its fields and their shapes below), the n best summaries of a strategy that ranks
several a nested `NBest`; `map` turns every tensor of it into another (numpy, one article's
row) and keeps the type.

The attention's implementation lays out and keeps the memory (the strategy's `attention`, an
attention.SearchAttention, its `steps`): the memory is an attention.Memory: the encoder's
states and W_h features ([N*K, L, 2H], laid out by the implementation's `memory`), the mask
[N*K, L], the extended ids and their copy_index [N*K, L]; each article's K rows side by side, a
field of which the implementation keeps fewer copies (its rows_kept: 1, shared by the article's
rows) [N, ...].
"""

import abc
import dataclasses
from typing import Any, NamedTuple

import tensorflow as tf

from pointer_gen import attention as attention_lib
from pointer_gen.base import settings
from pointer_gen.model import layers
from pointer_gen.search.controls import registry as controls_registry
from pointer_gen.search.distribution import top_k
from pointer_gen.search.distribution import top_of_final_distribution
from pointer_gen.text import vocab as vocab_lib

# Step 0's decoder input: the original's decode (an attention over the encoder's final state),
# or training's zero context (initial_decoder_state).
FIRST_STEP_CONTEXTS = ("original", "zeros")


@dataclasses.dataclass(frozen=True)
class Settings:
  """The constants of every strategy's search, one value from the decode flags (from_hparams)
  to every search; a strategy's own are its Options.

  first_step_context="zeros" starts step 0 from training's zero context (see
  initial_decoder_state), an extra, off by default, so that summaries are the original's.
  controls: the active decoding controls (controls/, made by controls.registry.make) every
  strategy's steps apply; None: the minimum length of min_dec_steps alone.
  """
  max_dec_steps: int
  min_dec_steps: int
  keep_attention: bool = False
  first_step_context: str = "original"
  controls: tuple | None = None

  def __post_init__(self):
    if self.first_step_context not in FIRST_STEP_CONTEXTS:
      raise ValueError(f"first_step_context={self.first_step_context!r}: expected one of "
                       f"{', '.join(FIRST_STEP_CONTEXTS)}")
    if self.controls is None:
      object.__setattr__(self, "controls",
                         controls_registry.make({"min_dec_steps": self.min_dec_steps}))

  @classmethod
  def from_hparams(cls, hps, keep_attention=False, vocab=None):
    """The decode flags of `hps`; keep_attention is the caller's: only the attention views keep
    attention. vocab: the vocab.Vocab a control's settings naming words read."""
    return cls(hps.max_dec_steps, hps.min_dec_steps, keep_attention, hps.first_step_context,
               controls_registry.make(controls_registry.values_of(hps), vocab))


class State(NamedTuple):
  """N articles' searches; K = the strategy's rows."""
  step: tf.Tensor  # [N] int32: each article's own step counter
  decoder_state: tuple  # the decoder's state, [N*K, ...] each
  hypotheses: Any  # the strategy's own nest of [N, ...] tensors


class NBest(NamedTuple):
  """Each article's n best summaries in rank order, the winner first (beam search's --n_best)."""
  tokens: Any  # [N, n, T] extended ids, as SearchResult.tokens
  length: Any  # [N, n] tokens generated
  score: Any  # [N, n] the rank each has in the search
  log_prob: Any  # [N, n] the sum of its tokens' log-probabilities


class SearchResult(NamedTuple):
  """Each article's summary, as a strategy's winners give it (N articles; T = max_dec_steps).
  Tensors in a search, numpy arrays once decode has them (map), an article's row alone
  without the first dimension."""
  tokens: Any  # [N, T] extended ids, [STOP] included if generated, [PAD] after
  length: Any  # [N] tokens generated
  score: Any  # [N] the rank the strategy gave the summary
  log_prob: Any  # [N] the sum of the tokens' log-probabilities
  p_gens: Any  # [N, T]
  attn: Any = None  # [N, T, L] with Settings.keep_attention, else None
  n_best: NBest | None = None  # the n best of a strategy that ranks several, else None

  def map(self, function):
    """The result with `function` applied to each of its arrays (None stays None)."""
    return tf.nest.map_structure(lambda t: None if t is None else function(t), self)


def map_state(per_article, per_row, *states):
  """One State from `states` field by field: per_article on their [N, ...] tensors (the step
  and the hypotheses), per_row on their [N*K, ...] tensors (the decoder state)."""
  return State(
      step=per_article(*(s.step for s in states)),
      decoder_state=tf.nest.map_structure(per_row, *(s.decoder_state for s in states)),
      hypotheses=tf.nest.map_structure(per_article, *(s.hypotheses for s in states)))


def expand_to(condition, tensor):
  """condition [A] or [A, B] reshaped to broadcast against `tensor` [A, (B,) ...]."""
  shape = tf.concat([tf.shape(condition), tf.ones(tf.rank(tensor) - tf.rank(condition),
                                                  tf.int32)], 0)
  return tf.reshape(condition, shape)


def hold_ended(old, new, running, rows):
  """`new` for the articles `running` [N] bool, `old` for the others (their search has ended:
  its step, hypotheses and decoder state stay as they were)."""
  by_row = tf.repeat(running, rows)  # [N*K]
  return map_state(lambda n, o: tf.where(expand_to(running, o), n, o),
                   lambda n, o: tf.where(expand_to(by_row, o), n, o), new, old)


@dataclasses.dataclass(frozen=True)
class StrategySettings(settings.Settings):
  """A strategy's own settings (its Strategy.Options): a settings.Settings, each field declared
  with settings.setting and named as the flag that sets it. This one, without any, is greedy
  decoding's.

  How they are written out is theirs too: `written` for metrics.json and the export's settings,
  `dir_name` and `dir_suffix` for single-pass decode's directory (registry.py puts the
  search's settings together).
  """

  def written(self, constants=False):
    """{flag name: value} in the fields' order; constants: every value one a tf.constant holds
    (the export's settings signature), else JSON values."""
    del constants  # the fields' own values are both
    return dataclasses.asdict(self)

  def dir_name(self, name):
    """The strategy (registered as `name`) in single-pass decode's directory name."""
    return name

  def dir_suffix(self):
    """What the directory name adds at its end for settings off their defaults."""
    return ""


class Strategy(abc.ABC):
  """A decoding strategy over the contract above; subclasses set `rows` (and `Options`, a
  StrategySettings class, if the strategy has settings of its own) and implement the abstract
  steps. `attention` (attention.SearchAttention, default attention.DEFAULT_SEARCH) computes the
  attention and lays out and keeps the memory."""

  rows: int
  Options = StrategySettings

  def __init__(self, settings, options=None, attention=None):
    self.settings = settings
    self.options = self.Options() if options is None else options
    self.attention = attention or attention_lib.DEFAULT_SEARCH

  @classmethod
  def from_hparams(cls, hps, settings, attention=None):
    """The strategy with search Settings `settings`, its own settings from `hps` and
    `attention` (an attention.SearchAttention)."""
    return cls(settings, cls.Options.from_hparams(hps), attention)

  @abc.abstractmethod
  def initial(self, decoder_state, memory, step=0):
    """N articles' State at `step` with nothing decoded yet (memory: their rows')."""

  @abc.abstractmethod
  def advance(self, model, memory, state, max_oovs):
    """The State one decoder step on for every article not finished."""

  @abc.abstractmethod
  def finished(self, state):
    """[N] bool: the articles whose search has ended."""

  @abc.abstractmethod
  def winners(self, state):
    """Each article's summary so far, a SearchResult."""

  def start(self, model, enc_input, enc_len, enc_input_ext):
    """Encodes N articles (enc_input, enc_input_ext [N, L] int32, enc_len [N]) and sets up their
    searches at step 0: (memory, State)."""
    memory, decoder_state = encode(model, enc_input, enc_len, self.settings, self.attention)
    memory = with_copy_index(self.attention.steps.memory(memory), enc_input_ext)
    memory, decoder_state = tile_rows(memory, decoder_state, self.rows, self.attention.steps)
    return memory, self.initial(decoder_state, memory)

  def articles_and_length(self, memory):
    """(N, L) of the rows' `memory`: its articles and the width of their memory."""
    rows = tf.shape(memory.mask)
    return rows[0] // self.rows, rows[1]

  def search(self, model, enc_input, enc_len, enc_input_ext, max_oovs):
    """Decodes N articles (as `start`; max_oovs: scalar, the widest OOV list) and returns their
    winners."""
    memory, state = self.start(model, enc_input, enc_len, enc_input_ext)
    (final,) = tf.while_loop(
        lambda state: tf.reduce_any(~self.finished(state)),
        lambda state: (self.advance(model, memory, state, max_oovs),), (state,),
        maximum_iterations=self.settings.max_dec_steps)
    return self.winners(final)

  def decoder_step(self, model, memory, decoder_state, previous):
    """One decoder step of every row from its previous token `previous` [N*K] ([START] at step
    0): vocab_logits [N*K, V], attn [N*K, L], p_gen [N*K] (None without copying) and the new
    decoder state."""
    # Temporary article-OOV ids are fed back as [UNK]: the embedding only knows the vocab.
    previous = tf.where(previous >= model.vocab_size, vocab_lib.UNK_ID, previous)  # [N*K]
    (output, context, attn, p_gen), new_state = model.cell(
        model.embedding(previous), decoder_state, memory, implementation=self.attention.steps,
        rows=self.rows)
    return model.cell.vocab_logits(output, context), attn, p_gen, new_state

  def distribution(self, vocab_logits, attn, p_gen, memory, view, max_oovs):
    """The step's final distribution [M, V(+max_oovs)] of M rows (vocab_logits [M, V], attn
    [M, L], p_gen [M] or None without copying), with the search's controls applied (view: a
    controls.base.View of the rows)."""
    dist = tf.nn.softmax(vocab_logits)  # [M, V]
    if p_gen is not None:
      dist = layers.final_distribution(dist, attn, p_gen, memory.ext_ids,
                                       max_oovs)  # [M, V + max_oovs]
    for control in self.settings.controls:
      dist = control.apply(dist, view)
    return dist

  def candidates(self, vocab_logits, attn, p_gen, memory, view, k, max_oovs):
    """The k most probable tokens of the step's controlled final distribution (as
    `distribution`): probabilities [M, k] and extended ids [M, k] int32, most probable first,
    ties to the lower id. Controls that zero a few known ids (sparse) alone are applied to the
    top candidates, k and as many more as they may zero, without building the distribution."""
    controls = self.settings.controls
    if any(not control.sparse for control in controls):
      return top_k(self.distribution(vocab_logits, attn, p_gen, memory, view, max_oovs), k)
    extra = sum(control.sparse for control in controls)
    probs, ids = top_of_final_distribution(vocab_logits, attn, p_gen, memory,
                                           k + extra)  # [M, k + extra]
    if not controls:
      return probs, ids
    for control in controls:
      banned, where = control.banned(view)  # [M, B]
      hit = tf.reduce_any((ids[:, :, None] == banned[:, None, :]) & where[:, None, :],
                          axis=2)  # [M, k + extra]
      probs = tf.where(hit, tf.zeros_like(probs), probs)
    # Zeroed candidates go last; the others keep their order (top_k: ties to the lower index).
    probs, position = tf.math.top_k(probs, k)  # [M, k]
    return probs, tf.gather(ids, position, batch_dims=1)


def initial_decoder_state(model, state, memory, first_step_context, implementation=None):
  """The decoder state step 0 starts from, of N articles' `memory` as encoded.

  "original": as the original's decode (initial_state_attention=True), the context and, with
  coverage, one extra attention added to the coverage, both computed from the encoder's final
  state (by `implementation`, an attention implementation; default
  attention.DEFAULT_SEARCH's first_step); training's step 0 never sees these. "zeros":
  training's step 0 exactly, a zero context and a zero coverage (the state `model.encode`
  returns).
  """
  if first_step_context == "original":
    implementation = implementation or attention_lib.DEFAULT_SEARCH.first_step
    return model.cell.initial_attention(state, implementation.memory(memory), implementation)
  return state


def encode(model, enc_input, enc_len, settings, attention=None):
  """N articles' memory, without the extended ids (encoder states and W_h features
  [N, L, 2H], mask [N, L]), and the decoder state ([N, ...] tuple) step 0 starts from (its
  attention by `attention`'s first_step, an attention.SearchAttention)."""
  attention = attention or attention_lib.DEFAULT_SEARCH
  states, features, mask, state = model.encode(enc_input, enc_len)
  memory = attention_lib.Memory(states, features, mask)
  state = initial_decoder_state(model, state, memory, settings.first_step_context,
                                attention.first_step)
  return memory, state


def tile_rows(memory, state, rows, implementation):
  """Memory and decoder state of N articles repeated for their `rows` rows: [N, ...] ->
  [N*rows, ...], every article's rows side by side; a memory entry of which the attention's
  `implementation` keeps one copy an article (rows_kept) stays [N, ...]."""
  def kept(t, copies):  # [N, ...] -> [N*copies, ...]; one copy is the tensor itself
    return t if t is None or copies == 1 else tf.repeat(t, copies, axis=0)

  return (tf.nest.map_structure(kept, memory, implementation.rows_kept(rows)),
          tuple(tf.repeat(s, rows, axis=0) for s in state))


class CopyIndex(NamedTuple):
  """What the copy distribution of an article needs of its extended ids, made once per article
  instead of at every step (copy_index)."""
  copy_segment: Any  # [M, L] int32: for every position, the index of its id in article_ids
  article_ids: Any  # [M, L] int32: the distinct ids in increasing order, -1 past the last


def copy_index(ext_ids):
  """The CopyIndex of extended ids [M, L]."""
  rows, length = tf.shape(ext_ids)[0], tf.shape(ext_ids)[1]
  order = tf.argsort(ext_ids, axis=1, stable=True)  # [M, L]
  sorted_ids = tf.gather(ext_ids, order, batch_dims=1)  # [M, L]
  starts = tf.concat([tf.ones([rows, 1], tf.bool),
                      sorted_ids[:, 1:] != sorted_ids[:, :-1]], axis=1)  # [M, L]
  run = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [M, L]: in sorted order
  distinct = tf.reshape(tf.math.unsorted_segment_max(
      tf.reshape(sorted_ids, [-1]), tf.reshape(run + tf.range(rows)[:, None] * length, [-1]),
      rows * length), [rows, length])  # [M, L]
  is_run = tf.range(length)[None, :] <= run[:, -1:]  # [M, L]
  # The inverse permutation of `order` takes each run index back to its position.
  segment = tf.gather(run, tf.argsort(order, axis=1), batch_dims=1)  # [M, L]
  return CopyIndex(copy_segment=segment, article_ids=tf.where(is_run, distinct, -1))


def with_copy_index(memory, ext_ids):
  """The attention.Memory `memory` with the extended ids [M, L] and their copy_index."""
  index = copy_index(ext_ids)
  return memory._replace(ext_ids=ext_ids, copy_segment=index.copy_segment,
                         article_ids=index.article_ids)
