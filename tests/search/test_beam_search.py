"""The compiled, batched beam search against a plain one-article-at-a-time Python beam search
written here from the original's algorithm (its beam_search.run_beam_search)."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.model import layers
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.model.model_config import ModelConfig
from pointer_gen.search import beam as beam_search
from pointer_gen.search import contract as search_lib
from pointer_gen.search import distribution
from pointer_gen.search.controls import registry as controls
from pointer_gen.text import vocab as vocab_lib

VOCAB = 23


def _random_model(pointer_gen, coverage, seed):
  tf.keras.utils.set_random_seed(seed)
  model = model_lib.PointerGenerator(ModelConfig(VOCAB, emb_dim=6, hidden_dim=5,
                                                 pointer_gen=pointer_gen, coverage=coverage))
  model.build_all()
  rng = np.random.default_rng(seed)
  for var in model.weights:
    var.assign(rng.normal(0.0, 0.6, var.shape).astype(np.float32))
  return model


class _Hyp:
  alpha = None

  def __init__(self, tokens, log_probs, state):
    self.tokens, self.log_probs, self.state = tokens, log_probs, state

  @property
  def avg_log_prob(self):
    if self.alpha is None:
      return sum(self.log_probs) / len(self.tokens)
    return sum(self.log_probs) / ((5.0 + len(self.tokens) - 1) / 6.0) ** self.alpha


def _repeats_ngram(generated, n):
  grams = [tuple(generated[i:i + n]) for i in range(len(generated) - n + 1)]
  return len(grams) != len(set(grams))


def _reference_beam_search(model, enc_input, enc_len, enc_ext, num_oovs, beam, max_steps,
                           min_steps, block_ngram=0, initial_state=None):
  """One article, a Python loop over steps and hypotheses, as the original's beam_search.py.

  Step 0 starts from `initial_state` if given, else from the original's initial attention.
  """
  states, features, mask, state = model.encode(enc_input[None], enc_len[None])
  memory = attention.Memory(states, features, mask)
  if initial_state is None:
    state = model.cell.initial_attention(state, memory)
  else:
    state = initial_state
  hyps = [_Hyp([vocab_lib.START_ID], [0.0], state) for _ in range(beam)]
  results = []
  steps = 0
  while steps < max_steps and len(results) < beam:
    all_hyps = []
    for h in hyps[:1 if steps == 0 else len(hyps)]:
      latest = h.tokens[-1] if h.tokens[-1] < VOCAB else vocab_lib.UNK_ID
      (out, ctx, attn, p_gen), new_state = model.cell(
          model.embedding(tf.constant([latest])), h.state, memory)
      probs = tf.nn.softmax(model.cell.vocab_logits(out, ctx))
      if p_gen is not None:
        probs = layers.final_distribution(probs, attn, p_gen, enc_ext[None], num_oovs)
      probs = probs.numpy()[0]
      if block_ngram:
        generated = h.tokens[1:]
        for w in range(len(probs)):
          if _repeats_ngram(generated + [w], block_ngram):
            probs[w] = 0.0
      top_p, top_i = tf.math.top_k(probs, 2 * beam)
      for p, i in zip(np.log(top_p.numpy()), top_i.numpy()):
        all_hyps.append(_Hyp(h.tokens + [int(i)], h.log_probs + [float(p)], new_state))
    hyps = []
    for h in sorted(all_hyps, key=lambda h: h.avg_log_prob, reverse=True):
      if h.tokens[-1] == vocab_lib.STOP_ID:
        if steps >= min_steps:
          results.append(h)
      else:
        hyps.append(h)
      if len(hyps) == beam or len(results) == beam:
        break
    steps += 1
  if not results:
    results = hyps
  return sorted(results, key=lambda h: h.avg_log_prob, reverse=True)[0]


def _articles(num, length, seed):
  rng = np.random.default_rng(seed)
  enc_len = rng.integers(3, length + 1, num).astype(np.int32)
  enc_len[0] = length
  ext = rng.integers(0, VOCAB + 4, (num, length)).astype(np.int32)
  ext[:, ::4] = vocab_lib.STOP_ID  # makes [STOP] likely enough to finish some hypotheses
  for n in range(num):
    ext[n, enc_len[n]:] = vocab_lib.PAD_ID
  enc_input = np.where(ext >= VOCAB, vocab_lib.UNK_ID, ext).astype(np.int32)
  num_oovs = int(max(0, ext.max() - VOCAB + 1))
  return enc_input, enc_len, ext, num_oovs


@pytest.mark.parametrize("pointer_gen,coverage,min_steps,seed,block,alpha,compiled", [
    (True, True, 2, 0, 0, None, False), (True, False, 0, 1, 0, None, False),
    (False, False, 3, 2, 0, None, False), (True, True, 0, 3, 0, None, False),
    (True, False, 4, 1, 2, None, False), (True, True, 2, 0, 0, 0.7, False),
    (True, True, 2, 0, 0, None, True), (True, True, 0, 3, 0, None, True),
    (True, True, 2, 0, 0, None, "shared")])
def test_compiled_beam_search_matches_reference(pointer_gen, coverage, min_steps, seed, block,
                                                alpha, compiled, monkeypatch):
  """compiled: the attention scores from the XLA kernel, the memory shared by the beams;
  "shared": the memory shared, the scores from TensorFlow's ops (exports)."""
  model = _random_model(pointer_gen, coverage, seed)
  enc_input, enc_len, ext, num_oovs = _articles(5, 9, seed)
  beam, max_steps = 3, 7
  monkeypatch.setattr(_Hyp, "alpha", alpha)
  settings = search_lib.Settings(
      max_dec_steps=max_steps, min_dec_steps=min_steps,
      controls=controls.make({"min_dec_steps": min_steps, "block_ngram_repeat": block}))
  options = beam_search.BeamSettings(beam_size=beam, length_penalty_alpha=alpha)
  steps = {True: "xla", False: "hand_gradient", "shared": "shared"}[compiled]
  searched = attention.SearchAttention(attention.get(steps), attention.get("hand_gradient"))
  search = tf.function(lambda *a: beam_search.BeamSearch(settings, options, searched).search(
      model, *a), autograph=False)
  got = search(enc_input, enc_len, ext, num_oovs).map(lambda t: t.numpy())
  finished = 0
  for n in range(len(enc_len)):
    want = _reference_beam_search(model, enc_input[n], enc_len[n], ext[n], num_oovs, beam,
                                  max_steps, min_steps, block)
    length = got.length[n]
    assert list(got.tokens[n, :length]) == want.tokens[1:], f"article {n}"
    assert np.all(got.tokens[n, length:] == vocab_lib.PAD_ID)
    np.testing.assert_allclose(got.score[n], want.avg_log_prob, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.log_prob[n], sum(want.log_probs), rtol=1e-5, atol=1e-5)
    finished += want.tokens[-1] == vocab_lib.STOP_ID
    if block:
      assert not _repeats_ngram(list(got.tokens[n, :length]), block)
  assert finished > 0 or min_steps > 0


