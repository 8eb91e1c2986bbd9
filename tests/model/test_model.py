"""The whole model and its losses against a numpy unrolled loop of the paper's equations."""

import json

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import precision
from pointer_gen.data.batch import Batch
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.model.model_config import ModelConfig

from helpers import reference
from helpers import np64, np_sigmoid, np_softmax

V, E, H = 11, 5, 4
ATOL = 1e-5
PROB_FLOOR = 1e-10

# A batch of three articles of lengths 7, 5, 3 (L = 7) and abstracts of 6, 3, 4 steps (T = 6).
# Row 0 has the OOV V+0 twice and V+1 once; row 2 has no OOV. PAD = 1 pads both sides.
ENC_EXT = np.array([
    [4, V + 0, 6, V + 0, 5, V + 1, 4],
    [7, 8, V + 0, 7, 9, 1, 1],
    [10, 5, 6, 1, 1, 1, 1],
], np.int32)
ENC_LEN = np.array([7, 5, 3], np.int32)
MAX_OOVS = 2
# Targets: copied OOVs (one repeated in the article), an in-vocab word that is also in the
# article (both parts count), [UNK]=0 with no [UNK] in the article, STOP=3, then PAD.
TARGET = np.array([
    [V + 0, 4, V + 1, 0, 5, 3],
    [8, V + 0, 3, 1, 1, 1],
    [9, 0, 10, 3, 1, 1],
], np.int32)
DEC_LEN = np.array([6, 3, 4], np.int32)


def _enc_input(enc_ext):
  return np.where(enc_ext >= V, 0, enc_ext).astype(np.int32)


def _dec_input(target, dec_len):
  """[START] + target[:-1], temporary ids fed as [UNK], PAD after the real steps."""
  dec = np.concatenate([np.full((target.shape[0], 1), 2), _enc_input(target)[:, :-1]], axis=1)
  steps = np.arange(target.shape[1])[None, :]
  return np.where(steps < dec_len[:, None], dec, 1).astype(np.int32)


def make_batch(pointer_gen=True, rows=None, enc_width=None, dec_width=None):
  rows = list(range(3)) if rows is None else rows
  enc_ext, enc_len = ENC_EXT[rows], ENC_LEN[rows]
  target, dec_len = TARGET[rows], DEC_LEN[rows]
  enc_width = enc_width or int(enc_len.max())
  dec_width = dec_width or int(dec_len.max())
  enc_ext = enc_ext[:, :enc_width]
  target = target[:, :dec_width]
  if not pointer_gen:
    target = _enc_input(target)
  enc_input = _enc_input(enc_ext)
  return Batch(
      enc_input=tf.constant(enc_input),
      enc_input_ext=tf.constant(enc_ext if pointer_gen else enc_input),
      enc_len=tf.constant(enc_len),
      dec_input=tf.constant(_dec_input(target, dec_len)),
      target=tf.constant(target),
      dec_len=tf.constant(dec_len))


# ---------------------------------------------------------------------------------------------
# numpy reference


_np, _sigmoid, _softmax = np64, np_sigmoid, np_softmax


def np_lstm_step(x, h, c, cell):
  """Keras LSTMCell: gates i, f, c, o; kernel [in, 4H], recurrent_kernel [H, 4H]."""
  z = x @ _np(cell.kernel) + h @ _np(cell.recurrent_kernel) + _np(cell.bias)
  n = h.shape[-1]
  i, f, g, o = (z[..., k * n:(k + 1) * n] for k in range(4))
  c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
  return _sigmoid(o) * np.tanh(c), c


def np_encoder(model, enc_input, enc_len):
  """BiLSTM respecting lengths: the backward pass starts at each sequence's last real token.
  Returns states [B, L, 2H] (zeros on padding) and the decoder's initial (c, h)."""
  emb = _np(model.embedding.embeddings)[enc_input]
  fw_cell = model.encoder.fw_cell
  bw_cell = model.encoder.bw_cell
  batch, length = enc_input.shape
  states = np.zeros((batch, length, 2 * H))
  fw_final, bw_final = [], []
  for b in range(batch):
    n = enc_len[b]
    h, c = np.zeros(H), np.zeros(H)
    for i in range(n):
      h, c = np_lstm_step(emb[b, i], h, c, fw_cell)
      states[b, i, :H] = h
    fw_final.append((h, c))
    h, c = np.zeros(H), np.zeros(H)
    for i in reversed(range(n)):
      h, c = np_lstm_step(emb[b, i], h, c, bw_cell)
      states[b, i, H:] = h
    bw_final.append((h, c))
  rs = model.reduce_state
  old_c = np.stack([np.concatenate([f[1], w[1]]) for f, w in zip(fw_final, bw_final)])
  old_h = np.stack([np.concatenate([f[0], w[0]]) for f, w in zip(fw_final, bw_final)])
  c0 = np.maximum(old_c @ _np(rs.w_reduce_c) + _np(rs.bias_reduce_c), 0.0)
  h0 = np.maximum(old_h @ _np(rs.w_reduce_h) + _np(rs.bias_reduce_h), 0.0)
  return states, c0, h0


