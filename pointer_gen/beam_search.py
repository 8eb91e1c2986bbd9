"""Beam search of the original (its beam_search.run_beam_search), compiled: many articles x
beam hypotheses per step inside one tf.while_loop.

Per article it reproduces the original exactly: each live hypothesis proposes its top
2*beam_size extensions of the final distribution (only the first hypothesis at step 0, where
all are identical); candidates are visited in order of average log-probability (ties in
proposal order, as Python's stable sort); a [STOP] candidate becomes a result if at least
min_dec_steps steps have passed, else it is dropped; other candidates become the new live
hypotheses; the visit stops once beam_size live hypotheses or beam_size results exist. Search
ends at max_dec_steps or when beam_size results exist; the winner is the result (or, with none,
the live hypothesis) of best average log-probability.

Every article keeps its own step counter, and an article whose search has ended stays as it is
while the others go on: the pieces (start / encode, advance, finished, winners) also run
continuous batching (continuous_batching.py), where articles start at different steps.
"""

import dataclasses

import tensorflow as tf

from pointer_gen import config
from pointer_gen import kernels
from pointer_gen import layers
from pointer_gen import precision
from pointer_gen import vocab as vocab_lib

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


def _score(log_prob_sum, num_tokens, length_penalty_alpha):
  """The original's average log-probability over the tokens ([START] included); with alpha,
  GNMT's normaliser ((5 + generated) / 6) ** alpha instead (an extra, off by default)."""
  num_tokens = tf.cast(num_tokens, log_prob_sum.dtype)
  if length_penalty_alpha is None:
    return log_prob_sum / num_tokens
  return log_prob_sum / ((5.0 + num_tokens - 1.0) / 6.0) ** length_penalty_alpha


def _block_repeats(dist, tokens, step, n):
  """Zeroes the probability of every token that would repeat an n-gram of its hypothesis.

  dist [M, W]; tokens [M, T] generated so far (valid before each row's `step` [M]) -> [M, W].
  """
  total = tokens.shape[1]
  if total is None or total < n:
    return dist
  starts = total - n + 1
  # An earlier n-gram starting at j is complete before this step if j + n - 1 <= step - 1.
  match = tf.range(starts)[None, :] <= (step - n)[:, None]  # [M, J]
  for i in range(n - 1):
    # [M]: the (n-1)-token prefix
    recent = tf.gather(tokens, tf.maximum(step - n + 1 + i, 0), batch_dims=1)
    match &= tf.equal(tokens[:, i:starts + i], recent[:, None])  # [M, J]
  banned = tokens[:, n - 1:]  # [M, J]: the token that completed each earlier n-gram
  rows = tf.tile(tf.range(tf.shape(tokens)[0])[:, None], [1, starts])  # [M, J]
  where = tf.where(match)  # [P, 2]
  indices = tf.stack([tf.gather_nd(rows, where), tf.gather_nd(banned, where)], axis=1)
  return tf.tensor_scatter_nd_update(dist, indices, tf.zeros([tf.shape(where)[0]], dist.dtype))


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


