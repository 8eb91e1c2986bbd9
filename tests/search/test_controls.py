"""The decoding controls (search/controls/), every registered one with no edit here for a new
one: its settings are flags, HParams fields and lines of --help's decode group; with every
registered strategy, single-pass decode (continuous batching) and the export's serving function
give each article the one-batch search's summary with the controls applied. And each control's
own behaviour against hand-computed distributions, and bad values refused naming the flag."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen import run  # noqa: F401  (defines the flags)  pylint: disable=unused-import
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.inference import decode
from pointer_gen.inference import export
from pointer_gen.inference import summaries
from pointer_gen.search import contract
from pointer_gen.search import distribution
from pointer_gen.search import greedy
from pointer_gen.search import registry as strategies
from pointer_gen.search.controls import base
from pointer_gen.search.controls import ngram_blocking
from pointer_gen.search.controls import registry as controls
from pointer_gen.text import vocab as vocab_lib

from helpers.search_corpus import WORDS
from helpers.search_corpus import corpus as _corpus
from helpers.search_corpus import model as _model
from test_strategies import assert_decode_flags

CONTROLS = list(controls.CONTROLS)
STOP, UNK = vocab_lib.STOP_ID, vocab_lib.UNK_ID


def _every_control_on():
  """Every control's settings at their declared examples: each control on."""
  return {name: value for control in controls.CONTROLS.values()
          for name, value in control.Options.examples().items()}


def _vocab():
  """WORDS and the words the controls' examples name (a word list's example, as `.` for
  --ignore_when_blocking, names words the vocabulary must hold): what the generic tests
  decode with."""
  named = {word: None for value in _every_control_on().values() if isinstance(value, str)
           for word in value.split(",") if word and word not in WORDS}
  return vocab_lib.Vocab(WORDS + list(named))


@pytest.mark.parametrize("name", CONTROLS)
def test_settings_are_flags_hparams_fields_and_decode_help(name):
  control = controls.CONTROLS[name]
  assert_decode_flags(control.Options)
  # Each setting declares the example that turns the control on, off its default.
  values = control.Options.examples()
  assert list(values) == list(control.Options.flags())
  for field in dataclasses.fields(control.Options):
    assert values[field.name] != field.default, field.name
  vocab = _vocab()
  assert control.from_values(values, vocab).active
  assert not control.from_values({"min_dec_steps": 0}).active  # every control off by default
  # Every strategy's search applies it, and writes it out.
  for strategy in strategies.STRATEGIES:
    hps = config.HParams(search=strategy, mode="decode", **values).validated()
    assert (control.from_values(values, vocab)
            in contract.Settings.from_hparams(hps, vocab=vocab).controls)
    assert {k: strategies.written(hps)[k] for k in values} == values


@pytest.mark.parametrize("name", CONTROLS)
def test_its_example_changes_a_steps_distribution(name):
  """On with its declared examples, each control (a new one too) acts on a step of two rows:
  one at step 0, one that has generated WORDS twice over (every id of the distribution
  probable, so a control that zeroes or lowers any of them shows)."""
  vocab = _vocab()
  generated = [vocab.word2id(word) for word in WORDS] * 2
  view = _view([0, len(generated)], [[vocab_lib.PAD_ID] * len(generated), generated])
  dist = _dist(2, len(vocab) + 2)
  got = _apply(name, controls.CONTROLS[name].Options.examples(), dist, view, vocab)
  assert got.shape == dist.shape and not np.array_equal(got, dist)


def _view(step, tokens):
  return base.View(tf.constant(step, tf.int32), tf.constant(tokens, tf.int32))


def _dist(rows, width, seed=0):
  values = np.random.default_rng(seed).uniform(0.1, 1.0, (rows, width)).astype(np.float32)
  return values / values.sum(axis=1, keepdims=True)


def _apply(name, values, dist, view, vocab=None):
  return controls.CONTROLS[name].from_values(values, vocab).apply(tf.constant(dist), view).numpy()


def test_min_length_zeroes_stop_before_its_step_only():
  dist = _dist(3, 7)
  got = _apply("min_length", {"min_dec_steps": 3}, dist, _view([0, 2, 3], [[0] * 4] * 3))
  want = dist.copy()
  want[:2, STOP] = 0.0
  np.testing.assert_array_equal(got, want)  # the others exactly as they were, no renormalising


def test_ban_unk_zeroes_unk_at_every_step():
  dist = _dist(2, 9)
  got = _apply("ban_unk", {"ban_unk": True}, dist, _view([0, 5], [[0] * 6] * 2))
  want = dist.copy()
  want[:, UNK] = 0.0
  np.testing.assert_array_equal(got, want)