def np_attention(att, query, states, mask, coverage, use_coverage):
  feats = (states @ _np(att.memory_layer.kernel)
           + (query @ _np(att.query_layer.kernel) + _np(att.query_layer.bias))[:, None, :])
  if use_coverage:
    feats = feats + coverage[:, :, None] * _np(att.w_c)[0]
  a = _softmax(np.tanh(feats) @ _np(att.v), axis=1) * mask
  a /= a.sum(axis=1, keepdims=True)
  return np.einsum("bl,bld->bd", a, states), a


def np_forward(model, batch):
  """Teacher-forced unrolled loop: context_{-1} = 0, coverage^0 = 0."""
  enc_input = batch.enc_input.numpy()
  enc_len = batch.enc_len.numpy()
  dec_input = batch.dec_input.numpy()
  states, c, h = np_encoder(model, enc_input, enc_len)
  batch_size, length = enc_input.shape
  mask = (np.arange(length)[None, :] < enc_len[:, None]).astype(np.float64)
  cell = model.cell
  emb = _np(model.embedding.embeddings)[dec_input]
  context = np.zeros((batch_size, 2 * H))
  coverage = np.zeros((batch_size, length))
  outs, ctxs, attns, p_gens = [], [], [], []
  for t in range(dec_input.shape[1]):
    x = (np.concatenate([emb[:, t], context], axis=1) @ _np(cell.input_projection.kernel)
         + _np(cell.input_projection.bias))
    h, c = np_lstm_step(x, h, c, cell.lstm_cell)
    context, attn = np_attention(cell.attention, np.concatenate([c, h], axis=1), states, mask,
                                 coverage, model.coverage)
    if model.pointer_gen:
      feats = np.concatenate([context, c, h, x], axis=1)
      p_gens.append(_sigmoid(feats @ _np(cell.p_gen_layer.kernel)
                             + _np(cell.p_gen_layer.bias))[:, 0])
    coverage = coverage + attn
    outs.append(h)
    ctxs.append(context)
    attns.append(attn)
  outs, ctxs = np.stack(outs, 1), np.stack(ctxs, 1)
  hidden = (np.concatenate([outs, ctxs], axis=-1) @ _np(cell.output_hidden.kernel)
            + _np(cell.output_hidden.bias))
  result = model_lib.Outputs(
      attn=np.stack(attns, 1),
      vocab_logits=hidden @ _np(cell.vocab_projection.kernel) + _np(cell.vocab_projection.bias),
      p_gen=np.stack(p_gens, 1) if model.pointer_gen else None)
  return result, states, c, h


def np_gold_probs(outputs, target, enc_ext, pointer_gen):
  """P(target_t) read from the explicit final distribution over V + N (duplicates summed)."""
  probs = _softmax(_np(outputs.vocab_logits), axis=-1)  # [B, T, V]
  batch, steps = target.shape
  gold = np.zeros((batch, steps))
  for b in range(batch):
    for t in range(steps):
      if not pointer_gen:
        gold[b, t] = probs[b, t, target[b, t]]
        continue
      p_gen = _np(outputs.p_gen)[b, t]
      dist = np.zeros(V + MAX_OOVS)
      dist[:V] = p_gen * probs[b, t]
      for i, w in enumerate(enc_ext[b]):
        dist[w] += (1.0 - p_gen) * _np(outputs.attn)[b, t, i]
      gold[b, t] = dist[target[b, t]]
  return gold


