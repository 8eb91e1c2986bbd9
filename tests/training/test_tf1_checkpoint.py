"""Checkpoints of the original TF1 code give the original's numbers in pointer_gen.

The reference is computed by TensorFlow itself, not by our code: this file, run as a script in a
subprocess with TF_USE_LEGACY_KERAS=1 (the tf1_references fixture's, which runs
tests/training/test_clip_norm.py too; tf.compat.v1's RNN cells then come from tf_keras, which
holds TF1's LSTMCell; with Keras 3 they are unavailable), builds the original's graph in TF1
graph mode with tools/dev/tf1_reference.py (also the speed baseline of docs/performance.md)
under its exact variable scopes: TF1's LSTMCell in bidirectional_dynamic_rnn, the
reduce-states, the attention decoder written the TF1 way (linear() on concatenated arguments,
W_h and w_c as 1x1 convolutions, input feeding, p_gen, scatter_nd final distribution), the
masked losses, one TF1 Adagrad update, and tf.compat.v1.train.Saver checkpoints.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen import settle
from pointer_gen.base import checkpoints
from pointer_gen.base import environment
from pointer_gen.base.errors import DataError
from pointer_gen.data.batch import Batch
from pointer_gen.data import raw_text
from pointer_gen.data import run_record
from pointer_gen.model import layers
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint
from pointer_gen.training import train
from pointer_gen.training import training_state

from helpers import load_tool
from helpers import run_main

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
# Run on the worker of test_clip_norm.py (conftest.worker_unit): they share tf1_references.
ATOL = 1e-5
V, E, H = 30, 6, 5
UNK, PAD, START, STOP = 0, 1, 2, 3
# Two articles of 7 and 5 words (L = 7); the first has two OOVs (V, V+1; V twice), the second
# one. Targets copy OOVs, use in-article words, end in [STOP]; 4 and 3 steps (T = 4).
ENC_EXT = np.array([[4, V, 9, 12, V + 1, V, 7],
                    [5, 17, V, 20, 8, PAD, PAD]], np.int32)
ENC_LEN = np.array([7, 5], np.int32)
MAX_OOVS = 2
TARGET = np.array([[V, 9, V + 1, STOP],
                   [17, V, STOP, PAD]], np.int32)
DEC_LEN = np.array([4, 3], np.int32)
ENC_INPUT = np.where(ENC_EXT >= V, UNK, ENC_EXT).astype(np.int32)
# [START] + the target with temporary ids fed as [UNK], [PAD] past each summary's end.
DEC_INPUT = np.where(
    np.arange(4)[None, :] < DEC_LEN[:, None],
    np.concatenate([np.full([2, 1], START), np.where(TARGET >= V, UNK, TARGET)[:, :-1]], axis=1),
    PAD).astype(np.int32)
# The decode step starts from a coverage, as the original's beam search does after step 0.
PREV_COVERAGE = (np.random.RandomState(3).uniform(0.0, 1.5, ENC_EXT.shape)
                 * (ENC_EXT != PAD)).astype(np.float32)
LR, INIT_ACC, MAX_GRAD_NORM = 0.15, 0.1, 2.0
# The TF1 graph starts at this step and applies one update before saving (then one more).
FIRST_STEP = 41
STEP = FIRST_STEP + 1
WORDS = [f"w{i}" for i in range(V - 4)]


# ------------------------------------------------------------------ the TF1 reference (subprocess)


def _write_tf1_reference(out_dir):
  """Builds, trains one step, checkpoints and evaluates the original's graph; writes
  `tf1_2/model.ckpt-42` (TF >= 1.2 names), `tf1_0/model.ckpt-42` (TF 1.0 names), `tf1_2/
  model.ckpt-43` (after one more update) and `reference.npz`."""
  v1 = tf.compat.v1
  v1.disable_v2_behavior()
  v1.set_random_seed(5)
  # Larger than the original's initial values, so that every gate and attention weight matters.
  init = v1.random_uniform_initializer(-1.0, 1.0)
  ids = lambda x: tf.constant(x, tf.int32)
  graph = tf1_reference.build_training_graph(
      ids(ENC_INPUT), ids(ENC_EXT), ids(ENC_LEN), ids(DEC_INPUT), ids(TARGET), ids(DEC_LEN),
      V, MAX_OOVS, E, H, init)
  # Decode mode: one step from the initial state with initial_state_attention, on the encoder
  # states computed above (the original feeds them back from its run_encoder).
  with v1.variable_scope("seq2seq", reuse=True):
    with v1.variable_scope("decoder"):
      d_outputs, d_state, d_attn, d_p_gen, d_coverage = tf1_reference.attention_decoder(
          [graph["emb_dec"][0]], graph["dec_in_state"], graph["enc_states"], graph["enc_mask"],
          graph["dec_cell"], initial_state_attention=True,
          prev_coverage=tf.constant(PREV_COVERAGE))
    d_vocab = tf.nn.softmax(tf.compat.v1.nn.xw_plus_b(d_outputs[0], graph["w"], graph["v"]))
    d_final = tf1_reference.final_dists([d_vocab], d_attn, d_p_gen, tf.constant(ENC_EXT), V,
                                        MAX_OOVS)[0]

  global_step = tf.Variable(FIRST_STEP, name="global_step", trainable=False)
  train_op = tf1_reference.train_op(graph["total_loss"], LR, INIT_ACC, MAX_GRAD_NORM, global_step)

  saver = v1.train.Saver()
  with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train_op)
    prefix = saver.save(sess, os.path.join(out_dir, "tf1_2", "model.ckpt"), global_step=global_step)
    fetched = sess.run({
        "loss": graph["loss"], "coverage_loss": graph["coverage_loss"],
        "final_dists": tf.stack(graph["final_dists"]), "attn": tf.stack(graph["attn_dists"]),
        "p_gen": tf.stack(graph["p_gens"])[:, :, 0],
        "decode_final_dist": d_final, "decode_attn": d_attn[0], "decode_p_gen": d_p_gen[0][:, 0],
        "decode_c": d_state.c, "decode_h": d_state.h, "decode_coverage": d_coverage})
    sess.run(train_op)
    saver.save(sess, os.path.join(out_dir, "tf1_2", "model.ckpt"), global_step=global_step)
  np.savez(os.path.join(out_dir, "reference.npz"),
           lstm_cell_module=v1.nn.rnn_cell.LSTMCell.__module__,
           variable_names=[n for n, _ in tf.train.list_variables(prefix)], **fetched)
  _write_tf10_names(prefix, os.path.join(out_dir, "tf1_0"))


def _write_tf10_names(prefix, out_dir):
  """Re-saves the checkpoint with TF 1.0's LSTMCell variable names (`weights`, `biases`)."""
  v1 = tf.compat.v1
  reader = tf.train.load_checkpoint(prefix)
  with tf.Graph().as_default():
    for name, _ in tf.train.list_variables(prefix):
      old_name = name.replace("lstm_cell/kernel", "lstm_cell/weights").replace(
          "lstm_cell/bias", "lstm_cell/biases")
      v1.get_variable(old_name, initializer=reader.get_tensor(name))
    with v1.Session() as sess:
      sess.run(v1.global_variables_initializer())
      v1.train.Saver().save(sess, os.path.join(out_dir, "model.ckpt"), global_step=STEP)


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def reference(tf1_references):
  out, ref = tf1_references["test_tf1_checkpoint"]
  ref = dict(ref)
  (out / "vocab").write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(WORDS)))
  ref.update(vocab=str(out / "vocab"), prefix=str(out / "tf1_2" / f"model.ckpt-{STEP}"),
             tf10_prefix=str(out / "tf1_0" / f"model.ckpt-{STEP}"),
             next_prefix=str(out / "tf1_2" / f"model.ckpt-{STEP + 1}"))
  return ref


