"""Every registered attention implementation (attention.IMPLEMENTATIONS) against `eager`, the
paper's equations differentiated by TensorFlow: the attention distribution, the context, the
coverage update and, for those that train, the loss and every weight's gradient;
with and without coverage, in float32 and mixed_bfloat16, at training's shape (the
teacher-forced pass, through PointerGenerator.call with its late gradients), beam search's
(K rows an article, the memory laid out and kept as the search keeps it) and an export's
(the same traced with unknown sizes); and the flags that choose them. An edit to `eager` alone
fails here for the others; a registered implementation is taken up with no edit here."""

import contextlib
import functools

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen import run  # noqa: F401  (defines the flags)  pylint: disable=unused-import
from pointer_gen.attention import registry
from pointer_gen.base import precision
from pointer_gen.base.errors import DataError
from pointer_gen.data.batch import Batch
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.model.model_config import ModelConfig
from pointer_gen.search import contract as search_lib

N, K, L, T = 3, 2, 7, 3  # articles, rows an article (beams), positions, decoder steps
V, E, H = 11, 5, 4  # vocab, embedding, hidden (the attention's units: 2H)
ENC_LEN = np.array([7, 5, 3], np.int32)
FAST = [name for name in attention.IMPLEMENTATIONS if name != "eager"]
PRECISIONS = ["float32", "mixed_bfloat16"]


def _assert_close(got, want, what, want32=None):
  """In float32, `got` is `want` (eager's) to float32 rounding. In mixed_bfloat16 (8
  significant bits: each rounding 2^-9 of the value) an implementation rounds in other places
  and orders than eager, and a gradient summed over every position with much cancellation
  (w_c's) may be 15 % off float32's in either: `got` must be as close to eager's float32
  result `want32` as eager's own bfloat16 result is, to a factor of 3 and 2^-8 of its norm
  (seen: 1.7 times, the encoder's bias gradients, 0.9 % off float32's against eager's 0.5 %).
  An error in kind (a factor, a missing term) is ~100 %."""
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  if want32 is None:
    scale = max(float(np.abs(want).max()), 1e-3)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale, err_msg=what)
    return
  want32 = np.asarray(want32, np.float64)
  error, eager_error = np.linalg.norm(got - want32), np.linalg.norm(want - want32)
  assert error <= 3 * eager_error + 2**-8 * np.linalg.norm(want32), (
      f"{what}: {error:.3g} from float32's, eager's bfloat16 {eager_error:.3g}")


def _model(coverage, policy):
  model = model_lib.PointerGenerator(
      ModelConfig(vocab_size=V, emb_dim=E, hidden_dim=H, pointer_gen=True, coverage=coverage),
      dtype=precision.policy(policy))
  model.build_all()
  rng = np.random.default_rng(7)
  for var in model.weights:
    var.assign(rng.normal(0.0, 0.5, var.shape).astype(np.float32))
  return model


def _batch(rows):
  rng = np.random.default_rng(3)
  enc_len = np.resize(ENC_LEN, rows)
  ext = rng.integers(4, V + 2, (rows, L)).astype(np.int32)  # ids V, V+1: article OOVs
  ext[np.arange(L)[None, :] >= enc_len[:, None]] = 0
  target = rng.integers(4, V + 2, (rows, T)).astype(np.int32)
  dec_len = np.resize(np.array([3, 2, 1], np.int32), rows)
  target[np.arange(T)[None, :] >= dec_len[:, None]] = 0
  in_vocab = lambda ids: np.where(ids >= V, 1, ids).astype(np.int32)
  dec_input = np.concatenate([np.full((rows, 1), 2, np.int32), in_vocab(target)[:, :-1]], 1)
  return Batch(enc_input=in_vocab(ext), enc_input_ext=ext, enc_len=enc_len,
               num_oovs=np.full([rows], 2, np.int32), dec_input=dec_input, target=target,
               dec_len=dec_len)


@functools.lru_cache(maxsize=None)
def _references(run, coverage, policy):
  """eager's results in `policy` and, in mixed_bfloat16, in float32: made once for all the
  implementations (the models' weights come from the same seed)."""
  eager = attention.get("eager")
  if run is _search_step:
    run = lambda model, implementation, _: _search_step(model, implementation, "beam")
  return (run(_model(coverage, policy), eager, coverage),
          run(_model(coverage, "float32"), eager, coverage) if policy != "float32" else {})