def np_losses(outputs, batch, pointer_gen, coverage, cov_loss_wt):
  target = batch.target.numpy()
  dec_len = batch.dec_len.numpy()
  gold = np_gold_probs(outputs, target, batch.enc_input_ext.numpy(), pointer_gen)
  step_nll = -np.log(np.maximum(gold, PROB_FLOOR))
  mask = (np.arange(target.shape[1])[None, :] < dec_len[:, None]).astype(np.float64)
  per_example = (step_nll * mask).sum(axis=1) / dec_len
  result = {"per_example_nll": per_example}
  if pointer_gen:
    result["loss"] = per_example.mean()
  else:
    result["loss"] = (step_nll * mask).sum() / mask.sum()
  result["total_loss"] = result["loss"]
  if coverage:
    attn = _np(outputs.attn)
    cov = np.zeros_like(attn[:, 0])
    steps = []
    for t in range(attn.shape[1]):
      steps.append(np.minimum(attn[:, t], cov).sum(axis=1))
      cov = cov + attn[:, t]
    per_cov = (np.stack(steps, 1) * mask).sum(axis=1) / dec_len
    result["per_example_cov"] = per_cov
    result["coverage_loss"] = per_cov.mean()
    result["total_loss"] = result["loss"] + cov_loss_wt * result["coverage_loss"]
  return result


# ---------------------------------------------------------------------------------------------
# Fixtures


def _randomize(model, seed, scale=0.6):
  rng = np.random.default_rng(seed)
  for var in model.weights:
    var.assign(rng.uniform(-scale, scale, var.shape).astype(np.float32))


def make_model(pointer_gen=True, coverage=True, seed=0):
  model = model_lib.PointerGenerator(ModelConfig(V, E, H, pointer_gen=pointer_gen,
                                                 coverage=coverage))
  model.build_all()
  _randomize(model, seed)
  return model


MODES = [(False, False), (True, False), (True, True), (False, True)]
MODE_IDS = ["baseline", "pointer", "pointer+coverage", "baseline+coverage"]


@pytest.fixture(scope="module", params=MODES, ids=MODE_IDS)
def mode_model(request):
  pointer_gen, coverage = request.param
  return make_model(pointer_gen, coverage, seed=len(MODE_IDS[MODES.index(request.param)]))


# ---------------------------------------------------------------------------------------------
# Parameter counts


def test_trainable_parameter_counts_at_paper_sizes():
  def count(pointer_gen, coverage):
    model = model_lib.PointerGenerator(ModelConfig(50000, 128, 256, pointer_gen=pointer_gen,
                                                   coverage=coverage))
    model.build_all()
    return sum(int(np.prod(v.shape)) for v in model.trainable_variables)

  baseline = count(False, False)
  assert baseline == 21_499_600
  assert count(True, False) == baseline + 1153
  assert count(True, True) == baseline + 1153 + 512
  assert count(False, True) == baseline + 512


# ---------------------------------------------------------------------------------------------
# Configuration


def test_model_config_takes_the_hparams_and_the_real_vocab_size():
  hps = config.HParams(vocab_size=0, emb_dim=9, hidden_dim=7, pointer_gen=False, coverage=True,
                       rand_unif_init_mag=0.5, trunc_norm_init_std=0.25)
  assert ModelConfig.from_hparams(hps, 30) == ModelConfig(
      vocab_size=30, emb_dim=9, hidden_dim=7, pointer_gen=False, coverage=True,
      rand_unif_init_mag=0.5, trunc_norm_init_std=0.25)
  # Its defaults are the flags'.
  assert ModelConfig.from_hparams(config.HParams(), 50000) == ModelConfig(50000)


@pytest.mark.parametrize("pointer_gen,coverage", [(False, False), (True, True)])
def test_get_config_round_trip_rebuilds_an_equal_model(pointer_gen, coverage):
  """Through JSON, as Keras saves a config: the same configuration, held by the model and its
  cell alike, the same variables, and the same outputs once the weights are copied."""
  model = make_model(pointer_gen, coverage)
  saved = json.loads(json.dumps(model.get_config()))
  clone = model_lib.PointerGenerator.from_config(saved)
  assert clone.config == model.config and clone.cell.config == model.config
  assert clone.get_config() == saved
  clone.build_all()
  assert [v.path for v in clone.weights] == [v.path for v in model.weights]
  for copy, weight in zip(clone.weights, model.weights):
    copy.assign(weight)
  batch = make_batch(pointer_gen)
  expected, outputs = model(batch), clone(batch)
  assert [value is None for value in outputs] == [value is None for value in expected]
  for name, value in expected._asdict().items():
    if value is not None:
      np.testing.assert_array_equal(getattr(outputs, name).numpy(), value.numpy(), err_msg=name)