@pytest.mark.parametrize("width,k,levels", [(20004, 8, 0), (20004, 8, 5), (20000, 8, 5),
                                            (1000, 6, 3), (300, 8, 2), (11, 4, 0), (64, 2, 0)])
def test_top_k_equals_tf_top_k(width, k, levels):
  """The two-pass top_k gives tf.math.top_k's values and ids, ties included (levels > 0: every
  value one of `levels` numbers), whether a block size divides the width (20000: 80, 1000:
  100) or the values are padded (20004, 11) and when there are fewer blocks than k
  (tf.math.top_k itself)."""
  rng = np.random.default_rng(width + k + levels)
  values = (rng.integers(0, levels, (7, width)) if levels
            else rng.random((7, width))).astype(np.float32)
  top, ids = distribution.top_k(tf.constant(values), k)
  want_top, want_ids = tf.math.top_k(values, k)
  np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
  np.testing.assert_array_equal(top.numpy(), want_top.numpy())


def test_top_k_block_divides_the_width_where_one_can():
  """Blocks of 64-128 that divide the width need no padding; other widths and widths unknown
  when tracing are padded to blocks of 64."""
  assert distribution._block_size(20000) == (80, False)
  assert distribution._block_size(50000) == (80, False)
  assert distribution._block_size(1000) == (100, False)
  assert distribution._block_size(20004) == (64, True)
  assert distribution._block_size(None) == (64, True)


def test_copy_index_names_each_position_s_distinct_id():
  """article_ids: each row's distinct ids in increasing order, -1 after; copy_segment: where
  each position's id is among them."""
  ext = np.array([[7, 3, 7, 0, 3, 9], [5, 5, 5, 5, 5, 5]], np.int32)
  index = search_lib.copy_index(tf.constant(ext))
  np.testing.assert_array_equal(index.article_ids.numpy(),
                                [[0, 3, 7, 9, -1, -1], [5, -1, -1, -1, -1, -1]])
  np.testing.assert_array_equal(index.copy_segment.numpy(),
                                [[2, 1, 2, 0, 1, 3], [0, 0, 0, 0, 0, 0]])


@pytest.mark.parametrize("pointer,seed,ties", [(True, 0, False), (True, 1, True), (False, 2, False)])
def test_top_of_final_distribution_equals_top_k_of_the_distribution(pointer, seed, ties):
  """The candidates' top k against top_k over the whole final distribution: repeated article
  ids (their attention summed), OOV ids, best vocabulary ids that are also in the article, and
  (ties) equal logits and equal attention, so that equal probabilities meet at the cut."""
  rng = np.random.default_rng(seed)
  rows, vocab, length, oovs, k = 6, 40, 9, 3, 8
  logits = rng.normal(0.0, 2.0, (rows, vocab))
  attn = rng.random((rows, length))
  if ties:
    logits = np.round(logits)
    attn = np.round(attn * 2.0)
  attn = attn / attn.sum(axis=1, keepdims=True)
  ext = rng.integers(0, vocab + oovs, (rows, length))
  ext[:, 1] = ext[:, 4]  # a repeated id in every row
  ext[0, 2] = np.argmax(logits[0])  # the best vocabulary id also in the article
  p_gen = rng.random(rows) if pointer else None
  args = [tf.constant(a, tf.float32) for a in (logits, attn)]
  dist = tf.nn.softmax(args[0])
  if pointer:
    dist = layers.final_distribution(dist, args[1], tf.constant(p_gen, tf.float32),
                                     tf.constant(ext, tf.int32), oovs)
  want_top, want_ids = tf.math.top_k(dist, k)
  top, ids = distribution.top_of_final_distribution(
      args[0], args[1], None if p_gen is None else tf.constant(p_gen, tf.float32),
      search_lib.copy_index(tf.constant(ext, tf.int32)), k)
  np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
  np.testing.assert_allclose(top.numpy(), want_top.numpy(), rtol=1e-6)
  if pointer:
    assert (ids.numpy() >= vocab).any()  # some copied OOVs made the top k