def _training(model, implementation, coverage):
  """The teacher-forced pass as train.py runs it: its outputs, loss and every gradient."""
  batch = _batch(N)
  # Those that do not train are not differentiated (the XLA kernel cannot be, under a tape).
  tape = tf.GradientTape() if implementation.differentiable else None
  with tape or contextlib.nullcontext():
    outputs = model(batch, real_steps_only=True, implementation=implementation)
    per_example = losses.compute_losses(outputs, batch, V, coverage)
    loss = losses.batch_losses(per_example, True, coverage, 0.7).total_loss
  result = {"attn": outputs.attn, "p_gen": outputs.p_gen,
            "vocab_logits": outputs.real_vocab_logits, "loss": loss}
  if tape:
    gradients = tape.gradient(loss, model.trainable_variables)
    result.update({var.path: tf.convert_to_tensor(g) for var, g in
                   zip(model.trainable_variables, gradients) if g is not None})
  return {name: tf.cast(value, tf.float32).numpy() for name, value in result.items()}


@pytest.mark.parametrize("policy", PRECISIONS)
@pytest.mark.parametrize("coverage", [True, False], ids=["coverage", "no_coverage"])
@pytest.mark.parametrize("name", FAST)
def test_training_shape(name, coverage, policy):
  """The teacher-forced pass (N articles, T steps): attention, p_gen, logits, loss, and the
  gradient of every weight (the embedding, whose rows are the model's input, among them) for
  the implementations that train; the encoder's weights get the attention's gradients for
  its states, W_h for its features."""
  model = _model(coverage, policy)
  implementation = attention.get(name)
  got = _training(model, implementation, coverage)
  want, want32 = _references(_training, coverage, policy)
  if implementation.differentiable:
    assert len(got) == len(want) == 4 + len(model.trainable_variables)
  for what, value in got.items():
    _assert_close(value, want[what], what, want32.get(what))
    assert np.abs(want[what]).max() > 1e-5, what


def _step(model, implementation, memory, state, rows):
  """One decoder step of N*K rows: the attention, the context, p_gen and the state."""
  embedded = tf.cast(tf.reshape(tf.range(N * K * E, dtype=tf.float32) % 7 - 3.0, [N * K, E])
                     / 3.0, model.compute_dtype)  # [N*K, E]
  (_, context, attn, p_gen), new_state = model.cell(
      embedded, state, memory, implementation=implementation, rows=rows)
  return {"attn": attn, "context": context, "p_gen": p_gen, "coverage": new_state[3]}


def _search_step(model, implementation, shape):
  """A search's step 0 with the memory kept as the search keeps it for `implementation`
  (search.encode, its memory layout, tile_rows), traced with unknown sizes for "export"."""
  batch = _batch(N)
  searched = attention.SearchAttention(implementation, implementation)

  def run(enc_input, enc_len):
    memory, state = search_lib.encode(model, enc_input, enc_len,
                                      search_lib.Settings(T, 0), searched)
    memory, state = search_lib.tile_rows(implementation.memory(memory), state, K,
                                         implementation)
    # A coverage that differs per row, as the hypotheses' do.
    state = state[:3] + (state[3] * tf.linspace(0.5, 2.0, N * K)[:, None],)
    return _step(model, implementation, memory, state, K)

  if shape == "export":
    ids = tf.TensorSpec([None, None], tf.int32)
    run = tf.function(run, autograph=False,
                      input_signature=[ids, tf.TensorSpec([None], tf.int32)])
  result = run(batch.enc_input, batch.enc_len)
  return {name: tf.cast(value, tf.float32).numpy() for name, value in result.items()}


@pytest.mark.parametrize("policy", PRECISIONS)
@pytest.mark.parametrize("coverage", [True, False], ids=["coverage", "no_coverage"])
@pytest.mark.parametrize("shape", ["beam", "export"])
@pytest.mark.parametrize("name", FAST)
def test_search_shapes(name, shape, coverage, policy):
  """A search's step over N articles of K rows each: the step-0 attention (search.encode) and
  one step's attention, context, p_gen and coverage update, against eager's with the memory
  repeated for every row."""
  model = _model(coverage, policy)
  got = _search_step(model, attention.get(name), shape)
  want, want32 = _references(_search_step, coverage, policy)
  for what, value in got.items():
    assert value.shape == want[what].shape, what
    _assert_close(value, want[what], what, want32.get(what))
    assert np.abs(want[what]).max() > 1e-5, what
  # The rows of one article differ (their coverage does), and padding gets no attention.
  assert np.abs(want["attn"][0] - want["attn"][1]).max() > 1e-4 or not coverage
  assert np.all(got["attn"][np.repeat(np.arange(L)[None, :] >= ENC_LEN[:, None], K, 0)] == 0)


