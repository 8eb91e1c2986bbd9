"""Sampling (--search=sample): --top_k=1 and a temperature near zero give greedy decoding's
summaries; a seed gives the same summaries in every run, batch and mode (single-pass decode's
slots, the one-batch search of continuous decode and eval's samples, the export) and another
seed others; one step's draws follow the softmax of the kept tokens (a chi-square test), and
--top_k and --top_p keep exactly the tokens they should."""

import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.inference import decode
from pointer_gen.inference import export
from pointer_gen.inference import summaries
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.search import sample
from pointer_gen.text import vocab as vocab_lib

from test_search import WORDS
from test_search import _corpus
from test_search import _model

NUM_ARTICLES = 8


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  root = tmp_path_factory.mktemp("sample")
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(root), NUM_ARTICLES, seed=3),
      log_root=str(root), exp_name="run", hidden_dim=5, emb_dim=6, vocab_size=len(vocab),
      batch_size=3, max_enc_steps=10, max_dec_steps=8, min_dec_steps=2, coverage=True,
      compiled_attention=False, search="sample", raw_tokenizer="whitespace",
      raw_lowercase=False)
  model = _model(hps, vocab)
  _, dataset = data.input_pipeline(hps.replace(batch_size=NUM_ARTICLES), vocab, single_pass=True)
  (batch,) = list(dataset)
  return {"hps": hps, "vocab": vocab, "model": model, "batch": batch, "root": root,
          "searches": {}}


def _single_pass(setup, run="first", **changes):
  """Single-pass decode's summaries (lists of words) and per_example lines, in a run directory
  of their own (`run` tells two of the same settings apart)."""
  hps = setup["hps"].replace(**changes)
  hps = hps.replace(log_root=os.path.join(str(setup["root"]), strategies.dir_name(hps)),
                    exp_name=run)
  decode.SinglePassDecoder(hps, setup["vocab"], setup["model"], "model.ckpt-0").run()
  directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "model.ckpt-0"))
  with open(os.path.join(directory, "per_example.jsonl"), encoding="utf-8") as f:
    per_example = [json.loads(line) for line in f]
  summaries = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                    encoding="utf-8").read().split() for i in range(len(per_example))]
  return summaries, per_example


def _searched(setup, rows=None, **changes):
  """Continuous decode's (and eval's samples') search of the articles `rows` of the batch (all
  by default), attention kept: a list of winners. The search of the same settings is traced
  once for the module (its signature takes any batch and width)."""
  batch = setup["batch"]
  if rows is not None:
    width = int(max(batch.enc_len.numpy()[rows]))
    batch = tf.nest.map_structure(
        lambda value: tf.gather(value, rows)[:, :width] if value.shape.rank == 2
        else tf.gather(value, rows), batch)
  key = tuple(sorted(changes.items()))
  if key not in setup["searches"]:
    hps = setup["hps"].replace(**changes)
    setup["searches"][key] = summaries.make_search(setup["model"], strategies.make(
        hps, contract.Settings.from_hparams(hps, keep_attention=True)))
  return summaries.run_search(setup["searches"][key], batch)


def _tokens(results):
  return [list(r.tokens[:int(r.length)]) for r in results]


def test_top_k_one_is_greedy_decoding(setup):
  sampled, sampled_lines = _single_pass(setup, top_k=1)
  greedy, greedy_lines = _single_pass(setup, search="greedy")
  assert sampled == greedy and len({len(s) for s in greedy}) > 1
  for mine, theirs in zip(sampled_lines, greedy_lines):
    assert mine["steps"] == theirs["steps"]
    assert mine["p_gen_mean"] == pytest.approx(theirs["p_gen_mean"], rel=1e-6)
  for mine, theirs in zip(_searched(setup, top_k=1), _searched(setup, search="greedy")):
    for key, value in theirs._asdict().items():
      if value is not None:
        np.testing.assert_allclose(getattr(mine, key), value, rtol=1e-6, atol=1e-6,
                                   err_msg=key)


