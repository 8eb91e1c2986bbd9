"""Clipping as the original: its global norm squares the embedding gradient's rows one
looked-up token at a time, and clipping with it gives the original's updates.

The reference is TensorFlow's own: this file, run as a script in a subprocess with
TF_USE_LEGACY_KERAS=1 (the tf1_references fixture's, with tests/training/test_tf1_checkpoint.py),
builds the original's training graph with tools/dev/tf1_reference.py, whose train_op clips the raw
tf.gradients by global norm before TF1's Adagrad, and trains three steps on batches with
repeated words at a max_grad_norm well below their norms, saving a TF1 checkpoint before and
after each step.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data.batch import Batch
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint
from pointer_gen.training import train
from pointer_gen.training import training_state

from helpers import events
from helpers import REPO

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

# Run on the worker of test_tf1_checkpoint.py (conftest.worker_unit): they share tf1_references.

V, E, H = 30, 6, 5
UNK, PAD, START, STOP = 0, 1, 2, 3
B, L, T, MAX_OOVS = 3, 9, 6, 2
# A small initial accumulator and a large learning rate make every variable's change in a step
# large against float32 round-off of its values (the comparison is relative to that change).
LR, INIT_ACC, MAX_GRAD_NORM = 0.5, 1e-4, 0.3
FIRST_STEP = 7
STEPS = 3
# The step whose batch makes the two norms differ most (10 %).
RATIO_STEP = 1
WORDS = [f"w{i}" for i in range(V - 4)]
# Differences from TF1 allowed, relative to the largest change of the variable's weights (or
# of its accumulator) over the steps compared.
RELATIVE = 1e-5


def _batches():
  """Three batches of articles drawn from 6 words (so words repeat within and across the
  articles, and the summaries reuse them: the lookups share embedding rows) and 2 OOVs."""
  rng = np.random.RandomState(0)
  result = []
  for _ in range(STEPS):
    enc_len = rng.randint(5, L + 1, B).astype(np.int32)
    dec_len = rng.randint(3, T + 1, B).astype(np.int32)
    enc_ext = rng.choice([4, 5, 6, 7, 8, 9, V, V + 1], (B, L)).astype(np.int32)
    enc_ext[np.arange(L)[None, :] >= enc_len[:, None]] = PAD
    target = np.full((B, T), PAD, np.int32)
    for b in range(B):
      # Article words (OOVs copied) and some words of the fixed vocabulary, ending in [STOP].
      pool = np.concatenate([enc_ext[b, :enc_len[b]], [10, 11]])
      target[b, :dec_len[b] - 1] = rng.choice(pool, dec_len[b] - 1)
      target[b, dec_len[b] - 1] = STOP
    dec_input = np.concatenate([np.full((B, 1), START), np.where(target >= V, UNK, target)[:, :-1]],
                               axis=1).astype(np.int32)
    dec_input[np.arange(T)[None, :] >= dec_len[:, None]] = PAD
    result.append(Batch(enc_input=np.where(enc_ext >= V, UNK, enc_ext).astype(np.int32),
                        enc_input_ext=enc_ext, enc_len=enc_len, dec_input=dec_input,
                        target=target, dec_len=dec_len))
  return result


# ------------------------------------------------------------------ the TF1 reference (subprocess)


def _write_tf1_reference(out_dir):
  """Writes `model.ckpt-N` for N = FIRST_STEP (untrained) .. FIRST_STEP + STEPS and
  `reference.npz`: per step TF's global norm of the raw tf.gradients (the original's) and of the
  same gradients made dense (duplicate rows summed)."""
  v1 = tf.compat.v1
  v1.disable_v2_behavior()
  v1.set_random_seed(3)
  names = ("enc_input", "enc_input_ext", "enc_len", "dec_input", "target", "dec_len")
  shapes = ([B, L], [B, L], [B], [B, T], [B, T], [B])
  feeds = {n: v1.placeholder(tf.int32, s, n) for n, s in zip(names, shapes)}
  graph = tf1_reference.build_training_graph(
      feeds["enc_input"], feeds["enc_input_ext"], feeds["enc_len"], feeds["dec_input"],
      feeds["target"], feeds["dec_len"], V, MAX_OOVS, E, H,
      v1.random_uniform_initializer(-1.0, 1.0))
  global_step = tf.Variable(FIRST_STEP, name="global_step", trainable=False)
  update = tf1_reference.train_op(graph["total_loss"], LR, INIT_ACC, MAX_GRAD_NORM, global_step)
  raw = tf.gradients(graph["total_loss"], v1.trainable_variables())
  norms = {"original": tf.linalg.global_norm(raw),
           "true": tf.linalg.global_norm([tf.convert_to_tensor(g) for g in raw])}
  saver = v1.train.Saver(max_to_keep=None)
  prefix = os.path.join(out_dir, "model.ckpt")
  fetched = []
  with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    saver.save(sess, prefix, global_step=global_step)
    for batch in _batches():
      feed = {feeds[n]: getattr(batch, n) for n in names}
      fetched.append(sess.run(norms, feed))
      sess.run(update, feed)
      saver.save(sess, prefix, global_step=global_step)
  embedding_gradient = raw[[v.name for v in v1.trainable_variables()].index(
      "seq2seq/embedding/embedding:0")]
  np.savez(os.path.join(out_dir, "reference.npz"),
           original=[f["original"] for f in fetched], true=[f["true"] for f in fetched],
           embedding_gradient_type=type(embedding_gradient).__name__,
           embedding_gradient_rows=int(embedding_gradient.values.shape[0]))


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def reference(tf1_references):
  out, ref = tf1_references["test_clip_norm"]
  ref = dict(ref)
  (out / "vocab").write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(WORDS)))
  ref["vocab"] = str(out / "vocab")
  ref["prefixes"] = [str(out / f"model.ckpt-{FIRST_STEP + k}") for k in range(STEPS + 1)]
  return ref


def _hps(reference, log_root, **changes):
  values = dict(hidden_dim=H, emb_dim=E, vocab_size=V, pointer_gen=True, coverage=True,
                lr=LR, adagrad_init_acc=INIT_ACC, max_grad_norm=MAX_GRAD_NORM, cov_loss_wt=1.0,
                vocab_path=reference["vocab"], log_root=str(log_root), exp_name="run",
                checkpoint_secs=10000)
  values.update(changes)
  return config.HParams(**values).validated()


def _trainer(reference, hps):
  """A trainer restored from the original's untrained checkpoint, converted into its run."""
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  tf1_checkpoint.convert_to_run(hps, vocab, reference["prefixes"][0])
  trainer = train.Trainer(hps, vocab)
  trainer.restore()
  assert int(trainer.step.numpy()) == FIRST_STEP
  return trainer


