"""--precision=mixed_bfloat16: one training step against float32's, float32 state, checkpoints
shared by both precisions, and decode/export in bfloat16 giving valid summaries."""

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base import precision
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.data.batch import Batch
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import decode
from pointer_gen.inference import export
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train
from pointer_gen.training import training_state

# bfloat16 keeps 8 significant bits (7 stored + 1 implicit): each rounding is off by at most
# 2^-9 (0.2 %) of the value. The loss is a mean over ~30 tokens of float32 logs of float32
# softmaxes whose logits went through bfloat16 matmuls: its rounding errors largely average out
# (measured 5e-5 relative); two units of bfloat16 rounding bound it. A variable's update (its
# gradient through some 50 recurrent steps of bfloat16 products, then Adagrad's float32 step)
# collects a few dozen roundings: over five random starts, 0.6 % to 7.0 % of the update's norm
# (the largest for the attention's W_s and w_c, whose gradients are sums over every position
# with much cancellation), so 40 units (7.8 %); an update that is wrong in kind (a sign, a
# missing term) is off by ~100 %.
LOSS_RTOL = 2 * 2**-9
UPDATE_RTOL = 40 * 2**-9

SIZES = dict(vocab_size=200, hidden_dim=16, emb_dim=16, batch_size=4, max_enc_steps=40,
             max_dec_steps=10, coverage=True, seed=1)


def _batch(rng, hps):
  """A batch with article OOVs (ids >= V) that the summaries copy."""
  b, l, t, v = hps.batch_size, hps.max_enc_steps, hps.max_dec_steps, hps.vocab_size
  enc_len = np.array([l, l - 7, l - 15, 12], np.int32)
  ext = rng.integers(4, v + 3, (b, l)).astype(np.int32)  # [B, L], ids V..V+2 are OOVs
  ext[np.arange(l)[None, :] >= enc_len[:, None]] = vocab_lib.PAD_ID
  dec_len = np.array([t, t - 3, t - 1, 4], np.int32)
  # Half the summary words are copied from the article, half generated.
  copied = ext[np.arange(b)[:, None], rng.integers(0, enc_len[:, None], (b, t))]  # [B, T]
  target = np.where(rng.random((b, t)) < 0.5, copied, rng.integers(4, v, (b, t))).astype(np.int32)
  steps = np.arange(t)[None, :]
  target[steps >= dec_len[:, None]] = vocab_lib.PAD_ID
  in_vocab = lambda ids: np.where(ids >= v, vocab_lib.UNK_ID, ids).astype(np.int32)
  dec_input = np.concatenate([np.full((b, 1), vocab_lib.START_ID), in_vocab(target)[:, :-1]], 1)
  dec_input[steps >= dec_len[:, None]] = vocab_lib.PAD_ID
  return Batch(enc_input=in_vocab(ext), enc_input_ext=ext, enc_len=enc_len,
               num_oovs=np.full([b], 3, np.int32), dec_input=dec_input.astype(np.int32),
               target=target, dec_len=dec_len)


def _one_step(hps, weights, batch):
  """Loss, global norm, updated weights and Adagrad accumulators after one training step from
  `weights` at hps.precision."""
  state = training_state.TrainingState.from_hparams(hps, hps.vocab_size)
  model, optimizer = state.model, state.optimizer
  for variable, value in zip(model.weights, weights):
    variable.assign(value)
  train_step = train.make_train_step(model, optimizer, state.step, hps, hps.vocab_size)
  report = train_step(iter(tf.data.Dataset.from_tensors(batch)))
  assert bool(report["finite"])
  accumulators = [v for v in optimizer.variables if "accumulator" in v.path]
  assert len(accumulators) == len(model.trainable_variables)
  return {"loss": float(report["total_loss"]), "norm": float(report["global_norm"]),
          "weights": [v.numpy() for v in model.trainable_variables],
          "dtypes": {v.dtype for v in model.weights + optimizer.variables
                     if v.dtype != "int64"},
          "accumulators": [v.numpy() for v in accumulators]}