def test_auto_runs_what_each_context_relies_on():
  """auto's table names a registered implementation for every context: one that trains where
  training's pass runs and one without XLA in the export (any TensorFlow runtime serves it).
  Each older flag, at its default, leaves auto's choice in its context as the table's, and
  set the other way chooses the other side of XLA there and nothing elsewhere."""
  assert attention.auto("train").differentiable
  assert not attention.auto("export").uses_xla
  defaults = config.HParams()
  for flag, (context, other) in registry.SPELLINGS.items():
    assert attention.auto(context, defaults) is attention.auto(context)
    flipped = defaults.replace(**{flag: not getattr(defaults, flag)})
    assert attention.auto(context, flipped) is attention.get(other)
    assert attention.get(other).uses_xla != attention.auto(context).uses_xla
    for elsewhere in set(attention.CONTEXTS) - {context}:
      assert attention.auto(elsewhere, flipped) is attention.auto(elsewhere)
  with pytest.raises(ValueError, match="attention context 'serve'"):
    attention.auto("serve")


def test_the_help_names_every_implementation_and_auto_s_choices():
  """--attention_implementation's help is made from the registry: each implementation's
  docstring, and auto's choice in each context; the older flags' help says what they spell."""
  text = registry.implementation_help()
  for name, implementation in attention.IMPLEMENTATIONS.items():
    described = " ".join(implementation.__doc__.split()).rstrip(".")
    assert f"{name}: {described[0].lower()}{described[1:]}" in text
  for context, where in attention.CONTEXTS.items():
    assert f"{attention.auto(context).name} for {where}" in text
  for flag in registry.SPELLINGS:
    assert registry.spelling_help(flag) in flags.FLAGS[flag].help


@pytest.mark.parametrize("name", list(attention.IMPLEMENTATIONS))
def test_the_flag_and_its_contradictions(name):
  """--attention_implementation names a registered implementation; given explicitly, it applies
  in every context, --compiled_attention (decode) and --export_compiled_attention (export) may
  be left out or agree with it (XLA or not), and only one with a gradient trains."""
  hps = config.HParams
  implementation = attention.get(name)
  with pytest.raises(DataError, match=r"--attention_implementation=flash: expected auto or "
                     r"one of " + ", ".join(attention.IMPLEMENTATIONS) + "$"):
    hps(attention_implementation="flash").validated()
  for context in attention.CONTEXTS:
    assert attention.chosen(hps(attention_implementation=name), context) is implementation
  check = attention.check
  check(hps(mode="decode", attention_implementation=name), set())
  for flag, (mode, _) in registry.SPELLINGS.items():
    agreeing = hps(mode=mode, attention_implementation=name,
                   **{flag: implementation.uses_xla})
    check(agreeing, {flag})
    other_mode = "export" if mode == "decode" else "decode"
    check(agreeing.replace(mode=other_mode, **{flag: not implementation.uses_xla}), {flag})
    spelled = f"--{'no' if implementation.uses_xla else ''}{flag}"
    with pytest.raises(DataError, match=fr"{spelled} contradicts "
                       fr"--attention_implementation={name}, which "
                       fr"{'uses' if implementation.uses_xla else 'does not use'} XLA"):
      check(agreeing.replace(**{flag: not implementation.uses_xla}), {flag})
    check(hps(mode=mode, **{flag: not implementation.uses_xla}), {flag})  # auto: any
  train = hps(mode="train", attention_implementation=name)
  if implementation.differentiable:
    check(train, set())
  else:
    trainable = ", ".join(n for n, i in attention.IMPLEMENTATIONS.items() if i.differentiable)
    with pytest.raises(DataError, match=fr"--attention_implementation={name} has no gradient "
                       fr"and cannot train \(--mode=train\): use auto or one of {trainable}"):
      check(train, set())