def test_get_config_round_trip_keeps_the_precision():
  model = model_lib.PointerGenerator(ModelConfig(V, E, H),
                                     dtype=precision.policy("mixed_bfloat16"))
  clone = model_lib.PointerGenerator.from_config(model.get_config())
  assert clone.dtype_policy.name == clone.cell.dtype_policy.name == "mixed_bfloat16"


# ---------------------------------------------------------------------------------------------
# Forward pass


def test_encoder_matches_numpy_bilstm(mode_model):
  batch = make_batch(mode_model.pointer_gen)
  states, features, mask, (c, h, context, coverage) = mode_model.encode(
      batch.enc_input, batch.enc_len)
  e_states, e_c, e_h = np_encoder(mode_model, batch.enc_input.numpy(), ENC_LEN)
  real = mask.numpy() == 1
  np.testing.assert_array_equal(real, np.arange(7)[None, :] < ENC_LEN[:, None])
  np.testing.assert_allclose(states.numpy()[real], e_states[real], atol=ATOL)
  np.testing.assert_allclose(c.numpy(), e_c, atol=ATOL)
  np.testing.assert_allclose(h.numpy(), e_h, atol=ATOL)
  # The random reduce-state biases make the ReLU active on some units and clip others.
  assert (e_c == 0).any() and (e_c > 0).any()
  np.testing.assert_array_equal(context.numpy(), np.zeros((3, 2 * H)))
  np.testing.assert_array_equal(coverage.numpy(), np.zeros((3, 7)))
  np.testing.assert_allclose(features.numpy()[real],
                             (states.numpy() @ _np(mode_model.cell.attention.memory_layer.kernel))
                             [real], atol=ATOL)


def test_forward_matches_numpy_unrolled_loop(mode_model):
  batch = make_batch(mode_model.pointer_gen)
  outputs = mode_model(batch)
  expected, _, _, _ = np_forward(mode_model, batch)
  assert [value is None for value in outputs] == [value is None for value in expected]
  assert outputs.vocab_logits.shape == (3, 6, V)
  np.testing.assert_allclose(outputs.vocab_logits.numpy(), expected.vocab_logits,
                             atol=ATOL, rtol=ATOL)
  np.testing.assert_allclose(outputs.attn.numpy(), expected.attn, atol=ATOL)
  if mode_model.pointer_gen:
    assert outputs.p_gen.shape == (3, 6)
    np.testing.assert_allclose(outputs.p_gen.numpy(), expected.p_gen, atol=ATOL)
  attn = outputs.attn.numpy()
  np.testing.assert_allclose(attn.sum(axis=2), np.ones((3, 6)), atol=ATOL)
  enc_mask = np.arange(7)[None, :] < ENC_LEN[:, None]
  assert np.all(attn.transpose(1, 0, 2)[:, ~enc_mask] == 0.0)


def test_forward_is_sensitive_to_coverage():
  """With coverage the attention of step t > 0 depends on w_c; at step 0 coverage is 0."""
  model = make_model(True, True, seed=11)
  batch = make_batch(True)
  before = model(batch).attn.numpy()
  w_c = model.cell.attention.w_c
  w_c.assign(w_c.numpy() * 3.0 + 0.5)
  after = model(batch).attn.numpy()
  np.testing.assert_allclose(before[:, 0], after[:, 0], atol=ATOL)
  assert np.abs(before[:, 1:] - after[:, 1:]).max() > 1e-3


# ---------------------------------------------------------------------------------------------
# Losses


@pytest.mark.parametrize("cov_loss_wt", [1.0, 0.7])
def test_losses_match_numpy(mode_model, cov_loss_wt):
  pointer_gen, coverage = mode_model.pointer_gen, mode_model.coverage
  batch = make_batch(pointer_gen)
  outputs = mode_model(batch)
  per_example = losses.compute_losses(outputs, batch, V, coverage)
  result = losses.batch_losses(per_example, pointer_gen, coverage, cov_loss_wt)
  expected = np_losses(outputs, batch, pointer_gen, coverage, cov_loss_wt)

  np.testing.assert_allclose(per_example.nll.numpy(), expected["per_example_nll"],
                             rtol=ATOL, atol=ATOL)
  np.testing.assert_allclose(float(result.loss), expected["loss"], rtol=ATOL, atol=ATOL)
  np.testing.assert_allclose(float(result.total_loss), expected["total_loss"], rtol=ATOL,
                             atol=ATOL)
  if coverage:
    np.testing.assert_allclose(per_example.coverage_loss.numpy(),
                               expected["per_example_cov"], rtol=ATOL, atol=ATOL)
    np.testing.assert_allclose(float(result.coverage_loss), expected["coverage_loss"],
                               rtol=ATOL, atol=ATOL)
    assert expected["coverage_loss"] > 1e-3
  else:
    assert result.coverage_loss is None