def test_one_bf16_training_step_is_within_tolerance_of_float32():
  hps = config.HParams(**SIZES)
  rng = np.random.default_rng(0)
  # Weights large enough that the attention, p_gen and the vocabulary distribution are far
  # from uniform (at the tiny initial values bfloat16 rounding would hardly show).
  start = model_lib.PointerGenerator.from_hparams(hps, hps.vocab_size)
  weights = [rng.normal(0.0, 0.3, v.shape).astype(np.float32) for v in start.weights]
  batch = _batch(rng, hps)
  fp32 = _one_step(hps, weights, batch)
  bf16 = _one_step(hps.replace(precision="mixed_bfloat16"), weights, batch)

  # Variables and Adagrad's accumulators are float32 in both precisions.
  assert bf16["dtypes"] == fp32["dtypes"] == {"float32"}
  # bfloat16 really computed (the losses differ), within its rounding.
  assert bf16["loss"] != fp32["loss"]
  np.testing.assert_allclose(bf16["loss"], fp32["loss"], rtol=LOSS_RTOL)
  np.testing.assert_allclose(bf16["norm"], fp32["norm"], rtol=UPDATE_RTOL)
  for before, w32, w16, a32, a16 in zip(weights, fp32["weights"], bf16["weights"],
                                        fp32["accumulators"], bf16["accumulators"]):
    update32, update16 = w32 - before, w16 - before
    assert np.linalg.norm(update32) > 0
    assert np.linalg.norm(update16 - update32) <= UPDATE_RTOL * np.linalg.norm(update32)
    grown32, grown16 = a32 - hps.adagrad_init_acc, a16 - hps.adagrad_init_acc  # g^2
    assert np.linalg.norm(grown16 - grown32) <= 2 * UPDATE_RTOL * np.linalg.norm(grown32)


@pytest.mark.parametrize("leading", [(7,), (3, 5)])
def test_bf16_vocab_logits_are_the_bf16_matmul_plus_the_float32_bias(leading):
  """In bfloat16 the projection's matmul runs alone (its bias not fused into it) and the bias
  is added after the cast to float32: the logits are the product of the bfloat16 hidden layer
  and kernel, rounded once to bfloat16, plus the float32 bias, for [N, ...] and [B, T, ...]."""
  hps = config.HParams(**{**SIZES, "precision": "mixed_bfloat16"})
  cell = model_lib.PointerGenerator.from_hparams(hps, hps.vocab_size).cell
  rng = np.random.default_rng(5)
  projection = cell.vocab_projection
  # Weights of the scale of a trained model's (the initial ones are ~1e-4).
  projection.kernel.assign(rng.normal(scale=0.3, size=projection.kernel.shape))
  projection.bias.assign(rng.normal(size=projection.bias.shape))
  outputs = tf.constant(rng.normal(size=(*leading, hps.hidden_dim)), tf.bfloat16)
  contexts = tf.constant(rng.normal(size=(*leading, 2 * hps.hidden_dim)), tf.bfloat16)
  logits = cell.vocab_logits(outputs, contexts)
  assert logits.dtype == tf.float32 and logits.shape == (*leading, hps.vocab_size)

  hidden = cell.output_hidden(tf.concat([outputs, contexts], axis=-1))
  assert hidden.dtype == tf.bfloat16
  kernel = tf.cast(tf.cast(projection.kernel, tf.bfloat16), tf.float32).numpy()
  product = tf.cast(hidden, tf.float32).numpy() @ kernel  # exact products, float32 sums
  bias = projection.bias.numpy()
  assert bias.dtype == np.float32
  # The product's bfloat16 roundings, none of the bias: one (2^-9 of it at most) where the CPU
  # has bfloat16 dot products; elsewhere oneDNN also rounds partial sums, up to 2^-7.6 of the
  # largest product on a Zen 3 (AVX2 only).
  np.testing.assert_allclose(logits.numpy(), product + bias,
                             rtol=0, atol=2**-6 * np.abs(product).max())
  assert np.abs(product).max() > 1 and np.abs(bias).max() > 1


def test_precision_must_be_one_of_the_two():
  with pytest.raises(DataError, match=r"--precision=float16: expected one of float32, "
                                      r"mixed_bfloat16"):
    config.HParams(precision="float16").validated()