def _state(model, optimizer):
  """{path: (weight, accumulator)} of every trainable variable."""
  return {v.path: (v.numpy(), optimizer._accumulators[optimizer._get_variable_index(v)].numpy())
          for v in model.trainable_variables}


def _tf1_state(hps, prefix):
  state = training_state.TrainingState.from_hparams(hps, V)
  tf1_checkpoint.load(prefix, state.model, state.optimizer)
  return _state(state.model, state.optimizer)


def _dataset():
  # The batches' fields stacked: one column per field, absent (None) in all or none.
  return tf.data.Dataset.from_tensor_slices(Batch(*(
      None if column[0] is None else np.stack(column) for column in zip(*_batches()))))


def _relative_differences(ours, theirs, before):
  """Per variable: the largest difference of our weights from the original's, relative to the
  largest change of the original's weights since `before`; the same for the accumulators."""
  result = {}
  for name, (weight, accumulator) in theirs.items():
    moved = np.abs(weight - before[name][0]).max()
    grown = np.abs(accumulator - before[name][1]).max()
    assert moved > 0 and grown > 0, name  # else there would be nothing to compare
    result[name] = (np.abs(ours[name][0] - weight).max() / moved,
                    np.abs(ours[name][1] - accumulator).max() / grown)
  return result


# ---------------------------------------------------------------------------------- tests


def test_reference_clips_with_the_norm_of_the_per_token_rows(reference):
  # tf.gradients hands the embedding's gradient over as one row per looked-up token, article
  # and summary (padding included).
  assert str(reference["embedding_gradient_type"]) == "IndexedSlices"
  assert int(reference["embedding_gradient_rows"]) == B * (L + T)
  # Clipping is active at every step, and the repeated words make the two norms differ.
  assert np.all(reference["original"] > 3 * MAX_GRAD_NORM)
  ratio = reference["original"] / reference["true"]
  assert np.all(np.abs(ratio - 1) > 0.005) and np.abs(ratio[RATIO_STEP] - 1) > 0.05, ratio