def test_a_temperature_near_zero_is_greedy_decoding(setup):
  """Every token of the final distribution a candidate (no --top_k), sharpened to its
  largest."""
  cold, greedy = _searched(setup, temperature=1e-4), _searched(setup, search="greedy")
  assert _tokens(cold) == _tokens(greedy)
  np.testing.assert_allclose([r.log_prob for r in cold], [r.log_prob for r in greedy],
                             rtol=1e-5)
  # At temperature 1 the draws leave the most probable token somewhere.
  assert _tokens(_searched(setup)) != _tokens(greedy)


def test_a_seed_gives_the_same_summaries_in_every_run_batch_and_mode(setup):
  seeded = dict(sample_seed=11, top_p=0.95)
  first, _ = _single_pass(setup, **seeded)
  again, _ = _single_pass(setup, run="second", **seeded)
  assert first == again
  vocab, hps = setup["vocab"], setup["hps"].replace(**seeded)
  examples = list(summaries.examples([setup["batch"]]))
  searched = [summaries.DecodedSummary(vocab, result, example, hps.reads).words
              for result, example in zip(_searched(setup, **seeded), examples)]
  assert searched == first
  # An article's summary whatever it is decoded beside, at another padding width.
  alone = _searched(setup, rows=[5, 0, 2], **seeded)
  assert _tokens(alone) == [_tokens(_searched(setup, **seeded))[i] for i in (5, 0, 2)]
  other, _ = _single_pass(setup, sample_seed=12, top_p=0.95)
  assert other != first and sum(a == b for a, b in zip(other, first)) < NUM_ARTICLES // 2


@pytest.mark.slow
def test_the_export_draws_decodes_summaries_with_its_seed(setup, tmp_path):
  """The serving graph (in process) of --search=sample: decode's summaries for the seed fixed at
  export, which its `settings` signature names."""
  vocab, model = setup["vocab"], setup["model"]
  vocab_file = tmp_path / export.VOCAB_ASSET
  vocab_file.write_text("".join(word + "\n" for word in vocab.words), encoding="utf-8")
  with open(setup["hps"].data_path, encoding="utf-8") as f:
    articles = [json.loads(line)["article"] for line in f]
  served = {}
  for seed in (11, 12):
    hps = setup["hps"].replace(sample_seed=seed)
    settings = export.recorded_settings(hps, len(vocab), "model.ckpt-0", 0)
    summarizer = export.ServingModule(model, str(vocab_file), hps, settings)
    written = {k: v.numpy() for k, v in summarizer.settings().items()}
    assert written["search"] == b"sample" and written["sample_seed"] == seed
    assert written["top_k"] == 0 and written["top_p"] == written["temperature"] == 1.0
    served[seed] = [s.decode("utf-8").split()
                    for s in summarizer.summarize(tf.constant(articles))["summary"].numpy()]
  decoded, _ = _single_pass(setup, sample_seed=11)
  assert served[11] == decoded and served[12] != decoded


def _chi_square_bound(degrees):
  """The chi-square statistic's 99.9th percentile for `degrees` of freedom
  (Wilson-Hilferty)."""
  z = 3.0902  # the standard normal's 99.9th percentile
  return degrees * (1 - 2 / (9 * degrees) + z * math.sqrt(2 / (9 * degrees))) ** 3


@pytest.mark.parametrize("options,kept", [
    (sample.SampleSettings(), [0, 1, 3, 4, 5]),
    (sample.SampleSettings(temperature=0.7), [0, 1, 3, 4, 5]),
    (sample.SampleSettings(top_k=3, temperature=1.5), [0, 1, 3]),
    (sample.SampleSettings(top_p=0.6), [0, 1]),
    # Tempered, the top 4 hold 0.548, 0.304, 0.097, 0.051: the first two reach 0.8.
    (sample.SampleSettings(top_k=4, top_p=0.8, temperature=0.8), [0, 1])])