def copy_index(ext_ids):
  """What the copy distribution of an article needs of its extended ids [M, L], made once per
  article instead of at every step: the distinct ids in increasing order ("article_ids" [M, L],
  -1 past the last) and, for every position, the index of its id among them ("copy_segment"
  [M, L])."""
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
  return {"copy_segment": segment, "article_ids": tf.where(is_run, distinct, -1)}


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

  vocab_logits [M, V], attn [M, L], p_gen [M] (None: no copying), index: copy_index(ext_ids).
  """
  rows, vocab_size = tf.shape(vocab_logits)[0], tf.shape(vocab_logits)[1]
  vocab_probs = tf.nn.softmax(vocab_logits)  # [M, V]
  best_probs, best = top_k(vocab_probs, k)  # [M, k]
  if p_gen is None:
    return best_probs, best

  def vocab_prob(ids):  # ids [M, C] -> P_vocab(id) [M, C], 0 outside the vocabulary
    in_vocab = (ids >= 0) & (ids < vocab_size)
    return tf.where(in_vocab, tf.gather(vocab_probs, tf.where(in_vocab, ids, 0), batch_dims=1),
                    0.0)

  # The attention on each distinct article id, summed over its positions in article order
  # (no gather into id order first, which costs more than the sums).
  length = tf.shape(attn)[1]
  segments = tf.reshape(index["copy_segment"] + tf.range(rows)[:, None] * length,
                        [-1])  # [M*L]
  copied = tf.reshape(tf.math.unsorted_segment_sum(tf.reshape(attn, [-1]), segments,
                                                   rows * length),
                      [rows, length])  # [M, L]: distinct id r's summed attention
  article_ids = index["article_ids"]  # [M, L]
  is_id = article_ids >= 0  # [M, L]
  article_probs = (p_gen[:, None] * vocab_prob(article_ids)
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


def initial_decoder_state(model, state, features, states, mask, first_step_context):
  """The decoder state step 0 starts from.

  "original": as the original's decode (initial_state_attention=True), the context and, with
  coverage, one extra attention added to the coverage, both computed from the encoder's final
  state; training's step 0 never sees these. "zeros": training's step 0 exactly, a zero context
  and a zero coverage (the state `model.encode` returns).
  """
  if first_step_context == "original":
    return model.cell.initial_attention(state, features, states, mask)
  if first_step_context == "zeros":
    return state
  raise ValueError(f"first_step_context={first_step_context!r}: expected one of "
                   f"{', '.join(config.FIRST_STEP_CONTEXTS)}")


@dataclasses.dataclass(frozen=True)
class Settings:
  """The search's constants: see beam_search."""
  beam_size: int
  max_dec_steps: int
  min_dec_steps: int
  keep_attention: bool = False
  block_ngram_repeat: int = 0
  length_penalty_alpha: float | None = None
  first_step_context: str = "original"
  # The attention scores from one XLA kernel (kernels.compiled_attention_scores), with the
  # encoder states and features stored once per article, not once per hypothesis: continuous
  # batching's shapes are fixed, so it compiles once; exports stay plain TensorFlow.
  compiled_attention: bool = False


# The memory an article's hypotheses share when Settings.compiled_attention; the mask and the
# extended ids are per row (per hypothesis) always.
SHARED_MEMORY = ("states", "features")


def beam_search(model, enc_input, enc_len, enc_input_ext, max_oovs, beam_size, max_dec_steps,
                min_dec_steps, keep_attention=False, block_ngram_repeat=0,
                length_penalty_alpha=None, first_step_context="original",
                compiled_attention=False):
  """Decodes a batch of N articles.

  block_ngram_repeat=n > 0 forbids any hypothesis to repeat one of its n-grams,
  length_penalty_alpha ranks by GNMT's length penalty, and first_step_context="zeros" starts
  step 0 from training's zero context (see initial_decoder_state); all are extras, off by
  default, so that summaries are the original's. compiled_attention: see Settings.

  enc_input, enc_input_ext [N, L] int32; enc_len [N]; max_oovs: scalar, the widest OOV list.
  Returns tokens [N, max_dec_steps] (extended ids, [STOP] included if generated, [PAD] after),
  length [N] (tokens generated, [STOP] included), score [N] (average log-probability with the
  [START] token counted, as the original), log_prob [N] (sum), p_gens [N, max_dec_steps] and,
  if keep_attention, attn [N, max_dec_steps, L].
  """
  settings = Settings(beam_size, max_dec_steps, min_dec_steps, keep_attention,
                      block_ngram_repeat, length_penalty_alpha, first_step_context,
                      compiled_attention)
  memory, search = start(model, enc_input, enc_len, enc_input_ext, settings)
  (final,) = tf.while_loop(
      lambda search: tf.reduce_any(~finished(search, settings)),
      lambda search: (advance(model, memory, search, max_oovs, settings),), (search,),
      maximum_iterations=max_dec_steps)
  return winners(final, settings)


def encode(model, enc_input, enc_len, settings):
  """N articles' memory, without the extended ids (encoder states and W_h features
  [N, L, 2H], mask [N, L]), and the decoder state ([N, ...] tuple) step 0 starts from."""
  states, features, mask, state = model.encode(enc_input, enc_len)
  state = initial_decoder_state(model, state, features, states, mask,
                                settings.first_step_context)
  return {"states": states, "features": features, "mask": mask}, state