def test_baseline_loss_is_token_weighted_and_pointer_loss_example_weighted():
  """The two averages differ on this batch (dec_len 6, 3, 4), so each mode must pick its own."""
  for pointer_gen in (True, False):
    model = make_model(pointer_gen, False, seed=3)
    batch = make_batch(pointer_gen)
    outputs = model(batch)
    ex = np_losses(outputs, batch, pointer_gen, False, 1.0)
    target = batch.target.numpy()
    gold = np_gold_probs(outputs, target, batch.enc_input_ext.numpy(), pointer_gen)
    mask = np.arange(6)[None, :] < DEC_LEN[:, None]
    token_mean = -np.log(gold)[mask].mean()
    example_mean = ex["per_example_nll"].mean()
    assert abs(token_mean - example_mean) > 1e-4
    result = losses.batch_losses(losses.compute_losses(outputs, batch, V, False), pointer_gen,
                                 False, 1.0)
    want = example_mean if pointer_gen else token_mean
    np.testing.assert_allclose(float(result.loss), want, rtol=ATOL)


def test_gold_probs_of_each_target_kind():
  """Copied OOV: only the copy part; in-vocab word in the article: both parts; [UNK] not in
  the article and an in-vocab word not in the article: only the generation part."""
  model = make_model(True, False, seed=5)
  batch = make_batch(True)
  outputs = model(batch)
  gold = losses.gold_probs(outputs, batch.target, batch.enc_input_ext, V).numpy()
  probs = _softmax(_np(outputs.vocab_logits))
  p_gen, attn = _np(outputs.p_gen), _np(outputs.attn)
  # Row 0, step 0: target V+0 at article positions 1 and 3.
  np.testing.assert_allclose(gold[0, 0], (1 - p_gen[0, 0]) * attn[0, 0, [1, 3]].sum(), atol=ATOL)
  # Row 0, step 1: target 4 in vocab and at article positions 0 and 6.
  np.testing.assert_allclose(
      gold[0, 1], p_gen[0, 1] * probs[0, 1, 4] + (1 - p_gen[0, 1]) * attn[0, 1, [0, 6]].sum(),
      atol=ATOL)
  # Row 0, step 3: [UNK], not in the article's extended ids.
  np.testing.assert_allclose(gold[0, 3], p_gen[0, 3] * probs[0, 3, 0], atol=ATOL)
  # Row 2, step 0: 9, in vocab, not in that article (it is in row 1's).
  np.testing.assert_allclose(gold[2, 0], p_gen[2, 0] * probs[2, 0, 9], atol=ATOL)


def test_zero_probability_target_gives_finite_loss_and_gradients():
  """p_gen saturated at 1 and a copied-OOV target: P = 0 exactly; log(0) must be guarded."""
  logits = tf.Variable(np.random.default_rng(0).normal(size=(1, 2, V)).astype(np.float32))
  attn = tf.constant(np.array([[[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]]], np.float32))
  # The losses read the targets, the extended ids and the lengths only.
  batch = Batch(enc_input=None, enc_len=None,
                target=tf.constant([[V, 3]], tf.int32),
                enc_input_ext=tf.constant([[V, 4, 1]], tf.int32),
                dec_len=tf.constant([2], tf.int32))
  with tf.GradientTape() as tape:
    outputs = model_lib.Outputs(attn=attn, vocab_logits=logits, p_gen=tf.ones([1, 2]))
    per_example = losses.compute_losses(outputs, batch, V, True)
    result = losses.batch_losses(per_example, True, True, 1.0)
  grad = tape.gradient(result.total_loss, logits)
  assert np.isfinite(float(result.total_loss))
  assert np.all(np.isfinite(grad.numpy()))
  probs = _softmax(_np(logits.numpy()))
  want = (-np.log(PROB_FLOOR) - np.log(probs[0, 1, 3])) / 2
  np.testing.assert_allclose(float(result.loss), want, rtol=1e-4)


