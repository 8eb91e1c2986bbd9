"""The hand-written gradients and XLA kernels of `kernels` against the plain formulas they
stand for: TensorFlow's automatic gradient of the same expression, under a loss whose upstream
gradient differs at every position."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import kernels

from helpers import np64 as _np

B, L, H = 3, 7, 4


@pytest.mark.parametrize("use_coverage", [True, False])
@pytest.mark.parametrize("compiled", [False, True])
def test_attention_scores_gradient_equals_the_plain_formulas(use_coverage, compiled):
  """The hand-written backward pass (with TensorFlow's ops or XLA kernels) against
  TensorFlow's automatic gradient of the plain formula sum(v * tanh(W_h h + W_s s + b + w_c
  cov)), under a loss whose upstream gradient differs at every position."""
  rng = np.random.default_rng(11)
  units = 6
  inputs = {"memory_features": rng.normal(size=(B, L, units)),
            "query_features": rng.normal(size=(B, units)),
            "v": rng.normal(size=(units,)),
            "coverage": rng.uniform(0.0, 3.0, (B, L)),
            "w_c": rng.normal(size=(1, units))}
  if not use_coverage:
    del inputs["coverage"], inputs["w_c"]
  inputs = {k: tf.constant(x, tf.float32) for k, x in inputs.items()}
  weights = tf.constant(rng.normal(size=(B, L)), tf.float32)

  def plain(memory_features, query_features, v, coverage=None, w_c=None):
    features = memory_features + query_features[:, None, :]
    if coverage is not None:
      features += coverage[:, :, None] * w_c
    return tf.reduce_sum(v * tf.tanh(features), axis=2)

  def scores_and_gradients(fn):
    with tf.GradientTape() as tape:
      tape.watch(list(inputs.values()))
      scores = fn(**inputs)
      loss = tf.reduce_sum(tf.sin(scores) * weights)
    return scores.numpy(), tape.gradient(loss, inputs)

  fast, fast_grads = scores_and_gradients(
      lambda **kwargs: kernels.attention_scores(**kwargs, compiled=compiled))
  expected, expected_grads = scores_and_gradients(plain)
  np.testing.assert_allclose(fast, expected, atol=1e-5)
  for name, grad in expected_grads.items():
    assert np.abs(grad.numpy()).max() > 1e-2, name
    np.testing.assert_allclose(fast_grads[name].numpy(), grad.numpy(), atol=1e-5, err_msg=name)


@pytest.mark.parametrize("use_coverage", [False, True])
# 6 units: one pass of the kernel's loop; 24: three of 8; 20: four of 5.
@pytest.mark.parametrize("units", [6, 24, 20])
def test_compiled_attention_scores_equal_the_ops(use_coverage, units):
  """The XLA kernel decode uses gives attention_scores' values (to float32 rounding)."""
  rng = np.random.default_rng(3)
  features = tf.constant(rng.normal(size=(B, L, units)).astype(np.float32))
  query = tf.constant(rng.normal(size=(B, units)).astype(np.float32))
  v = tf.constant(rng.normal(size=units).astype(np.float32))
  extra = ((tf.constant(rng.uniform(0, 2, size=(B, L)).astype(np.float32)),
            tf.constant(rng.normal(size=(1, units)).astype(np.float32))) if use_coverage else ())
  expected = kernels.attention_scores(features, query, v, *extra).numpy()
  np.testing.assert_allclose(
      kernels.compiled_attention_scores(kernels.transpose_features(features), query, v, *extra),
      expected, rtol=1e-5, atol=1e-6)
  assert np.abs(expected).max() > 0.5