def start(model, enc_input, enc_len, enc_input_ext, settings):
  """Encodes N articles and sets up their searches at step 0.

  Returns memory, what the decoder attends to and copies from (encoder states and W_h features
  [N*K, L, 2H]; with settings.compiled_attention states [N, L, 2H] and features [N, 2H, L],
  see compiled_layout; mask [N*K, L], extended ids and their copy_index [N*K, L]; each
  article's K rows side by side), and the search state: per article a step counter [N] and its
  live hypotheses and results.
  """
  memory, state = encode(model, enc_input, enc_len, settings)
  memory = compiled_layout(memory, settings)
  memory["ext_ids"] = enc_input_ext
  memory.update(copy_index(enc_input_ext))
  memory, state = tile_beams(memory, state, settings)
  return memory, search_state(state, tf.shape(enc_input)[0], tf.shape(enc_input)[1], settings)


def compiled_layout(memory, settings):
  """The memory as the search reads it: with settings.compiled_attention the features
  transposed to [N, 2H, L] for kernels.compiled_attention_scores."""
  if not settings.compiled_attention:
    return memory
  return {**memory, "features": kernels.transpose_features(memory["features"])}


def tile_beams(memory, state, settings):
  """Memory and decoder state of N articles repeated for their K hypotheses: [N, ...] ->
  [N*K, ...], every article's K rows side by side; with settings.compiled_attention the
  SHARED_MEMORY stays [N, ...]."""
  tile = lambda t: tf.repeat(t, settings.beam_size, axis=0)
  return ({name: t if settings.compiled_attention and name in SHARED_MEMORY else tile(t)
           for name, t in memory.items()}, tuple(tile(s) for s in state))


def search_state(state, articles, length, settings, step=0):
  """The search of N articles at `step` with no hypotheses yet, from the decoder `state`
  ([N*K, ...] tuple) of step 0; `length` is the width L of the articles' memory."""
  k = settings.beam_size
  # Probabilities, p_gens and attention are float32 in every --precision.
  dtype = precision.OUTPUT_DTYPE
  steps_shape = [articles, k, settings.max_dec_steps]
  search = {
      "step": tf.fill([articles], step),
      "state": state,
      "live_tokens": tf.fill(steps_shape, vocab_lib.PAD_ID),
      "live_sum": tf.zeros([articles, k], dtype),
      "live_p_gens": tf.zeros(steps_shape, dtype),
      "done_tokens": tf.fill(steps_shape, vocab_lib.PAD_ID),
      "done_sum": tf.zeros([articles, k], dtype),
      "done_score": tf.fill([articles, k], tf.constant(float("-inf"), dtype)),
      "done_len": tf.zeros([articles, k], tf.int32),
      "done_p_gens": tf.zeros(steps_shape, dtype),
      "num_done": tf.zeros([articles], tf.int32),
  }
  if settings.keep_attention:
    search["live_attn"] = tf.zeros([articles, k, settings.max_dec_steps, length], dtype)
    search["done_attn"] = tf.zeros([articles, k, settings.max_dec_steps, length], dtype)
  return search


def finished(search, settings):
  """[N] bool: the articles whose search has ended (max_dec_steps or beam_size results)."""
  return (search["step"] >= settings.max_dec_steps) | (search["num_done"] >= settings.beam_size)