def test_gold_probs_equals_scattered_form(mode_model):
  batch = make_batch(mode_model.pointer_gen)
  outputs = mode_model(batch)
  gathered = losses.gold_probs(outputs, batch.target, batch.enc_input_ext, V).numpy()
  scattered = reference.gold_probs_scattered(outputs, batch.target, batch.enc_input_ext,
                                          MAX_OOVS).numpy()
  mask = np.arange(6)[None, :] < DEC_LEN[:, None]
  np.testing.assert_allclose(gathered, scattered, atol=1e-6)
  expected = np_gold_probs(outputs, batch.target.numpy(), batch.enc_input_ext.numpy(),
                           mode_model.pointer_gen)
  np.testing.assert_allclose(gathered[mask], expected[mask], atol=ATOL)


def _loss_and_grads(model, batch, gold_fn, monkeypatch):
  with monkeypatch.context() as m:
    m.setattr(losses, "gold_probs", gold_fn)
    with tf.GradientTape() as tape:
      outputs = model(batch)
      per_example = losses.compute_losses(outputs, batch, V, model.coverage)
      loss = losses.batch_losses(per_example, model.pointer_gen, model.coverage, 0.7)
  grads = tape.gradient(loss.total_loss, model.trainable_variables)
  return float(loss.total_loss), grads


def test_gradients_equal_for_gathered_and_scattered_forms(mode_model, monkeypatch):
  batch = make_batch(mode_model.pointer_gen)
  gathered = losses.gold_probs

  def scattered(outputs, target, enc_input_ext, vocab_size):
    assert vocab_size == V
    return reference.gold_probs_scattered(outputs, target, enc_input_ext, MAX_OOVS)

  loss_a, grads_a = _loss_and_grads(mode_model, batch, gathered, monkeypatch)
  loss_b, grads_b = _loss_and_grads(mode_model, batch, scattered, monkeypatch)
  np.testing.assert_allclose(loss_a, loss_b, rtol=1e-6)
  for var, ga, gb in zip(mode_model.trainable_variables, grads_a, grads_b):
    assert ga is not None and gb is not None, var.path
    ga, gb = tf.convert_to_tensor(ga).numpy(), tf.convert_to_tensor(gb).numpy()
    np.testing.assert_allclose(ga, gb, atol=1e-5, rtol=1e-4, err_msg=var.path)
  assert max(np.abs(tf.convert_to_tensor(g).numpy()).max() for g in grads_a) > 1e-3


# ---------------------------------------------------------------------------------------------
# Masking invariance


@pytest.mark.parametrize("row", [1, 2])
def test_padding_does_not_change_an_examples_loss(mode_model, row):
  pointer_gen, coverage = mode_model.pointer_gen, mode_model.coverage
  alone = make_batch(pointer_gen, rows=[row])
  padded = make_batch(pointer_gen)  # padded to L = 7 and T = 6 beside longer examples
  assert alone.enc_input.shape[1] < padded.enc_input.shape[1]
  assert alone.dec_input.shape[1] < padded.dec_input.shape[1]
  out_alone = mode_model(alone)
  out_padded = mode_model(padded)
  loss_alone = losses.compute_losses(out_alone, alone, V, coverage)
  loss_padded = losses.compute_losses(out_padded, padded, V, coverage)
  np.testing.assert_allclose(loss_padded.nll.numpy()[row], loss_alone.nll.numpy()[0],
                             rtol=ATOL, atol=ATOL)
  if coverage:
    np.testing.assert_allclose(loss_padded.coverage_loss.numpy()[row],
                               loss_alone.coverage_loss.numpy()[0], rtol=ATOL, atol=ATOL)
  steps, length = int(DEC_LEN[row]), int(ENC_LEN[row])
  np.testing.assert_allclose(out_padded.vocab_logits.numpy()[row, :steps],
                             out_alone.vocab_logits.numpy()[0, :steps], atol=ATOL, rtol=ATOL)
  np.testing.assert_allclose(out_padded.attn.numpy()[row, :steps, :length],
                             out_alone.attn.numpy()[0, :steps, :length], atol=ATOL)
  # The batch-level loss of the single example is its per-example loss.
  single = losses.batch_losses(loss_alone, pointer_gen, coverage, 1.0)
  np.testing.assert_allclose(float(single.loss), loss_alone.nll.numpy()[0], rtol=ATOL)