def _hps(reference, log_root, exp_name="converted", **changes):
  values = dict(hidden_dim=H, emb_dim=E, vocab_size=V, pointer_gen=True, coverage=True,
                lr=LR, adagrad_init_acc=INIT_ACC, max_grad_norm=MAX_GRAD_NORM, cov_loss_wt=1.0,
                vocab_path=reference["vocab"], log_root=str(log_root), exp_name=exp_name)
  values.update(changes)
  return config.HParams(**values).validated()


def _vocab(hps):
  return vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)


@pytest.fixture(scope="module")
def converted(reference, tmp_path_factory):
  """The TF >= 1.2 checkpoint converted into a run: (hps, path)."""
  hps = _hps(reference, tmp_path_factory.mktemp("runs"))
  path, step = tf1_checkpoint.convert_to_run(hps, _vocab(hps), reference["prefix"])
  assert step == STEP
  return hps, path


def _batch():
  return Batch(enc_input=tf.constant(ENC_INPUT), enc_input_ext=tf.constant(ENC_EXT),
               enc_len=tf.constant(ENC_LEN), dec_input=tf.constant(DEC_INPUT),
               target=tf.constant(TARGET), dec_len=tf.constant(DEC_LEN))


def _model(hps, path):
  model = model_lib.PointerGenerator.from_hparams(hps, V)
  assert checkpoints.restore_weights(model, path) == STEP
  return model