def advance(model, memory, search, max_oovs, settings):
  """One decoder step of every article whose search has not ended; the others stay as they are.

  Each article has its own step counter, so articles that started at different times (a
  continuous batch) advance side by side exactly as each would alone.
  """
  k, steps = settings.beam_size, settings.max_dec_steps
  vocab_size = model.vocab_size
  articles = tf.shape(search["num_done"])[0]
  step = search["step"]  # [N]
  dtype = search["live_sum"].dtype
  previous = tf.gather(search["live_tokens"], tf.maximum(step - 1, 0), axis=2,
                       batch_dims=1)  # [N, K]
  previous = tf.where((step > 0)[:, None], previous, vocab_lib.START_ID)  # [N, K]
  # Temporary article-OOV ids are fed back as [UNK]: the embedding only knows the vocab.
  previous = tf.where(previous >= vocab_size, vocab_lib.UNK_ID, previous)
  (output, context, attn, p_gen), new_state = model.cell(
      model.embedding(_merge(previous)), search["state"], memory["features"], memory["states"],
      memory["mask"], compiled_scores=settings.compiled_attention,
      beams=k if settings.compiled_attention else 1)
  vocab_logits = model.cell.vocab_logits(output, context)  # [N*K, V]
  if settings.block_ngram_repeat:
    # Blocking zeroes ids anywhere in the distribution: it needs the whole of it.
    vocab_probs = tf.nn.softmax(vocab_logits)  # [N*K, V]
    dist = vocab_probs if p_gen is None else layers.final_distribution(
        vocab_probs, attn, p_gen, memory["ext_ids"], max_oovs)  # [N*K, V(+N)]
    dist = _block_repeats(dist, _merge(search["live_tokens"]), tf.repeat(step, k),
                          settings.block_ngram_repeat)
    top_probs, top_ids = top_k(dist, 2 * k)  # [N*K, 2K]
  else:
    top_probs, top_ids = top_of_final_distribution(vocab_logits, attn, p_gen, memory,
                                                   2 * k)  # [N*K, 2K]
  if p_gen is None:
    p_gen = tf.ones([tf.shape(output)[0]], dtype)  # [N*K]
  top_logp = _split(tf.math.log(top_probs), articles, k)  # [N, K, 2K]
  top_ids = _split(top_ids, articles, k)  # [N, K, 2K]

  cand_sum = search["live_sum"][:, :, None] + top_logp  # [N, K, 2K]
  # At step 0 every hypothesis is the same [START]: only the first one proposes.
  proposes = (step > 0)[:, None] | (tf.range(k) == 0)[None, :]  # [N, K]
  proposes = tf.broadcast_to(proposes[:, :, None], tf.shape(cand_sum))  # [N, K, 2K]
  cand_score = tf.where(proposes,
                        _score(cand_sum, step[:, None, None] + 2, settings.length_penalty_alpha),
                        float("-inf"))  # [N, K, 2K]: [START] + step + 1 tokens
  candidates = 2 * k * k
  _, order = tf.math.top_k(tf.reshape(cand_score, [articles, candidates]),
                           candidates)  # [N, C]; ties: lower index first, as a stable sort

  def in_order(t):  # [N, K, 2K] -> [N, C] in visiting order
    return tf.gather(tf.reshape(t, [articles, candidates]), order, batch_dims=1)

  order_ids, order_sum, order_score = in_order(top_ids), in_order(cand_sum), in_order(cand_score)
  order_parent = order // (2 * k)  # [N, C]
  valid = in_order(proposes)
  is_stop = tf.equal(order_ids, vocab_lib.STOP_ID)
  is_live = tf.logical_not(is_stop) & valid
  accept_stop = is_stop & valid & (step >= settings.min_dec_steps)[:, None]
  live_count = tf.cumsum(tf.cast(is_live, tf.int32), axis=1)  # [N, C]
  done_count = search["num_done"][:, None] + tf.cumsum(tf.cast(accept_stop, tf.int32), axis=1)
  # The visit stops right after the candidate that fills the beam or the results.
  full = (live_count >= k) | (done_count >= k)  # [N, C]
  visited = tf.cumsum(tf.cast(full, tf.int32), axis=1, exclusive=True) == 0
  new_live = is_live & visited
  new_done = accept_stop & visited

  step_mask = tf.one_hot(step, steps, dtype=dtype)[:, None, :]  # [N, 1, T]
  step_ids = tf.cast(step_mask, tf.int32)  # [N, 1, T]
  p_gen = _split(p_gen, articles, k)  # [N, K]
  attn = _split(attn, articles, k)  # [N, K, L]

  def extend(parents, tokens):
    """History of the hypotheses `parents` [N, M] extended by this step's `tokens` [N, M]."""
    out = {
        "tokens": (_gather_beams(search["live_tokens"], parents) * (1 - step_ids)
                   + tokens[:, :, None] * step_ids),  # [N, M, T]
        "p_gens": (_gather_beams(search["live_p_gens"], parents) * (1.0 - step_mask)
                   + _gather_beams(p_gen, parents)[:, :, None] * step_mask),  # [N, M, T]
    }
    if settings.keep_attention:
      out["attn"] = (_gather_beams(search["live_attn"], parents) * (1.0 - step_mask)[..., None]
                     + _gather_beams(attn, parents)[:, :, None, :]
                     * step_mask[..., None])  # [N, M, T, L]
    return out

  # Live hypotheses: the first K visited non-[STOP] candidates, in visiting order.
  live_rank = tf.where(new_live, live_count - 1, candidates)  # [N, C]
  live_pick = tf.math.top_k(-live_rank, k).indices  # [N, K] positions in visiting order
  parent = _gather_beams(order_parent, live_pick)  # [N, K]
  live = extend(parent, _gather_beams(order_ids, live_pick))
  out = dict(search)
  flat_parent = _merge(parent + tf.range(articles)[:, None] * k)  # [N*K] rows of N*K
  out["state"] = tuple(tf.gather(s, flat_parent) for s in new_state)
  out["live_sum"] = _gather_beams(order_sum, live_pick)
  for name, value in live.items():
    out["live_" + name] = value

  # Results: accepted [STOP] candidates fill the next free result slots in visiting order.
  slot_of = tf.where(new_done, done_count - 1, -1)  # [N, C]
  slot_match = tf.equal(slot_of[:, None, :], tf.range(k)[None, :, None])  # [N, K, C]
  filled = tf.reduce_any(slot_match, axis=2)  # [N, K]
  source = tf.argmax(tf.cast(slot_match, tf.int32), axis=2, output_type=tf.int32)  # [N, K]
  done = extend(_gather_beams(order_parent, source),
                tf.fill([articles, k], vocab_lib.STOP_ID))
  done["sum"] = _gather_beams(order_sum, source)
  done["score"] = _gather_beams(order_score, source)
  done["len"] = tf.broadcast_to((step + 1)[:, None], [articles, k])
  for name, value in done.items():
    old = search["done_" + name]
    out["done_" + name] = tf.where(_expand_to(filled, old), value, old)
  out["num_done"] = search["num_done"] + tf.reduce_sum(tf.cast(new_done, tf.int32), axis=1)
  out["step"] = step + 1

  # Ended searches keep everything: their step, results and live hypotheses.
  running = ~finished(search, settings)  # [N]
  rows = tf.repeat(running, k)  # [N*K]
  kept = {name: tf.where(_expand_to(running, search[name]), value, search[name])
          for name, value in out.items() if name != "state"}
  kept["state"] = tuple(tf.where(_expand_to(rows, old), new, old)
                        for new, old in zip(out["state"], search["state"]))
  return kept