def test_native_bf16_flags_are_read_from_cpuinfo(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f amx_bf16 avx512_bf16 sse\n")
  assert precision.native_bf16_flags(str(cpuinfo)) == ["amx_bf16", "avx512_bf16"]
  cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2\n")
  assert precision.native_bf16_flags(str(cpuinfo)) == []
  assert precision.native_bf16_flags(str(tmp_path / "missing")) == []


# --------------------------------------------------------------- runs on the demo corpus


def _train(hps, vocab, steps):
  trainer = train.Trainer(hps.replace(num_train_steps=steps), vocab)
  source = data.RecordSource(data_files.DataFiles.find(hps.data_path), seed=hps.seed)
  trainer.train(data.make_dataset(source, vocab.lookup_table(), len(vocab), hps))
  return trainer


def _state(trainer):
  return [v.numpy() for v in trainer.model.weights + trainer.optimizer.variables]


@pytest.fixture(scope="module")
def bf16_run(demo_corpus, tmp_path_factory):
  """A bf16 run trained 2 steps, then resumed in float32 for 1, then in bf16 for 1."""
  root = tmp_path_factory.mktemp("precision")
  corpus = demo_corpus
  hps = config.HParams(
      data_path=corpus["train"], vocab_path=corpus["vocab"], log_root=str(root), exp_name="run",
      hidden_dim=16, emb_dim=8, vocab_size=519, batch_size=8, max_enc_steps=60,
      max_dec_steps=12, min_dec_steps=3, beam_size=3, coverage=True, seed=3,
      checkpoint_secs=1000, precision="mixed_bfloat16")
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  saved = {}
  saved["bf16"] = _state(_train(hps, vocab, 2))
  fp32 = train.Trainer(hps.replace(precision="float32"), vocab)
  fp32.restore()
  saved["restored_in_fp32"] = _state(fp32)
  saved["fp32"] = _state(_train(hps.replace(precision="float32"), vocab, 3))
  bf16 = train.Trainer(hps, vocab)
  bf16.restore()
  saved["restored_in_bf16"] = _state(bf16)
  return hps, vocab, corpus, saved


def test_checkpoints_are_interchangeable_between_precisions(bf16_run):
  hps, _, _, saved = bf16_run
  for written, read in (("bf16", "restored_in_fp32"), ("fp32", "restored_in_bf16")):
    assert len(saved[written]) == len(saved[read])
    for a, b in zip(saved[written], saved[read]):
      np.testing.assert_array_equal(a, b)
  assert checkpoints.step_of(checkpoints.newest(hps.train_dir)) == 3
  # Every saved tensor is float32 but the counters and the object graph.
  reader = tf.train.load_checkpoint(checkpoints.newest(hps.train_dir))
  others = {name.replace("/.ATTRIBUTES/VARIABLE_VALUE", ""): dtype for name, dtype in
            reader.get_variable_to_dtype_map().items() if dtype != tf.float32}
  assert others == {"optimizer/_iterations": tf.int64, "save_counter": tf.int64,
                    "step": tf.int64, "_CHECKPOINTABLE_OBJECT_GRAPH": tf.string}


def _check_summary(words, article_words, vocab, min_words):
  assert len(words) >= min_words
  for word in words:
    assert word in article_words or vocab.word2id(word) not in (
        vocab_lib.UNK_ID, vocab_lib.PAD_ID, vocab_lib.START_ID, vocab_lib.STOP_ID), word


@pytest.mark.slow
def test_bf16_decode_and_export_give_valid_summaries(bf16_run, tmp_path):
  hps, vocab, corpus, _ = bf16_run
  decode_hps = hps.replace(mode="decode", data_path=corpus["val"], single_pass=True,
                           max_decode_examples=3, batch_size=3, log_root=str(tmp_path))
  ckpt_path = checkpoints.newest(hps.train_dir)
  model = model_lib.PointerGenerator.from_hparams(decode_hps, len(vocab))
  checkpoints.restore_weights(model, ckpt_path)
  result = decode.SinglePassDecoder(decode_hps, vocab, model, ckpt_path).run()
  assert result["flags"]["precision"] == "mixed_bfloat16"
  assert result["num_examples"] == 3
  articles = [r.article.split() for r in data_formats.read_records(
      sorted(glob.glob(corpus["val"])), "auto", skips_lib.SkipCounter())][:3]
  decoded = sorted(glob.glob(os.path.join(tmp_path, "run", "decode_*", "decoded", "*.txt")))
  assert len(decoded) == 3
  for path, article in zip(decoded, articles):
    with open(path, encoding="utf-8") as f:
      # min_dec_steps 3 tokens, the last of which may be [STOP].
      _check_summary(f.read().split(), set(article), vocab, hps.min_dec_steps - 1)

  target = export.export(hps.replace(mode="export"), vocab, ckpt_path, str(tmp_path / "models"))
  with open(os.path.join(target, "assets.extra", export.SETTINGS_FILE), encoding="utf-8") as f:
    assert json.load(f)["precision"] == "mixed_bfloat16"
  loaded = tf.saved_model.load(target)
  settings = loaded.signatures["settings"]()
  assert settings["precision"].numpy() == b"mixed_bfloat16"
  out = loaded.signatures["serving_default"](article=tf.constant([" ".join(articles[0])]))
  assert out["log_prob"].dtype == tf.float32
  assert np.isfinite(out["log_prob"].numpy()).all() and out["log_prob"].numpy()[0] < 0
  _check_summary(out["summary"].numpy()[0].decode("utf-8").split(), set(articles[0]), vocab,
                 hps.min_dec_steps - 1)
