"""The decoder-side layers against numpy re-implementations of the paper's equations.

Every weight is overwritten with random values of order 1 (the default initialisers are tiny and
would hide mistakes), and padding is placed so that masking matters.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.model import layers
from pointer_gen.model.model_config import ModelConfig

from helpers import np64, np_sigmoid, np_softmax

B, L, V, E, H = 3, 7, 11, 5, 4
ENC_LEN = np.array([7, 4, 2])
ATOL = 1e-5


def _randomize(layer, rng, scale=0.6):
  for var in layer.weights:
    var.assign(rng.uniform(-scale, scale, var.shape).astype(np.float32))


def _mask(enc_len=ENC_LEN, length=L):
  return (np.arange(length)[None, :] < np.asarray(enc_len)[:, None]).astype(np.float32)


_np, _sigmoid, _softmax = np64, np_sigmoid, np_softmax


def np_lstm_step(x, h, c, kernel, recurrent_kernel, bias):
  """Keras LSTMCell: gates i, f, c, o packed in that order; h = o * tanh(c)."""
  z = x @ _np(kernel) + h @ _np(recurrent_kernel) + _np(bias)
  n = h.shape[-1]
  i, f, g, o = (z[:, k * n:(k + 1) * n] for k in range(4))
  c_new = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
  h_new = _sigmoid(o) * np.tanh(c_new)
  return h_new, c_new


def np_attention(att, query, states, mask, coverage, use_coverage):
  """e_i = v.tanh(W_h h_i + W_s q + b + w_c cov_i); softmax, * mask, renormalise; context."""
  w_h = _np(att.memory_layer.kernel)
  w_s, b_s = _np(att.query_layer.kernel), _np(att.query_layer.bias)
  v = _np(att.v)
  feats = states @ w_h + (query @ w_s + b_s)[:, None, :]
  if use_coverage:
    feats = feats + coverage[:, :, None] * _np(att.w_c)[0][None, None, :]
  scores = np.tanh(feats) @ v  # [B, L]
  a = _softmax(scores, axis=1) * mask
  a = a / a.sum(axis=1, keepdims=True)
  context = np.einsum("bl,bld->bd", a, states)
  return context, a


def np_cell_step(cell, emb, state, states, mask):
  """One decoder step of the paper's equations from the cell's weights. Returns outputs and
  new state."""
  c, h, context, coverage = state
  w_in, b_in = _np(cell.input_projection.kernel), _np(cell.input_projection.bias)
  x = np.concatenate([emb, context], axis=1) @ w_in + b_in
  lstm = cell.lstm_cell
  h, c = np_lstm_step(x, h, c, lstm.kernel, lstm.recurrent_kernel, lstm.bias)
  new_context, attn = np_attention(cell.attention, np.concatenate([c, h], axis=1), states, mask,
                                   coverage, cell.coverage)
  p_gen = None
  if cell.pointer_gen:
    w_p, b_p = _np(cell.p_gen_layer.kernel), _np(cell.p_gen_layer.bias)
    p_gen = _sigmoid(np.concatenate([new_context, c, h, x], axis=1) @ w_p + b_p)[:, 0]
  return (h, new_context, attn, p_gen), (c, h, new_context, coverage + attn)


def np_vocab_logits(cell, outputs, contexts):
  hidden = (np.concatenate([outputs, contexts], axis=-1) @ _np(cell.output_hidden.kernel)
            + _np(cell.output_hidden.bias))
  return hidden @ _np(cell.vocab_projection.kernel) + _np(cell.vocab_projection.bias)


def np_final_distribution(vocab_probs, attn, p_gen, enc_input_ext, max_oovs):
  batch, vocab = vocab_probs.shape
  dist = np.zeros((batch, vocab + max_oovs))
  dist[:, :vocab] = p_gen[:, None] * vocab_probs
  for b in range(batch):
    for i in range(attn.shape[1]):
      dist[b, enc_input_ext[b, i]] += (1.0 - p_gen[b]) * attn[b, i]
  return dist


def _make_cell(rng, pointer_gen=True, coverage=True):
  cell = layers.PointerGeneratorCell(ModelConfig(V, E, H, pointer_gen=pointer_gen,
                                                 coverage=coverage))
  cell.build()
  _randomize(cell, rng)
  return cell


def _f32(x):
  return tf.constant(np.asarray(x, np.float32))


def _random_state(rng, pad_coverage=True):
  c = rng.normal(size=(B, H))
  h = np.tanh(rng.normal(size=(B, H)))
  context = rng.normal(size=(B, 2 * H))
  coverage = rng.uniform(0.0, 2.0, (B, L)) * _mask()
  return tuple(np.asarray(a, np.float32).astype(np.float64) for a in (c, h, context, coverage))


# ---------------------------------------------------------------------------------------------
# Attention


@pytest.mark.parametrize("use_coverage", [True, False])
def test_attention_matches_numpy(use_coverage):
  """The layer with the reference implementation (attention.Eager), against the paper's
  equations in numpy; the fast implementations are held to the reference by
  test_attention_implementations."""
  rng = np.random.default_rng(0)
  att = layers.BahdanauCoverageAttention(2 * H, use_coverage=use_coverage)
  att.build()
  _randomize(att, rng, scale=0.8)
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  query = rng.normal(size=(B, 2 * H)).astype(np.float32)
  coverage = (rng.uniform(0.0, 3.0, (B, L)) * _mask()).astype(np.float32)
  mask = _mask()

  features = att.memory_features(_f32(states))
  np.testing.assert_allclose(features.numpy(), _np(states) @ _np(att.memory_layer.kernel),
                             atol=ATOL)
  memory = attention.Memory(_f32(states), features, _f32(mask))
  context, attn = att(_f32(query), memory, _f32(coverage),
                      implementation=attention.get("eager"))
  exp_context, exp_attn = np_attention(att, _np(query), _np(states), mask, _np(coverage),
                                       use_coverage)
  np.testing.assert_allclose(attn.numpy(), exp_attn, atol=ATOL)
  np.testing.assert_allclose(context.numpy(), exp_context, atol=ATOL)
  # A distribution over the real positions only.
  np.testing.assert_allclose(attn.numpy().sum(axis=1), np.ones(B), atol=ATOL)
  assert np.all(attn.numpy()[mask == 0] == 0.0)
  assert np.all(attn.numpy()[mask == 1] > 0.0)


def test_attention_coverage_term_matters_and_is_ignored_without_coverage():
  rng = np.random.default_rng(1)
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  query = rng.normal(size=(B, 2 * H)).astype(np.float32)
  cov_a = (rng.uniform(0.0, 3.0, (B, L)) * _mask()).astype(np.float32)
  cov_b = np.zeros_like(cov_a)
  mask = _f32(_mask())
  for use_coverage in (True, False):
    att = layers.BahdanauCoverageAttention(2 * H, use_coverage=use_coverage)
    att.build()
    _randomize(att, rng, scale=0.8)
    feats = att.memory_features(_f32(states))
    memory = attention.Memory(_f32(states), feats, mask)
    _, a1 = att(_f32(query), memory, _f32(cov_a))
    _, a2 = att(_f32(query), memory, _f32(cov_b))
    if use_coverage:
      assert np.abs(a1.numpy() - a2.numpy()).max() > 1e-3
    else:
      np.testing.assert_array_equal(a1.numpy(), a2.numpy())
  assert "w_c" not in [w.name for w in att.weights]


def test_attention_ignores_padded_encoder_states():
  rng = np.random.default_rng(2)
  att = layers.BahdanauCoverageAttention(2 * H, use_coverage=True)
  att.build()
  _randomize(att, rng, scale=0.8)
  mask = _mask()
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  other = states.copy()
  other[mask == 0] = rng.normal(size=(int((mask == 0).sum()), 2 * H)) * 5.0
  query = _f32(rng.normal(size=(B, 2 * H)))
  cov = _f32(rng.uniform(0.0, 1.0, (B, L)) * mask)
  memory_of = lambda s: attention.Memory(_f32(s), att.memory_features(_f32(s)), _f32(mask))
  c1, a1 = att(query, memory_of(states), cov)
  c2, a2 = att(query, memory_of(other), cov)
  np.testing.assert_allclose(a1.numpy(), a2.numpy(), atol=ATOL)
  np.testing.assert_allclose(c1.numpy(), c2.numpy(), atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Decoder cell


@pytest.mark.parametrize("pointer_gen,coverage", [(True, True), (True, False), (False, False)])
def test_cell_step_matches_numpy(pointer_gen, coverage):
  rng = np.random.default_rng(3)
  cell = _make_cell(rng, pointer_gen, coverage)
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  emb = rng.normal(size=(B, E)).astype(np.float32)
  state = _random_state(rng)
  mask = _mask()

  features = cell.attention.memory_features(_f32(states))
  (h, context, attn, p_gen), new_state = cell(
      _f32(emb), tuple(_f32(s) for s in state),
      attention.Memory(_f32(states), features, _f32(mask)))
  (e_h, e_context, e_attn, e_p_gen), e_state = np_cell_step(
      cell, _np(emb), state, _np(states), mask)

  np.testing.assert_allclose(h.numpy(), e_h, atol=ATOL)
  np.testing.assert_allclose(context.numpy(), e_context, atol=ATOL)
  np.testing.assert_allclose(attn.numpy(), e_attn, atol=ATOL)
  np.testing.assert_allclose(attn.numpy().sum(axis=1), np.ones(B), atol=ATOL)
  assert np.all(attn.numpy()[mask == 0] == 0.0)
  if pointer_gen:
    assert p_gen.shape == (B,)
    np.testing.assert_allclose(p_gen.numpy(), e_p_gen, atol=ATOL)
  else:
    assert p_gen is None
  c_new, h_new, ctx_new, cov_new = (s.numpy() for s in new_state)
  np.testing.assert_allclose(c_new, e_state[0], atol=ATOL)
  np.testing.assert_allclose(h_new, e_state[1], atol=ATOL)
  np.testing.assert_allclose(ctx_new, e_state[2], atol=ATOL)
  if coverage:
    np.testing.assert_allclose(cov_new, e_state[3], atol=ATOL)

  # The output projection: W'(W[h; context] + b) + b', on [B, H] and on [B, T, H] alike.
  logits = cell.vocab_logits(h, context)
  np.testing.assert_allclose(logits.numpy(), np_vocab_logits(cell, e_h, e_context), atol=ATOL)
  outs = rng.normal(size=(B, 2, H)).astype(np.float32)
  ctxs = rng.normal(size=(B, 2, 2 * H)).astype(np.float32)
  np.testing.assert_allclose(cell.vocab_logits(_f32(outs), _f32(ctxs)).numpy(),
                             np_vocab_logits(cell, _np(outs), _np(ctxs)), atol=ATOL)


def test_cell_p_gen_uses_new_state_and_input_fed_x():
  """p_gen must see c and h of the new state and x_t, not the old state or the raw embedding:
  perturbing the p_gen weight rows of each block must change p_gen as numpy predicts."""
  rng = np.random.default_rng(4)
  cell = _make_cell(rng, True, True)
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  emb = rng.normal(size=(B, E)).astype(np.float32)
  state = _random_state(rng)
  mask = _mask()
  features = cell.attention.memory_features(_f32(states))
  kernel = cell.p_gen_layer.kernel
  base = kernel.numpy()
  # Blocks of [context; c; h; x]: 2H, H, H, E rows.
  for start, size in [(0, 2 * H), (2 * H, H), (3 * H, H), (4 * H, E)]:
    k = base.copy()
    k[:start] = 0.0
    k[start + size:] = 0.0
    kernel.assign(k)
    (_, _, _, p_gen), _ = cell(_f32(emb), tuple(_f32(s) for s in state),
                                attention.Memory(_f32(states), features, _f32(mask)))
    (_, _, _, e_p_gen), _ = np_cell_step(cell, _np(emb), state, _np(states), mask)
    np.testing.assert_allclose(p_gen.numpy(), e_p_gen, atol=ATOL)
  kernel.assign(base)


def test_cell_serialises_under_its_keras_name_and_rebuilds_an_equal_cell():
  """Keras's serialisation (from_config of get_config, through JSON) gives a cell of the same
  configuration, whose step gives the same outputs once the weights are copied."""
  rng = np.random.default_rng(5)
  cell = _make_cell(rng)
  saved = json.loads(json.dumps(keras.saving.serialize_keras_object(cell)))
  assert saved["registered_name"] == "pointer_gen>PointerGeneratorCell"
  assert (keras.saving.get_registered_name(layers.BahdanauCoverageAttention)
          == "pointer_gen>BahdanauCoverageAttention")
  clone = keras.saving.deserialize_keras_object(saved)
  assert type(clone) is layers.PointerGeneratorCell and clone.config == cell.config
  # Built by the deserialisation, from the build config that Keras saves beside the config.
  assert [v.path for v in clone.weights] == [v.path for v in cell.weights]
  for copy, weight in zip(clone.weights, cell.weights):
    copy.assign(weight)
  states = _f32(rng.normal(size=(B, L, 2 * H)))
  step = (_f32(rng.normal(size=(B, E))), tuple(_f32(s) for s in _random_state(rng)))
  expected, outputs = (
      layer(*step, attention.Memory(states, layer.attention.memory_features(states),
                                    _f32(_mask())))
      for layer in (cell, clone))
  for want, got in zip(tf.nest.flatten(expected), tf.nest.flatten(outputs)):
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_cell_parameter_shapes():
  cell = layers.PointerGeneratorCell(ModelConfig(V, E, H, pointer_gen=True, coverage=True))
  cell.build()
  assert tuple(cell.input_projection.kernel.shape) == (E + 2 * H, E)
  assert tuple(cell.lstm_cell.kernel.shape) == (E, 4 * H)
  assert tuple(cell.p_gen_layer.kernel.shape) == (4 * H + E, 1)
  assert tuple(cell.attention.memory_layer.kernel.shape) == (2 * H, 2 * H)
  assert cell.attention.memory_layer.bias is None
  assert tuple(cell.attention.query_layer.kernel.shape) == (2 * H, 2 * H)
  assert tuple(cell.attention.w_c.shape) == (1, 2 * H)
  assert tuple(cell.output_hidden.kernel.shape) == (3 * H, H)
  assert tuple(cell.vocab_projection.kernel.shape) == (H, V)


# ---------------------------------------------------------------------------------------------
# Final distribution


def test_final_distribution_matches_numpy_with_repeated_words():
  rng = np.random.default_rng(5)
  max_oovs = 3
  vocab_probs = _softmax(rng.normal(size=(B, V)) * 2.0)
  # Row 0: OOV V+0 three times, in-vocab 5 twice; row 1: in-vocab 4 repeated, OOV V+1 twice
  # and padding (PAD=1) after length 4; row 2: no OOVs, length 2.
  enc_ext = np.array([
      [V + 0, 5, V + 0, 7, 5, V + 0, V + 2],
      [4, V + 1, 4, V + 1, 1, 1, 1],
      [9, 9, 1, 1, 1, 1, 1],
  ], np.int32)
  attn = rng.uniform(0.1, 1.0, (B, L)) * _mask()
  attn /= attn.sum(axis=1, keepdims=True)
  p_gen = np.array([0.3, 0.55, 0.8])
  vocab_probs, attn, p_gen = (np.asarray(a, np.float32) for a in (vocab_probs, attn, p_gen))

  dist = layers.final_distribution(_f32(vocab_probs), _f32(attn), _f32(p_gen),
                                   tf.constant(enc_ext), max_oovs).numpy()
  expected = np_final_distribution(_np(vocab_probs), _np(attn), _np(p_gen), enc_ext, max_oovs)
  assert dist.shape == (B, V + max_oovs)
  np.testing.assert_allclose(dist, expected, atol=ATOL)
  np.testing.assert_allclose(dist.sum(axis=1), np.ones(B), atol=ATOL)
  # Duplicates sum: the OOV at three positions gets all three attention weights.
  np.testing.assert_allclose(dist[0, V], (1 - p_gen[0]) * attn[0, [0, 2, 5]].sum(), atol=ATOL)
  np.testing.assert_allclose(
      dist[0, 5], p_gen[0] * vocab_probs[0, 5] + (1 - p_gen[0]) * attn[0, [1, 4]].sum(),
      atol=ATOL)
  # An extended slot no article word uses stays at zero.
  assert dist[0, V + 1] == 0.0 and dist[2, V:].max() == 0.0
  # Padding positions (attention 0) add nothing to PAD's probability.
  np.testing.assert_allclose(dist[1, 1], p_gen[1] * vocab_probs[1, 1], atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Initial attention (decode only)


@pytest.mark.parametrize("coverage", [True, False])
def test_initial_attention(coverage):
  rng = np.random.default_rng(6)
  cell = _make_cell(rng, True, coverage)
  states = rng.normal(size=(B, L, 2 * H)).astype(np.float32)
  state = _random_state(rng)
  mask = _mask()
  features = cell.attention.memory_features(_f32(states))
  c, h, context, cov = cell.initial_attention(
      tuple(_f32(s) for s in state),
      attention.Memory(_f32(states), features, _f32(mask)))
  e_context, e_attn = np_attention(cell.attention, np.concatenate([state[0], state[1]], axis=1),
                                   _np(states), mask, state[3], coverage)
  np.testing.assert_allclose(c.numpy(), state[0], atol=ATOL)
  np.testing.assert_allclose(h.numpy(), state[1], atol=ATOL)
  np.testing.assert_allclose(context.numpy(), e_context, atol=ATOL)
  # The incoming context is replaced, not used.
  assert np.abs(context.numpy() - state[2]).max() > 1e-2
  if coverage:
    np.testing.assert_allclose(cov.numpy(), state[3] + e_attn, atol=ATOL)
  else:
    np.testing.assert_allclose(cov.numpy(), state[3], atol=ATOL)


def _plain_direction(cell, inputs, lengths):
  """The textbook LSTM over each article alone, to its own length: outputs [B, L, H] (zeros
  past the end) and the final (h, c)."""
  kernel, recurrent, bias = (tf.convert_to_tensor(w) for w in
                             (cell.kernel, cell.recurrent_kernel, cell.bias))
  outputs, finals = [], []
  for b, n in enumerate(lengths):
    h = c = tf.zeros([1, H])
    steps = []
    for t in range(n):
      z = inputs[b:b + 1, t] @ kernel + h @ recurrent + bias
      i, f, g, o = tf.split(z, 4, axis=1)
      c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
      h = tf.sigmoid(o) * tf.tanh(c)
      steps.append(h[0])
    steps += [tf.zeros([H])] * (inputs.shape[1] - n)
    outputs.append(tf.stack(steps))
    finals.append((h[0], c[0]))
  return tf.stack(outputs), tuple(tf.stack(f) for f in zip(*finals))


def test_encoder_gradients_equal_the_plain_recurrence():
  """The encoder's loops (input projections before the loop, the recurrent kernel's gradient
  summed after it) against the automatic gradient of a textbook LSTM run on each article."""
  rng = np.random.default_rng(8)
  encoder = layers.Encoder(H)
  encoder.build((None, None, E))
  _randomize(encoder, rng)
  inputs = tf.constant(rng.normal(size=(B, L, E)).astype(np.float32))
  mask = tf.constant(_mask() > 0)
  d_states = tf.constant(rng.normal(size=(B, L, 2 * H)).astype(np.float32))
  d_final = [tf.constant(rng.normal(size=(B, H)).astype(np.float32)) for _ in range(4)]

  def loss_and_gradients(run):
    with tf.GradientTape() as tape:
      tape.watch(inputs)
      states, fw, bw = run()
      loss = tf.reduce_sum(states * d_states) + sum(
          tf.reduce_sum(s * d) for s, d in zip(fw + bw, d_final))
    return loss, tape.gradient(loss, [inputs] + encoder.trainable_variables)

  def plain():
    fw_out, fw = _plain_direction(encoder.fw_cell, inputs, ENC_LEN)
    backward = tf.reverse_sequence(inputs, ENC_LEN, seq_axis=1, batch_axis=0)
    bw_out, bw = _plain_direction(encoder.bw_cell, backward, ENC_LEN)
    bw_out = tf.reverse_sequence(bw_out, ENC_LEN, seq_axis=1, batch_axis=0)
    return tf.concat([fw_out, bw_out], axis=2), fw, bw

  loss, grads = loss_and_gradients(lambda: encoder(inputs, mask))
  plain_loss, plain_grads = loss_and_gradients(plain)
  np.testing.assert_allclose(loss.numpy(), plain_loss.numpy(), rtol=1e-5)
  assert len(grads) == 7  # inputs; kernel, recurrent kernel and bias of each direction
  for ours, expected in zip(grads, plain_grads):
    assert np.abs(expected.numpy()).max() > 1e-2
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