def _expand_to(condition, tensor):
  """condition [A] or [A, B] reshaped to broadcast against `tensor` [A, (B,) ...]."""
  shape = tf.concat([tf.shape(condition), tf.ones(tf.rank(tensor) - tf.rank(condition),
                                                  tf.int32)], 0)
  return tf.reshape(condition, shape)


def winners(search, settings):
  """Best result per article by average log-probability; the live beam if none finished."""
  has_done = search["num_done"] > 0  # [N]
  steps = search["step"]  # [N]
  live_score = _score(search["live_sum"], steps[:, None] + 1,
                      settings.length_penalty_alpha)  # [N, K]
  score = tf.where(has_done[:, None], search["done_score"], live_score)  # [N, K]
  # Live hypotheses are already in visiting (best-first) order; results are not.
  best = tf.argmax(score, axis=1, output_type=tf.int32)  # [N]; ties: the first

  def pick(done, live):
    chosen_done = tf.gather(done, best, batch_dims=1)
    chosen_live = tf.gather(live, best, batch_dims=1)
    return tf.where(_expand_to(has_done, chosen_done), chosen_done, chosen_live)

  result = {
      "tokens": pick(search["done_tokens"], search["live_tokens"]),
      "length": pick(search["done_len"],
                     tf.broadcast_to(steps[:, None], tf.shape(search["done_len"]))),
      "score": tf.gather(score, best, batch_dims=1),
      "log_prob": pick(search["done_sum"], search["live_sum"]),
      "p_gens": pick(search["done_p_gens"], search["live_p_gens"]),
  }
  if settings.keep_attention:
    result["attn"] = pick(search["done_attn"], search["live_attn"])
  return result