def _weights(model):
  return {v.path: v.numpy() for v in model.trainable_variables}


def _accumulators(model, optimizer):
  return {v.path: optimizer._accumulators[optimizer._get_variable_index(v)].numpy()
          for v in model.trainable_variables}


def _rewrite(source, target, drop):
  """Writes `source`'s variables under the same names as a checkpoint `target`, as a TF1 Saver
  would, without the names in `drop`."""
  reader = tf.train.load_checkpoint(source)
  values = {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(source) if n not in drop}
  names = sorted(values)
  os.makedirs(os.path.dirname(target), exist_ok=True)
  tf.raw_ops.SaveV2(prefix=target, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(values[n]) for n in names])
  return target


# ---------------------------------------------------------------------------------- tests


def test_reference_is_tf1s_own_lstm_cell_and_the_originals_names(reference):
  # tf_keras's legacy_cells module is where TF 2 keeps TF1's rnn_cell_impl.LSTMCell.
  assert str(reference["lstm_cell_module"]).startswith("tf_keras.src.layers.rnn.legacy_cells")
  names = set(reference["variable_names"].tolist())
  weights = {e.name for e in tf1_checkpoint.MAPPING}
  assert names == weights | {n + "/Adagrad" for n in weights} | {"global_step"}


def test_forward_and_losses_match_the_tf1_graph(reference, converted):
  hps, path = converted
  model = _model(hps, path)
  batch = _batch()
  outputs = model(batch)
  per_example = losses.compute_losses(outputs, batch, V, coverage=True)
  scalars = losses.batch_losses(per_example, pointer_gen=True, coverage=True, cov_loss_wt=1.0)
  np.testing.assert_allclose(scalars.loss, reference["loss"], atol=ATOL)
  np.testing.assert_allclose(scalars.coverage_loss, reference["coverage_loss"], atol=ATOL)
  np.testing.assert_allclose(outputs.attn, reference["attn"].transpose(1, 0, 2), atol=ATOL)
  np.testing.assert_allclose(outputs.p_gen, reference["p_gen"].T, atol=ATOL)
  probs = tf.nn.softmax(outputs.vocab_logits)  # [B, T, V]
  for t in range(TARGET.shape[1]):
    dist = layers.final_distribution(probs[:, t], outputs.attn[:, t], outputs.p_gen[:, t],
                                     ENC_EXT, MAX_OOVS)
    np.testing.assert_allclose(dist, reference["final_dists"][t], atol=ATOL)
  # Not a trivial match: p_gen and the attention over the first article's words vary.
  assert np.ptp(reference["p_gen"]) > 0.1 and np.ptp(reference["attn"][:, 0]) > 0.03
  assert reference["coverage_loss"] > 0.1


def test_one_decode_step_matches_the_tf1_decode_graph(reference, converted):
  """The beam search's pieces: initial attention from the initial state, then one step."""
  model = _model(*converted)
  states, features, mask, (c, h, context, _) = model.encode(ENC_INPUT, ENC_LEN)
  memory = attention.Memory(states, features, mask)
  state = model.cell.initial_attention((c, h, context, PREV_COVERAGE), memory)
  np.testing.assert_allclose(state[3], reference["decode_coverage"], atol=ATOL)
  (output, context, attn, p_gen), (c, h, _, _) = model.cell(
      model.embedding(DEC_INPUT[:, 0]), state, memory)
  probs = tf.nn.softmax(model.cell.vocab_logits(output, context))
  dist = layers.final_distribution(probs, attn, p_gen, ENC_EXT, MAX_OOVS)
  np.testing.assert_allclose(dist, reference["decode_final_dist"], atol=ATOL)
  np.testing.assert_allclose(attn, reference["decode_attn"], atol=ATOL)
  np.testing.assert_allclose(p_gen, reference["decode_p_gen"], atol=ATOL)
  np.testing.assert_allclose(c, reference["decode_c"], atol=ATOL)
  np.testing.assert_allclose(h, reference["decode_h"], atol=ATOL)