def test_repetition_penalty_raises_a_generated_tokens_probability_to_the_penalty():
  dist = np.array([[0.1, 0.2, 0.25, 0.05, 0.4, 0.0], [0.5, 0.1, 0.1, 0.1, 0.1, 0.1]],
                  np.float32)
  # Row 0 generated 4 then 2 (id 5, an article word, and 3 lie past its step); row 1 nothing.
  got = _apply("repetition_penalty", {"repetition_penalty": 2.0}, dist,
               _view([2, 0], [[4, 2, 5, 3], [1, 1, 1, 1]]))
  want = dist.copy()
  want[0, 4], want[0, 2] = 0.4 ** 2, 0.25 ** 2  # log p * 2: Hugging Face's rule for p < 1
  np.testing.assert_allclose(got, want, rtol=1e-6)
  np.testing.assert_array_equal(got[1], dist[1])


def test_blocking_zeroes_what_would_repeat_an_ngram_and_exempts_listed_words():
  vocab = vocab_lib.Vocab(["a", "b", "c", "."])
  a, b, c, dot = (vocab.word2id(w) for w in "abc.")
  dist = _dist(3, len(vocab) + 1)
  # Row 0: "a b c a b" -> c would repeat "a b c"; row 1: "a b c a" (a 2-token prefix "c a" never
  # continued); row 2: ". b c . b" -> c would repeat ". b c", exempt with ".".
  tokens = [[a, b, c, a, b, 0], [a, b, c, a, 0, 0], [dot, b, c, dot, b, 0]]
  view = _view([5, 4, 5], tokens)
  got = _apply("ngram_blocking", {"block_ngram_repeat": 3}, dist, view, vocab)
  want = dist.copy()
  want[0, c] = want[2, c] = 0.0
  np.testing.assert_array_equal(got, want)
  exempt = _apply("ngram_blocking", {"block_ngram_repeat": 3, "ignore_when_blocking": ".,"},
                  dist, view, vocab)
  want[2, c] = dist[2, c]
  np.testing.assert_array_equal(exempt, want)
  # Bigrams: row 1 ends in "a", and "a b" is among its bigrams.
  bigrams = _apply("ngram_blocking", {"block_ngram_repeat": 2}, dist, view, vocab)
  assert bigrams[1, b] == 0.0 and bigrams[1, c] == dist[1, c]


def test_the_shared_step_applies_sparse_controls_to_the_top_candidates_exactly():
  """Controls that zero a few ids (min length, [UNK]) are applied to the top candidates without
  the whole distribution: the same probabilities and ids as the top k of the whole one."""
  rng = np.random.default_rng(3)
  rows, width, length, k = 4, 12, 5, 3
  logits = rng.normal(size=(rows, width)).astype(np.float32)
  logits[:, STOP] = logits[:, UNK] = 3.0  # the two most probable, so the controls bite
  ext = rng.integers(4, width + 2, (rows, length)).astype(np.int32)
  ext[0, 0] = UNK
  attn = tf.nn.softmax(rng.normal(size=(rows, length)).astype(np.float32))
  p_gen = tf.constant(rng.uniform(0.2, 0.8, rows).astype(np.float32))
  memory = contract.with_copy_index(attention.Memory(None, None, None), tf.constant(ext))
  view = _view([0, 1, 2, 3], np.zeros((rows, 4), np.int32))
  settings = contract.Settings(6, 2, controls=controls.make({"min_dec_steps": 2,
                                                             "ban_unk": True}))
  strategy = greedy.GreedySearch(settings)
  probs, ids = strategy.candidates(tf.constant(logits), attn, p_gen, memory, view, k, 2)
  whole = strategy.distribution(tf.constant(logits), attn, p_gen, memory, view, 2)
  want_probs, want_ids = distribution.top_k(whole, k)
  np.testing.assert_array_equal(ids.numpy(), want_ids.numpy())
  np.testing.assert_allclose(probs.numpy(), want_probs.numpy(), rtol=1e-6)
  assert UNK not in ids.numpy() and STOP not in ids.numpy()[:2] and STOP in ids.numpy()[2:]
  np.testing.assert_array_equal(whole.numpy()[:, UNK], 0.0)


@pytest.mark.parametrize("flags_given,message", [
    ({"block_ngram_repeat": -1}, r"^--block_ngram_repeat=-1: must be >= 0$"),
    ({"repetition_penalty": 0.5}, r"^--repetition_penalty=0.5: must be >= 1.0$"),
    ({"min_dec_steps": -1}, r"^--min_dec_steps=-1: must be between 0 and --max_dec_steps"),
    ({"ignore_when_blocking": "."},
     r"^--ignore_when_blocking=\.: applies only with --block_ngram_repeat > 0$")])