def test_padding_a_lone_example_further_does_not_change_its_loss():
  """The same example with extra [PAD] columns on both sides (same batch of one)."""
  model = make_model(True, True, seed=9)
  short = make_batch(True, rows=[1])
  wide = short._replace(
      enc_input=tf.pad(short.enc_input, [[0, 0], [0, 4]], constant_values=1),
      enc_input_ext=tf.pad(short.enc_input_ext, [[0, 0], [0, 4]], constant_values=1),
      dec_input=tf.pad(short.dec_input, [[0, 0], [0, 5]], constant_values=1),
      target=tf.pad(short.target, [[0, 0], [0, 5]], constant_values=1))
  a = losses.compute_losses(model(short), short, V, True)
  b = losses.compute_losses(model(wide), wide, V, True)
  np.testing.assert_allclose(b.nll.numpy(), a.nll.numpy(), rtol=ATOL, atol=ATOL)
  np.testing.assert_allclose(b.coverage_loss.numpy(), a.coverage_loss.numpy(), rtol=ATOL,
                             atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Optimisations against the plain formulation


def test_softmax_at_matches_the_automatic_gradient_of_gather_after_softmax():
  rng = np.random.default_rng(4)
  logits = tf.constant(rng.normal(scale=3.0, size=(5, 9)), tf.float32)
  ids = tf.constant([0, 8, 3, 3, 5], tf.int32)
  weights = tf.constant(rng.normal(size=5), tf.float32)

  def value_and_gradient(fn):
    with tf.GradientTape() as tape:
      tape.watch(logits)
      picked = fn(logits, ids)
      loss = tf.reduce_sum(tf.math.log(picked) * weights)
    return picked.numpy(), tape.gradient(loss, logits).numpy()

  fast, fast_grad = value_and_gradient(losses.softmax_at)
  plain, plain_grad = value_and_gradient(
      lambda x, i: tf.gather(tf.nn.softmax(x), i, batch_dims=1))
  expected = np_softmax(np64(logits.numpy()))[np.arange(5), ids.numpy()]
  np.testing.assert_allclose(fast, expected, rtol=1e-5)
  np.testing.assert_allclose(plain, expected, rtol=1e-5)
  assert np.abs(plain_grad).max() > 0.1
  np.testing.assert_allclose(fast_grad, plain_grad, atol=1e-6)


@pytest.mark.parametrize("pointer_gen,coverage", MODES, ids=MODE_IDS)
def test_projecting_only_real_steps_gives_the_plain_loss_and_gradients(pointer_gen, coverage):
  model = make_model(pointer_gen, coverage, seed=5)
  batch = make_batch(pointer_gen)
  assert len(set(batch.dec_len.numpy())) > 1  # some examples have padding steps

  def loss_and_grads(real_steps_only):
    with tf.GradientTape() as tape:
      outputs = model(batch, real_steps_only=real_steps_only)
      per_example = losses.compute_losses(outputs, batch, V, coverage)
      loss = losses.batch_losses(per_example, pointer_gen, coverage, 1.0).total_loss
    return loss, tape.gradient(loss, model.trainable_variables)

  plain_loss, plain_grads = loss_and_grads(False)
  loss, grads = loss_and_grads(True)
  np.testing.assert_allclose(loss.numpy(), plain_loss.numpy(), rtol=1e-6)
  for plain, fast in zip(plain_grads, grads):
    np.testing.assert_allclose(tf.convert_to_tensor(fast).numpy(),
                               tf.convert_to_tensor(plain).numpy(), atol=1e-6)


def _plain_total_loss(model, batch, cov_loss_wt):
  """The model's total loss written the plain way, each article alone with Python loops and
  TensorFlow's automatic gradients only: textbook LSTMs, the attention and context as written
  in the paper, the full final distribution over V + N, the coverage loss step by step."""
  w = lambda layer, name: tf.convert_to_tensor(getattr(layer, name))
  dense = lambda layer, x: x @ w(layer, "kernel") + w(layer, "bias")
  embedding = w(model.embedding, "embeddings")
  cell, att = model.cell, model.cell.attention

  def lstm(lstm_cell, x, h, c):
    z = x @ w(lstm_cell, "kernel") + h @ w(lstm_cell, "recurrent_kernel") + w(lstm_cell, "bias")
    i, f, g, o = tf.split(z, 4, axis=1)
    c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
    return tf.sigmoid(o) * tf.tanh(c), c

  losses_nll, losses_cov, tokens_nll, tokens = [], [], [], 0
  for b in range(batch.enc_input.shape[0]):
    n, steps = int(batch.enc_len[b]), int(batch.dec_len[b])
    words = tf.gather(embedding, batch.enc_input[b, :n])  # [n, E]
    finals, directions = [], []
    for lstm_cell, order in ((model.encoder.fw_cell, range(n)),
                             (model.encoder.bw_cell, reversed(range(n)))):
      h = c = tf.zeros([1, H])
      outputs = {}
      for i in order:
        h, c = lstm(lstm_cell, words[i:i + 1], h, c)
        outputs[i] = h[0]
      finals.append((h, c))
      directions.append(tf.stack([outputs[i] for i in range(n)]))
    states = tf.concat(directions, axis=1)  # [n, 2H]
    (fw_h, fw_c), (bw_h, bw_c) = finals
    rs = model.reduce_state
    c = tf.nn.relu(tf.concat([fw_c, bw_c], 1) @ w(rs, "w_reduce_c") + w(rs, "bias_reduce_c"))
    h = tf.nn.relu(tf.concat([fw_h, bw_h], 1) @ w(rs, "w_reduce_h") + w(rs, "bias_reduce_h"))
    features = states @ w(att.memory_layer, "kernel")  # [n, 2H]
    context, coverage = tf.zeros([1, 2 * H]), tf.zeros([n])
    ext = batch.enc_input_ext[b, :n]
    nll, cov_loss = [], []
    for t in range(steps):
      x = dense(cell.input_projection, tf.concat(
          [tf.gather(embedding, batch.dec_input[b, t:t + 1]), context], axis=1))
      h, c = lstm(cell.lstm_cell, x, h, c)
      pre = features + dense(att.query_layer, tf.concat([c, h], axis=1))
      if model.coverage:
        pre += coverage[:, None] * w(att, "w_c")
      attn = tf.nn.softmax(tf.reduce_sum(tf.tanh(pre) * w(att, "v"), axis=1))  # [n]
      context = tf.reduce_sum(attn[:, None] * states, axis=0, keepdims=True)
      probs = tf.nn.softmax(dense(cell.vocab_projection, dense(
          cell.output_hidden, tf.concat([h, context], axis=1))))[0]  # [V]
      gold = int(batch.target[b, t])
      if model.pointer_gen:
        p_gen = tf.sigmoid(dense(cell.p_gen_layer, tf.concat([context, c, h, x], axis=1)))[0, 0]
        dist = (p_gen * tf.concat([probs, tf.zeros([MAX_OOVS])], 0)
                + (1.0 - p_gen) * tf.reduce_sum(
                    attn[:, None] * tf.one_hot(ext, V + MAX_OOVS), axis=0))
      else:
        dist = probs
      nll.append(-tf.math.log(tf.maximum(dist[gold], PROB_FLOOR)))
      cov_loss.append(tf.reduce_sum(tf.minimum(attn, coverage)))
      coverage += attn
    losses_nll.append(tf.add_n(nll) / steps)
    tokens_nll.append(tf.add_n(nll))
    tokens += steps
    losses_cov.append(tf.add_n(cov_loss) / steps)
  loss = (tf.add_n(losses_nll) / len(losses_nll) if model.pointer_gen
          else tf.add_n(tokens_nll) / tokens)
  if model.coverage:
    loss += cov_loss_wt * tf.add_n(losses_cov) / len(losses_cov)
  return loss


@pytest.mark.parametrize("pointer_gen,coverage", MODES, ids=MODE_IDS)
def test_training_gradients_equal_the_plain_formulation(pointer_gen, coverage):
  """The training step's loss and every gradient (hand-written gradients, sums moved out of
  the loops, the projection of real steps only, the gathered loss) against the automatic
  gradient of the plain formulation, on a batch with padding on both sides."""
  model = make_model(pointer_gen, coverage, seed=11)
  batch = make_batch(pointer_gen)

  def loss_and_grads(compute):
    with tf.GradientTape() as tape:
      loss = compute()
    return loss, [tf.convert_to_tensor(g).numpy()
                  for g in tape.gradient(loss, model.trainable_variables)]

  def optimised():
    outputs = model(batch, real_steps_only=True)
    per_example = losses.compute_losses(outputs, batch, V, coverage)
    return losses.batch_losses(per_example, pointer_gen, coverage, 0.7).total_loss

  loss, grads = loss_and_grads(optimised)
  plain_loss, plain_grads = loss_and_grads(lambda: _plain_total_loss(model, batch, 0.7))
  np.testing.assert_allclose(loss.numpy(), plain_loss.numpy(), rtol=1e-5)
  for var, ours, plain in zip(model.trainable_variables, grads, plain_grads):
    if not coverage and var.path.endswith("w_c"):
      continue
    scale = np.abs(plain).max()
    assert scale > 1e-6, var.path
    np.testing.assert_allclose(ours, plain, rtol=1e-4, atol=1e-4 * scale, err_msg=var.path)