def test_tf10_names_convert_to_the_same_model(reference, tmp_path):
  hps = _hps(reference, tmp_path)
  new, old = (training_state.TrainingState.from_hparams(hps, V) for _ in range(2))
  assert tf1_checkpoint.load(reference["prefix"], new.model, new.optimizer) == STEP
  assert tf1_checkpoint.load(reference["tf10_prefix"], old.model, old.optimizer) == STEP
  for name, value in _weights(new.model).items():
    np.testing.assert_array_equal(_weights(old.model)[name], value, err_msg=name)
  for name, value in _accumulators(new.model, new.optimizer).items():
    np.testing.assert_array_equal(_accumulators(old.model, old.optimizer)[name], value,
                                  err_msg=name)


def test_lstm_gates_reordered_and_forget_bias_folded_into_the_value_only(reference, converted):
  hps, _ = converted
  trainer = train.Trainer(hps, _vocab(hps))
  trainer.restore()
  reader = tf.train.load_checkpoint(reference["prefix"])
  name = "seq2seq/decoder/attention_decoder/lstm_cell/"
  kernel, bias = reader.get_tensor(name + "kernel"), reader.get_tensor(name + "bias")
  bias_acc = reader.get_tensor(name + "bias/Adagrad")
  cell = trainer.model.cell.lstm_cell
  i, j, f, o = (slice(k * H, (k + 1) * H) for k in range(4))
  for ours, theirs in ((slice(0, H), i), (slice(H, 2 * H), f), (slice(2 * H, 3 * H), j),
                       (slice(3 * H, 4 * H), o)):
    np.testing.assert_array_equal(cell.kernel.numpy()[:, ours], kernel[:E, theirs])
    np.testing.assert_array_equal(cell.recurrent_kernel.numpy()[:, ours], kernel[E:, theirs])
    forget = 1.0 if theirs == f else 0.0
    np.testing.assert_allclose(cell.bias.numpy()[ours], bias[theirs] + forget, atol=1e-7)
    accumulator = _accumulators(trainer.model, trainer.optimizer)[cell.bias.path]
    np.testing.assert_array_equal(accumulator[ours], bias_acc[theirs])
  assert not np.allclose(bias_acc, INIT_ACC)  # one update made the accumulators non-trivial


def test_conversion_records_the_run_config(reference, converted):
  """The other modes then build the converted model without repeating its flags."""
  hps, _ = converted
  recorded = run_record.read(hps.run_dir)
  assert {k: recorded.settings[k] for k in ("hidden_dim", "emb_dim", "vocab_size", "pointer_gen",
                                            "coverage", "tokenizer", "lowercase")} == {
      "hidden_dim": H, "emb_dim": E, "vocab_size": V, "pointer_gen": True, "coverage": True,
      "tokenizer": "whitespace", "lowercase": False}
  assert recorded.vocab_path == os.path.abspath(reference["vocab"])
  decode_hps, _ = settle.from_run(config.HParams(mode="decode", log_root=hps.log_root,
                                                 exp_name=hps.exp_name), given=frozenset(),
                                  recorded=recorded)
  assert (decode_hps.hidden_dim, decode_hps.emb_dim, decode_hps.coverage,
          decode_hps.vocab_path) == (H, E, True, os.path.abspath(reference["vocab"]))


def test_training_resumes_where_the_original_stopped(reference, converted):
  """Restored by the trainer at the original's step, one of our training steps gives the
  weights and accumulators the original's next Adagrad step saved."""
  hps, path = converted
  environment.configure_tensorflow()
  trainer = train.Trainer(hps, _vocab(hps))
  assert trainer.restore() == path
  assert int(trainer.step.numpy()) == STEP
  step_fn = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, V)
  scalars = step_fn(iter(tf.data.Dataset.from_tensors(_batch())))
  np.testing.assert_allclose(scalars["loss"], reference["loss"], atol=ATOL)
  assert int(trainer.step.numpy()) == STEP + 1

  expected = training_state.TrainingState.from_hparams(hps, V)
  assert tf1_checkpoint.load(reference["next_prefix"], expected.model,
                             expected.optimizer) == STEP + 1
  ours, theirs = _weights(trainer.model), _weights(expected.model)
  for name in theirs:
    np.testing.assert_allclose(ours[name], theirs[name], atol=ATOL, err_msg=name)
  ours = _accumulators(trainer.model, trainer.optimizer)
  theirs = _accumulators(expected.model, expected.optimizer)
  for name in theirs:
    np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, err_msg=name)