@pytest.mark.parametrize("use_coverage", [False, True])
def test_compiled_attention_scores_share_features_between_beams(use_coverage):
  """With beams=K, article n's features serve query rows n*K .. n*K+K-1: the scores are those
  of the features repeated for every row."""
  rng = np.random.default_rng(4)
  articles, beams, units = 3, 2, 16
  features = tf.constant(rng.normal(size=(articles, L, units)).astype(np.float32))
  query = tf.constant(rng.normal(size=(articles * beams, units)).astype(np.float32))
  v = tf.constant(rng.normal(size=units).astype(np.float32))
  extra = ((tf.constant(rng.uniform(0, 2, size=(articles * beams, L)).astype(np.float32)),
            tf.constant(rng.normal(size=(1, units)).astype(np.float32))) if use_coverage else ())
  expected = kernels.attention_scores(tf.repeat(features, beams, axis=0), query, v,
                                      *extra).numpy()
  np.testing.assert_allclose(
      kernels.compiled_attention_scores(kernels.transpose_features(features), query, v, *extra,
                                        beams=beams),
      expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("use_coverage", [False, True])
def test_shared_attention_scores_equal_the_ops(use_coverage, monkeypatch):
  """shared_attention_scores (exports) gives the plain formula's scores of the features repeated
  for every row, in one pass, in groups of two articles (the last one short) and one by one,
  traced as an export traces it (the number of articles unknown), and for no articles."""
  rng = np.random.default_rng(5)
  articles, beams, units = 5, 3, 8
  features = rng.normal(size=(articles, L, units)).astype(np.float32)
  query = rng.normal(size=(articles * beams, units)).astype(np.float32)
  v = rng.normal(size=units).astype(np.float32)
  coverage = rng.uniform(0, 2, size=(articles * beams, L)).astype(np.float32)
  w_c = rng.normal(size=(1, units)).astype(np.float32)
  pre_tanh = np.repeat(features, beams, axis=0) + query[:, None, :]
  if use_coverage:
    pre_tanh += coverage[:, :, None] * w_c
  expected = (np.tanh(pre_tanh) * v).sum(axis=2)  # [articles * beams, L]
  extra = (coverage, w_c) if use_coverage else ()
  matrix = lambda: tf.TensorSpec([None, None], tf.float32)
  specs = [tf.TensorSpec([None, L, units], tf.float32), matrix(),
           tf.TensorSpec([units], tf.float32)] + ([matrix(), matrix()] if use_coverage else [])
  for per_pass in (articles, 2, 1):
    monkeypatch.setattr(kernels, "_SHARED_PASS_ELEMENTS", per_pass * beams * L * units)
    scores = tf.function(lambda *args: kernels.shared_attention_scores(*args, beams=beams),
                         input_signature=specs)
    np.testing.assert_allclose(scores(features, query, v, *extra), expected, rtol=1e-5,
                               atol=1e-5, err_msg=f"{per_pass} articles a pass")
  no_coverage = (coverage[:0], w_c) if use_coverage else ()
  assert scores(features[:0], query[:0], v, *no_coverage).shape == (0, L)


def test_attention_context_gradient_equals_einsums():
  rng = np.random.default_rng(12)
  attn = tf.constant(rng.uniform(size=(B, L)), tf.float32)
  states = tf.constant(rng.normal(size=(B, L, 2 * H)), tf.float32)
  weights = tf.constant(rng.normal(size=(B, 2 * H)), tf.float32)

  def context_and_gradients(fn):
    with tf.GradientTape() as tape:
      tape.watch([attn, states])
      context = fn(attn, states)
      loss = tf.reduce_sum(tf.sin(context) * weights)
    return context.numpy(), tape.gradient(loss, [attn, states])

  fast, fast_grads = context_and_gradients(kernels.attention_context)
  plain, plain_grads = context_and_gradients(lambda a, h: tf.einsum("bl,bld->bd", a, h))
  np.testing.assert_allclose(fast, np.einsum("bl,bld->bd", _np(attn), _np(states)), atol=1e-5)
  np.testing.assert_allclose(plain, fast, atol=1e-5)
  for fast_grad, plain_grad in zip(fast_grads, plain_grads):
    assert np.abs(plain_grad.numpy()).max() > 1e-2
    np.testing.assert_allclose(fast_grad.numpy(), plain_grad.numpy(), atol=1e-5)


def test_loop_matmul_gradient_equals_matmuls():
  """loop_matmul's hand-written gradient for x (with the kernel transposed once) against the
  automatic gradient of tf.matmul; neither kernel gets one (the encoder sums the kernel's after
  its loop: test_encoder_gradients_equal_the_plain_recurrence's)."""
  rng = np.random.default_rng(5)
  x = tf.constant(rng.normal(size=(3, 4)).astype(np.float32))
  kernel = tf.constant(rng.normal(size=(4, 6)).astype(np.float32))
  d_out = tf.constant(rng.normal(size=(3, 6)).astype(np.float32))
  with tf.GradientTape(persistent=True) as tape:
    tape.watch([x, kernel])
    kernel_t = tf.transpose(kernel)
    ours = kernels.loop_matmul(x, kernel, kernel_t)
    plain = tf.matmul(x, kernel)
  np.testing.assert_allclose(ours.numpy(), _np(x) @ _np(kernel), rtol=1e-5)
  ours_x = tape.gradient(ours, x, output_gradients=d_out)
  np.testing.assert_allclose(ours_x.numpy(), _np(d_out) @ _np(kernel).T, rtol=1e-5)
  np.testing.assert_allclose(ours_x.numpy(),
                             tape.gradient(plain, x, output_gradients=d_out).numpy(), rtol=1e-5)
  assert tape.gradient(ours, kernel, output_gradients=d_out) is None
  assert tape.gradient(ours, kernel_t, output_gradients=d_out) is None


def test_late_gradient_needs_its_inputs():
  late = kernels.LateGradient(lambda d, x: d * x)
  source = tf.constant([2.0])
  with tf.GradientTape() as tape:
    tape.watch(source)
    value = late.attach(tf.constant([3.0]), source)
  with pytest.raises(RuntimeError, match="set_inputs was not called"):
    tape.gradient(value, source)