def test_three_clipped_steps_give_the_originals_weights_and_accumulators(reference, tmp_path):
  """Each step starts from the original's state before it (its checkpoint) and must give the
  original's next one: the accumulators' float32 round-off, carried from step to step, would
  soon be larger than a later step's smaller increments."""
  hps = _hps(reference, tmp_path)
  trainer = _trainer(reference, hps)
  step_fn = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, V)
  batches = iter(_dataset())
  for k in range(STEPS):
    assert tf1_checkpoint.load(reference["prefixes"][k], trainer.model,
                               trainer.optimizer) == FIRST_STEP + k
    before = _state(trainer.model, trainer.optimizer)
    scalars = step_fn(batches)
    np.testing.assert_allclose(scalars["global_norm"], reference["original"][k], rtol=1e-6)
    differences = _relative_differences(_state(trainer.model, trainer.optimizer),
                                        _tf1_state(hps, reference["prefixes"][k + 1]), before)
    for name, (weight, accumulator) in differences.items():
      assert weight < RELATIVE and accumulator < RELATIVE, (k, name, weight, accumulator)


def test_training_logs_the_originals_global_norm_and_ends_at_its_weights(reference, tmp_path):
  """Three steps of the training loop, from the converted checkpoint on."""
  hps = _hps(reference, tmp_path, num_train_steps=FIRST_STEP + STEPS)
  trainer = _trainer(reference, hps)
  history = trainer.train(_dataset())
  steps = [FIRST_STEP + k + 1 for k in range(STEPS)]
  assert [row["step"] for row in history] == steps
  np.testing.assert_allclose([row["global_norm"] for row in history], reference["original"],
                             rtol=1e-5)
  logged = events.read_scalars(hps.train_dir)["global_norm"]
  assert [step for step, _ in logged] == steps
  np.testing.assert_allclose([value for _, value in logged], reference["original"], rtol=1e-5)
  # Round-off carried over three steps, against what the three steps changed.
  differences = _relative_differences(_state(trainer.model, trainer.optimizer),
                                      _tf1_state(hps, reference["prefixes"][STEPS]),
                                      _tf1_state(hps, reference["prefixes"][0]))
  for name, (weight, accumulator) in differences.items():
    assert weight < RELATIVE and accumulator < RELATIVE, (name, weight, accumulator)


def _applied_gradient(before, after):
  """The gradient an Adagrad step (epsilon 0) applied: (w - w') * sqrt(acc') / lr."""
  return {name: (weight - after[name][0]) * np.sqrt(np.float64(after[name][1])) / LR
          for name, (weight, _) in before.items()}


def test_true_norm_clips_by_the_summed_gradients_norm(reference, tmp_path):
  """From the original's state, a --clip_norm=true step applies the original's gradient times
  (original's norm / true norm): accumulator increments times its square."""
  hps = _hps(reference, tmp_path, clip_norm="true")
  trainer = _trainer(reference, hps)
  tf1_checkpoint.load(reference["prefixes"][RATIO_STEP], trainer.model, trainer.optimizer)
  before = _state(trainer.model, trainer.optimizer)
  step_fn = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, V)
  scalars = step_fn(iter(_dataset().skip(RATIO_STEP)))
  np.testing.assert_allclose(scalars["global_norm"], reference["true"][RATIO_STEP], rtol=1e-6)
  ours = _state(trainer.model, trainer.optimizer)
  theirs = _tf1_state(hps, reference["prefixes"][RATIO_STEP + 1])
  ratio = reference["original"][RATIO_STEP] / reference["true"][RATIO_STEP]
  applied = _applied_gradient(before, ours)
  expected = {name: ratio * g for name, g in _applied_gradient(before, theirs).items()}
  for name, (_, accumulator) in before.items():
    largest = np.abs(expected[name]).max()
    assert np.abs(applied[name] - expected[name]).max() < RELATIVE * largest, name
    increment = ours[name][1] - accumulator
    expected_increment = ratio ** 2 * (theirs[name][1] - accumulator)
    assert (np.abs(increment - expected_increment).max()
            < RELATIVE * np.abs(expected_increment).max()), name


def test_clip_norm_must_be_original_or_true(reference, tmp_path):
  with pytest.raises(DataError, match="--clip_norm=summed: expected one of original, true"):
    _hps(reference, tmp_path, clip_norm="summed")


if __name__ == "__main__":
  sys.path.insert(0, str(REPO / "tools" / "dev"))
  import tf1_reference  # pylint: disable=g-import-not-at-top  (sets TF_USE_LEGACY_KERAS)
  _write_tf1_reference(sys.argv[1])
