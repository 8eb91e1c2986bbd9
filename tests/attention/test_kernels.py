"""The loops' gradient helpers (loop_gradients) and the attention's decoding kernels against the
plain formulas they stand for: TensorFlow's automatic gradient of the same expression, under a
loss whose upstream gradient differs at every position. The attention's implementations are
held to the reference (attention/eager.py) by tests/attention/test_attention_implementations.py;
here only what that test's shapes do not reach: the XLA kernel's loop over more than one group of
units, the shared scores' groups of articles."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen.attention import shared
from pointer_gen.attention import xla
from pointer_gen.base import loop_gradients

from helpers import np64 as _np

B, L, H = 3, 7, 4


def _plain_scores(features, query, v, coverage=None, w_c=None, rows=1):
  """e_i = v . tanh(W_h h_i + W_s s + b [+ w_c cov_i]) in numpy: features [N, L, U] shared by
  `rows` consecutive rows of query [N*rows, U] and coverage [N*rows, L] -> [N*rows, L]."""
  pre_tanh = np.repeat(_np(features), rows, axis=0) + _np(query)[:, None, :]
  if coverage is not None:
    pre_tanh += _np(coverage)[:, :, None] * _np(w_c)
  return np.tanh(pre_tanh) @ _np(v)


@pytest.mark.parametrize("use_coverage", [False, True])
# 6 units: one pass of the kernel's loop; 24: three of 8; 20: four of 5.
@pytest.mark.parametrize("units", [6, 24, 20])
def test_compiled_attention_scores_equal_the_reference(use_coverage, units):
  """The XLA kernel decode uses gives the reference's values (to float32 rounding) in one pass
  of its loop and in several."""
  rng = np.random.default_rng(3)
  features = tf.constant(rng.normal(size=(B, L, units)).astype(np.float32))
  query = tf.constant(rng.normal(size=(B, units)).astype(np.float32))
  v = tf.constant(rng.normal(size=units).astype(np.float32))
  extra = ((tf.constant(rng.uniform(0, 2, size=(B, L)).astype(np.float32)),
            tf.constant(rng.normal(size=(1, units)).astype(np.float32))) if use_coverage else ())
  expected = _plain_scores(features, query, v, *extra)
  np.testing.assert_allclose(
      xla.compiled_attention_scores(xla.transpose_features(features), query, v, *extra),
      expected, rtol=1e-5, atol=1e-6)
  assert np.abs(expected).max() > 0.5


@pytest.mark.parametrize("use_coverage", [False, True])
def test_shared_attention_scores_equal_the_reference(use_coverage, monkeypatch):
  """shared_attention_scores (exports) gives the reference's scores of the features repeated
  for every row, in one pass, in groups of two articles (the last one short) and one by one,
  traced as an export traces it (the number of articles unknown), and for no articles."""
  rng = np.random.default_rng(5)
  articles, beams, units = 5, 3, 8
  features = rng.normal(size=(articles, L, units)).astype(np.float32)
  query = rng.normal(size=(articles * beams, units)).astype(np.float32)
  v = rng.normal(size=units).astype(np.float32)
  coverage = rng.uniform(0, 2, size=(articles * beams, L)).astype(np.float32)
  w_c = rng.normal(size=(1, units)).astype(np.float32)
  extra = (coverage, w_c) if use_coverage else ()
  expected = _plain_scores(features, query, v, *extra, rows=beams)
  assert expected.shape == (articles * beams, L) and np.abs(expected).max() > 0.5
  matrix = lambda: tf.TensorSpec([None, None], tf.float32)
  specs = [tf.TensorSpec([None, L, units], tf.float32), matrix(),
           tf.TensorSpec([units], tf.float32)] + ([matrix(), matrix()] if use_coverage else [])
  for per_pass in (articles, 2, 1):
    monkeypatch.setattr(shared, "_SHARED_PASS_ELEMENTS", per_pass * beams * L * units)
    scores = tf.function(lambda *args: shared.shared_attention_scores(*args, beams=beams),
                         autograph=False, input_signature=specs)
    np.testing.assert_allclose(scores(features, query, v, *extra), expected, rtol=1e-5,
                               atol=1e-5, err_msg=f"{per_pass} articles a pass")
  no_coverage = (coverage[:0], w_c) if use_coverage else ()
  assert scores(features[:0], query[:0], v, *no_coverage).shape == (0, L)


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
    ours = loop_gradients.loop_matmul(x, kernel, kernel_t)
    plain = tf.matmul(x, kernel)
  np.testing.assert_allclose(ours.numpy(), _np(x) @ _np(kernel), rtol=1e-5)
  ours_x = tape.gradient(ours, x, output_gradients=d_out)
  np.testing.assert_allclose(ours_x.numpy(), _np(d_out) @ _np(kernel).T, rtol=1e-5)
  np.testing.assert_allclose(ours_x.numpy(),
                             tape.gradient(plain, x, output_gradients=d_out).numpy(), rtol=1e-5)
  assert tape.gradient(ours, kernel, output_gradients=d_out) is None
  assert tape.gradient(ours, kernel_t, output_gradients=d_out) is None


def test_late_gradient_needs_its_inputs():
  late = loop_gradients.LateGradient(lambda d, x: d * x)
  source = tf.constant([2.0])
  with tf.GradientTape() as tape:
    tape.watch(source)
    value = late.attach(tf.constant([3.0]), source)
  with pytest.raises(RuntimeError, match="set_inputs was not called"):
    tape.gradient(value, source)