def test_drop_optimizer_state(reference, converted, tmp_path):
  hps = _hps(reference, tmp_path)
  path, step = tf1_checkpoint.convert_to_run(hps, _vocab(hps), reference["prefix"],
                                             drop_optimizer_state=True)
  assert step == 0 and path.endswith("model.ckpt-0")
  trainer = train.Trainer(hps, _vocab(hps))
  assert trainer.restore() == path and int(trainer.step.numpy()) == 0
  for value in _accumulators(trainer.model, trainer.optimizer).values():
    np.testing.assert_array_equal(value, np.full_like(value, INIT_ACC))
  carried = _model(*converted)
  for name, value in _weights(carried).items():
    np.testing.assert_array_equal(_weights(trainer.model)[name], value, err_msg=name)


def test_checkpoint_without_accumulators_needs_drop_optimizer_state(reference, tmp_path):
  """An eval `bestmodel-NNN` holds the weights and global step only."""
  names = [n for n, _ in tf.train.list_variables(reference["prefix"]) if n.endswith("/Adagrad")]
  best = _rewrite(reference["prefix"], str(tmp_path / "eval" / f"bestmodel-{STEP}"), drop=names)
  hps = _hps(reference, tmp_path)
  with pytest.raises(DataError, match="no Adagrad accumulators.*--drop_optimizer_state"):
    tf1_checkpoint.convert_to_run(hps, _vocab(hps), best)
  assert not os.path.exists(hps.train_dir)
  path, _ = tf1_checkpoint.convert_to_run(hps, _vocab(hps), best, drop_optimizer_state=True)
  assert checkpoints.newest(hps.train_dir) == path


def test_baseline_checkpoint_converts_without_p_gen_and_coverage(reference, converted, tmp_path):
  """The attention baseline has neither calculate_pgen nor coverage variables."""
  extras = [n for n, _ in tf.train.list_variables(reference["prefix"])
            if "calculate_pgen" in n or "coverage" in n]
  baseline = _rewrite(reference["prefix"], str(tmp_path / "baseline" / f"model.ckpt-{STEP}"),
                      drop=extras)
  hps = _hps(reference, tmp_path, pointer_gen=False, coverage=False)
  path, step = tf1_checkpoint.convert_to_run(hps, _vocab(hps), baseline)
  model = model_lib.PointerGenerator.from_hparams(hps, V)
  assert checkpoints.restore_weights(model, path) == step == STEP
  full = _weights(_model(*converted))
  ours = _weights(model)
  assert set(full) - set(ours) == {"decoder/attention/w_c", "decoder/p_gen/kernel",
                                   "decoder/p_gen/bias"}
  for name, value in ours.items():
    np.testing.assert_array_equal(value, full[name], err_msg=name)


V_NAME = "seq2seq/decoder/attention_decoder/v"
W_C_NAME = "seq2seq/decoder/attention_decoder/coverage/w_c"


@pytest.mark.parametrize("case, message", [
    ("missing variable", f"variable {V_NAME} is missing"),
    ("missing accumulator", f"accumulator {V_NAME}/Adagrad is missing"),
    ("wrong shape", r"variable seq2seq/encoder/bidirectional_rnn/fw/lstm_cell/kernel has shape "
                    r"\[11, 20\] but .*--hidden_dim=6 give \[12, 24\].*--hidden_dim=5"),
    ("vocab mismatch", r"gives 25 vocab entries but .* has 30 rows.*--vocab_size=30"),
    ("coverage checkpoint without --coverage", "is a coverage model .*convert it with --coverage"),
    ("--coverage on a model without coverage", f"has no {W_C_NAME}.*--convert_to_coverage_model"),
    ("pointer checkpoint as baseline", "is a pointer-generator .*--pointer_gen=true"),
    ("not a checkpoint", "not a readable checkpoint"),
])
def test_errors_name_the_variable_or_flag(reference, tmp_path, case, message):
  prefix, changes = reference["prefix"], {}
  if case == "missing variable":
    prefix = _rewrite(prefix, str(tmp_path / "ckpt" / "model.ckpt-1"), drop=[V_NAME])
  elif case == "missing accumulator":
    prefix = _rewrite(prefix, str(tmp_path / "ckpt" / "model.ckpt-1"), drop=[V_NAME + "/Adagrad"])
  elif case == "wrong shape":
    changes = {"hidden_dim": 6}
  elif case == "vocab mismatch":
    changes = {"vocab_size": 25}
  elif case == "coverage checkpoint without --coverage":
    changes = {"coverage": False}
  elif case == "--coverage on a model without coverage":
    prefix = _rewrite(prefix, str(tmp_path / "ckpt" / "model.ckpt-1"),
                      drop=[W_C_NAME, W_C_NAME + "/Adagrad"])
  elif case == "pointer checkpoint as baseline":
    changes = {"pointer_gen": False}
  else:
    prefix = str(tmp_path / "nothing-here")
  hps = _hps(reference, tmp_path, **changes)
  with pytest.raises(DataError, match=message):
    tf1_checkpoint.convert_to_run(hps, _vocab(hps), prefix)
  assert not os.path.exists(hps.train_dir)  # nothing written on failure