def test_one_steps_draws_follow_the_softmax_of_the_kept_tokens(options, kept):
  """20,000 draws of one step (one article key each) from six candidates in decreasing order,
  the third not allowed (a [STOP] too early): the kept tokens, and only they, are drawn, at the
  frequencies of softmax(log p / temperature) over them."""
  probs = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04], np.float32)
  allowed = np.array([True, True, False, True, True, True])
  draws = 20_000
  weights = sample.kept_weights(tf.constant(np.tile(probs, [draws, 1])),
                                tf.constant(np.tile(allowed, [draws, 1])), options)
  keys = tf.range(draws, dtype=tf.int64) * 7919
  chosen = sample.draw(weights, sample.uniforms(options.sample_seed, keys,
                                                tf.fill([draws], 4))).numpy()
  counts = np.bincount(chosen, minlength=len(probs))
  assert sorted(np.flatnonzero(counts)) == kept
  # Independently: the tokens top_k and top_p keep, then the tempered, renormalised softmax.
  tempered = np.exp(np.log(probs[kept]) / options.temperature)
  expected = tempered / tempered.sum()
  np.testing.assert_allclose(weights.numpy()[0, kept], expected, rtol=1e-5)
  chi_square = float(np.sum((counts[kept] - draws * expected) ** 2 / (draws * expected)))
  assert chi_square < _chi_square_bound(len(kept) - 1), (counts, expected)


def test_top_p_keeps_the_token_that_crosses_it():
  """Candidates 0.5, 0.3, 0.2: top_p 0.5 keeps the first alone (it holds 0.5), 0.51 the first
  two, 1.0 all."""
  probs = tf.constant([[0.5, 0.3, 0.2]])
  allowed = tf.constant([[True, True, True]])
  for top_p, want in ((0.5, [1.0, 0.0, 0.0]), (0.51, [0.625, 0.375, 0.0]),
                      (1.0, [0.5, 0.3, 0.2])):
    weights = sample.kept_weights(probs, allowed, sample.SampleSettings(top_p=top_p))
    np.testing.assert_allclose(weights.numpy()[0], want, rtol=1e-6, err_msg=str(top_p))


def test_a_draw_never_picks_a_token_of_weight_zero():
  weights = tf.constant([[0.0, 0.5, 0.0, 0.5, 0.0]] * 5)
  uniform = tf.constant([0.0, 0.25, 0.5, 0.75, 1.0 - 2.0 ** -48], tf.float64)
  assert sample.draw(weights, uniform).numpy().tolist() == [1, 1, 3, 3, 3]


def test_article_keys_ignore_padding_and_tell_articles_apart():
  ids = tf.constant([[5, 6, 7, 0, 0], [5, 6, 7, 9, 0], [6, 5, 7, 0, 0]])
  mask = tf.constant([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], tf.float32)
  keys = sample.article_keys(ids, mask).numpy()
  narrow = sample.article_keys(ids[:1, :3], mask[:1, :3]).numpy()
  assert keys[0] == narrow[0] and len(set(keys.tolist())) == 3
  u = sample.uniforms(0, tf.constant([keys[0]] * 3), tf.constant([0, 1, 0])).numpy()
  assert u[0] == u[2] != u[1] and ((0 <= u) & (u < 1)).all()


def test_settings_are_checked_and_named_in_the_directory():
  unit = r"must be in \(0, 1\]"
  for flag, value, problem in (("top_k", -1, "must be >= 0"), ("top_p", 0.0, unit),
                               ("top_p", 1.5, unit), ("temperature", 0.0, "must be positive")):
    with pytest.raises(DataError, match=f"^--{flag}={value}: {problem}$"):
      config.HParams(search="sample", **{flag: value}).validated()
  hps = config.HParams(search="sample", min_dec_steps=2, max_dec_steps=6)
  assert strategies.dir_name(hps) == "sample_2mindec_6maxdec"
  assert strategies.dir_name(hps.replace(top_k=5, top_p=0.9, temperature=0.7, sample_seed=3)) == (
      "sample_2mindec_6maxdec_top5_topp0.9_temp0.7_seed3")
  with pytest.raises(DataError, match="--top_k is a setting of --search=sample, not of "
                                      "--search=beam"):
    strategies.check_flags(config.HParams(), {"top_k"})