def test_a_bad_value_is_refused_naming_the_flag(flags_given, message):
  with pytest.raises(DataError, match=message):
    config.HParams(mode="decode", **flags_given).validated()


def test_an_exempt_word_outside_the_vocabulary_is_refused():
  with pytest.raises(DataError, match=r"^--ignore_when_blocking=\.,zz: zz not in the vocab"):
    ngram_blocking.NgramBlocking.from_values(
        {"block_ngram_repeat": 2, "ignore_when_blocking": ".,zz"}, vocab_lib.Vocab(["."]))


def _repeats(tokens, n, exempt=()):
  """The repeats among the n-grams of `tokens` that hold no id of `exempt`."""
  grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
  grams = [gram for gram in grams if not set(gram) & set(exempt)]
  return len(grams) - len(set(grams))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(strategies.STRATEGIES))
def test_every_control_with_every_strategy(tmp_path, name):
  """Every control on at once with its declared examples (a new one too): single-pass decode
  (continuous batching in 3 slots) and the export's serving function give each article the
  one-batch search's summary, which holds no [UNK], no repeated n-gram of --block_ngram_repeat
  but those of --ignore_when_blocking's words, no [STOP] before --min_dec_steps, and no token an
  active control zeroes at its step."""
  vocab = _vocab()
  values = _every_control_on()
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(tmp_path), 7, seed=2),
      log_root=str(tmp_path), exp_name="run", hidden_dim=5, emb_dim=6, search=name,
      vocab_size=len(vocab), batch_size=3, max_enc_steps=10, max_dec_steps=8,
      coverage=True, compiled_attention=False, pointer_gen=True, **values).validated()
  model = _model(hps, vocab)
  result = decode.SinglePassDecoder(hps, vocab, model, "model.ckpt-0").run()
  directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "model.ckpt-0"))
  with open(os.path.join(directory, "metrics.json"), encoding="utf-8") as f:
    written = json.load(f)["flags"]
  assert {k: written[k] for k in values} == values
  decoded = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                  encoding="utf-8").read().split() for i in range(result["num_examples"])]

  _, dataset = data.input_pipeline(hps.replace(batch_size=7), vocab, single_pass=True)
  (batch,) = list(dataset)
  search = summaries.make_search(model, strategies.make(
      hps, contract.Settings.from_hparams(hps, vocab=vocab)))
  found = summaries.run_search(search, batch)
  alone = [summaries.DecodedSummary(vocab, f, example, hps.reads).words
           for f, example in zip(found, summaries.examples([batch]))]
  assert result["num_examples"] == 7 and decoded == alone

  vocab_file = tmp_path / export.VOCAB_ASSET
  vocab_file.write_text("".join(word + "\n" for word in vocab.words), encoding="utf-8")
  with open(hps.data_path, encoding="utf-8") as f:
    articles = [json.loads(line)["article"] for line in f]
  summarizer = export.ServingModule(model, str(vocab_file), hps,
                                 export.recorded_settings(hps, len(vocab), "model.ckpt-0", 0),
                                 vocab)
  served = summarizer.summarize(tf.constant(articles))["summary"].numpy()
  assert [s.decode("utf-8").split() for s in served] == alone

  n = values["block_ngram_repeat"]
  exempt = {vocab.word2id(word) for word in values["ignore_when_blocking"].split(",")}
  for f in found:
    tokens = list(f.tokens[:int(f.length)])
    assert UNK not in tokens and _repeats(tokens, n, exempt) == 0, tokens
    assert STOP not in tokens[:values["min_dec_steps"]], tokens
  assert len({len(words) for words in alone}) > 1
  # From the controls themselves (a new one's too): no token of a summary is one an active
  # control zeroes at its step, given the tokens before it.
  width = len(vocab) + int(np.max(batch.num_oovs))
  for f in found:
    length, tokens = int(f.length), np.asarray(f.tokens)
    before = np.where(np.arange(hps.max_dec_steps)[None, :] < np.arange(length)[:, None],
                      tokens[None, :hps.max_dec_steps], vocab_lib.PAD_ID)  # [length, T]
    view = _view(np.arange(length), before)
    for control in controls.make(values, vocab):
      kept = control.apply(tf.ones([length, width]), view).numpy()  # [length, width]
      assert (kept[np.arange(length), tokens[:length]] > 0).all(), (control, tokens)