def test_converted_run_serves_raw_text_as_stated(reference, tmp_path, capsys):
  """Converted with the paper's statement (as tools/convert_tf1_checkpoint.py does with
  --raw_tokenizer=ptb --raw_lowercase), the run exports with no tokenizer or case flag a
  SavedModel that tokenises raw English as tools/make_datafiles.py made the original's data."""
  max_enc_steps = 12
  hps = raw_text.settle(_hps(reference, tmp_path, max_enc_steps=max_enc_steps,
                             raw_tokenizer="ptb", raw_lowercase=True),
                        given={"raw_tokenizer", "raw_lowercase"})
  tf1_checkpoint.convert_to_run(hps, _vocab(hps), reference["prefix"])
  code, _, err = run_main(capsys, "--mode=export", f"--log_root={tmp_path}",
                          "--exp_name=converted", f"--export_dir={tmp_path / 'exports'}",
                          "--beam_size=2", "--min_dec_steps=1", "--max_dec_steps=3")
  assert code == 0, err
  articles = ["The mayor (who was elected) didn't say.\n\nOfficials said the U.S. plan isn't "
              "ready", "Police can't say why \"the bridge\" closed"]
  loaded = tf.saved_model.load(str(tmp_path / "exports" / str(STEP)))
  got = loaded.signatures["attention"](article=tf.constant(articles))["article_tokens"]
  made = load_tool("make_datafiles").line_tokenizer("ptb", lowercase=True)(tf.constant(articles))
  assert [[t for t in row if t] for row in got.numpy().tolist()] == [
      row.split(b" ")[:max_enc_steps] for row in made.numpy()]
  assert made.numpy()[0].startswith(b"the mayor -lrb- who was elected -rrb- did n't say .")


def test_cli_converts_into_a_run_and_refuses_to_overwrite_it(reference, tmp_path):
  args = [sys.executable, str(REPO / "tools" / "convert_tf1_checkpoint.py"),
          f"--tf1_checkpoint={reference['tf10_prefix']}", f"--vocab_path={reference['vocab']}",
          f"--log_root={tmp_path}", "--exp_name=pretrained", f"--hidden_dim={H}",
          f"--emb_dim={E}", f"--vocab_size={V}", "--pointer_gen", "--coverage",
          "--raw_tokenizer=ptb", "--raw_lowercase"]
  result = subprocess.run(args, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  assert f"model.ckpt-{STEP} (step {STEP}, Adagrad accumulators carried)" in result.stdout
  hps = _hps(reference, tmp_path, exp_name="pretrained")
  written = str(tmp_path / "pretrained" / "train" / f"model.ckpt-{STEP}")
  assert checkpoints.newest(hps.train_dir) == written
  recorded = run_record.read(hps.run_dir)
  assert (recorded.raw_tokenizer, recorded.raw_lowercase) == ("ptb", True)
  files = sorted(os.listdir(hps.train_dir))
  # A second conversion into the run (of any checkpoint) must not touch it.
  with pytest.raises(DataError, match="already holds checkpoints"):
    tf1_checkpoint.convert_to_run(hps, _vocab(hps), reference["prefix"],
                                  drop_optimizer_state=True)
  assert sorted(os.listdir(hps.train_dir)) == files
  assert checkpoints.newest(hps.train_dir) == written


if __name__ == "__main__":
  sys.path.insert(0, str(REPO / "tools" / "dev"))
  import tf1_reference  # pylint: disable=g-import-not-at-top  (sets TF_USE_LEGACY_KERAS)
  _write_tf1_reference(sys.argv[1])
