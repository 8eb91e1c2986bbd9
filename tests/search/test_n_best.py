"""The beam search's n best summaries (--n_best) and its coverage penalty
(--coverage_penalty, --coverage_penalty_beta): the n best are the search's results in rank
order, in the search, single-pass decode's n_best.jsonl and the export's outputs; the penalty
against hand-computed values and in the winner's score; bad values refused naming the flag."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.inference import decode
from pointer_gen.inference import export
from pointer_gen.search import beam as beam_search
from pointer_gen.search import contract
from pointer_gen.text import vocab as vocab_lib

from test_beam_search import _articles
from test_beam_search import _random_model
from helpers.search_corpus import WORDS
from helpers.search_corpus import corpus as _corpus
from helpers.search_corpus import model as _model

BEAM, STEPS = 3, 7


def _final_state(strategy, model, articles):
  enc_input, enc_len, ext, num_oovs = articles
  memory, state = strategy.start(model, enc_input, enc_len, ext)
  while not np.all(strategy.finished(state).numpy()):
    state = strategy.advance(model, memory, state, num_oovs)
  return state


def test_n_best_are_the_searchs_results_in_rank_order():
  model = _random_model(pointer_gen=True, coverage=True, seed=2)
  enc_input, enc_len, ext, num_oovs = _articles(5, 9, 2)
  # Articles 2-4 without the [STOP]s that end every hypothesis early.
  for ids in (enc_input, ext):
    ids[2:][ids[2:] == vocab_lib.STOP_ID] = 5
  articles = enc_input, enc_len, ext, num_oovs
  # Few steps: some articles end with fewer results than beams.
  strategy = beam_search.BeamSearch(contract.Settings(4, 1),
                                    beam_search.BeamSettings(beam_size=BEAM, n_best=BEAM))
  state = _final_state(strategy, model, articles)
  got = strategy.winners(state).map(lambda t: t.numpy())
  beam = state.hypotheses
  results = 0
  for n in range(5):
    done = int(beam.num_done[n])
    results += done
    # The results by score (slots in the order found), then the live hypotheses, best first.
    order = sorted(range(done), key=lambda i: -beam.done_score[n, i].numpy())
    want = [(beam.done.tokens[n, i].numpy(), beam.done_score[n, i].numpy()) for i in order]
    live = beam_search._score(beam.live.log_prob[n], state.step[n], None).numpy()
    want += [(beam.live.tokens[n, i].numpy(), live[i]) for i in np.argsort(-live, kind="stable")]
    for rank in range(BEAM):
      np.testing.assert_array_equal(got.n_best.tokens[n, rank], want[rank][0])
      assert got.n_best.score[n, rank] == pytest.approx(want[rank][1], rel=1e-6)
    # The first is the winner.
    np.testing.assert_array_equal(got.n_best.tokens[n, 0], got.tokens[n])
    assert got.n_best.score[n, 0] == got.score[n]
  assert 0 < results < 5 * BEAM  # some from results, some from live hypotheses


def test_the_coverage_penalty_against_hand_computed_values():
  coverage = tf.constant([[[0.5, 1.5, 2.0, 0.0], [1.0, 0.25, 0.0, 0.0]]])  # [1, 2, 4]
  summary = beam_search._coverage_penalty(coverage, "summary", 2.0).numpy()
  np.testing.assert_allclose(summary, [[2.0 * (0.5 + 1.0), 0.0]])
  wu = beam_search._coverage_penalty(coverage, "wu", 2.0).numpy()
  np.testing.assert_allclose(wu, [[-2.0 * np.log(0.5), -2.0 * np.log(0.25)]], rtol=1e-6)


@pytest.mark.parametrize("form", ["summary", "wu"])
def test_the_winners_score_is_its_average_log_prob_less_its_coverage_penalty(form):
  model = _random_model(pointer_gen=True, coverage=False, seed=1)
  enc_input, enc_len, ext, num_oovs = _articles(4, 9, 1)
  options = beam_search.BeamSettings(beam_size=BEAM, coverage_penalty=form,
                                     coverage_penalty_beta=0.7)
  strategy = beam_search.BeamSearch(contract.Settings(STEPS, 1, keep_attention=True), options)
  got = strategy.search(model, enc_input, enc_len, ext, num_oovs).map(lambda t: t.numpy())
  plain = beam_search.BeamSearch(contract.Settings(STEPS, 1), beam_search.BeamSettings(BEAM))
  unpenalised = plain.search(model, enc_input, enc_len, ext, num_oovs).tokens.numpy()
  for n in range(4):
    length = int(got.length[n])
    coverage = got.attn[n, :length].sum(axis=0)[None, None, :]  # [1, 1, L]
    penalty = beam_search._coverage_penalty(tf.constant(coverage), form, 0.7).numpy()[0, 0]
    assert got.score[n] == pytest.approx(got.log_prob[n] / (length + 1) - penalty,
                                            rel=1e-5, abs=1e-5)
  assert not np.array_equal(got.tokens, unpenalised)  # the penalty changed some ranking


@pytest.mark.parametrize("given,message", [
    ({"n_best": 5}, r"^--n_best=5: must be <= --beam_size=4$"),
    ({"n_best": 0}, r"^--n_best=0: must be positive$"),
    ({"coverage_penalty": "gnmt"}, r"^--coverage_penalty=gnmt: expected one of none, summary"),
    ({"coverage_penalty_beta": 5.0},
     r"^--coverage_penalty_beta=5: applies only with --coverage_penalty=summary or wu$"),
    ({"coverage_penalty": "wu", "coverage_penalty_beta": -1.0},
     r"^--coverage_penalty_beta=-1.0: must be >= 0.0$")])
def test_a_bad_value_is_refused_naming_the_flag(given, message):
  with pytest.raises(DataError, match=message):
    config.HParams(mode="decode", **given).validated()


@pytest.mark.slow
def test_single_pass_decode_and_the_export_give_the_n_best(tmp_path):
  """n_best.jsonl: a line an article, its summaries in rank order, the first the decoded file's;
  the export's n_best outputs the same. --n_best=1 writes no such file and the same summaries."""
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(tmp_path), 5, seed=0),
      log_root=str(tmp_path), exp_name="run", hidden_dim=5, emb_dim=6, vocab_size=len(vocab),
      batch_size=2, max_enc_steps=10, max_dec_steps=6, min_dec_steps=1, coverage=True,
      compiled_attention=False, beam_size=3, n_best=3).validated()
  model = _model(hps, vocab)
  decoded = {}
  for n_best in (1, 3):
    run = hps.replace(n_best=n_best, exp_name=f"run{n_best}")
    decode.SinglePassDecoder(run, vocab, model, "model.ckpt-0").run()
    directory = os.path.join(run.run_dir, decode.decode_dir_name(run, "model.ckpt-0"))
    decoded[n_best] = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                            encoding="utf-8").read() for i in range(5)]
    assert os.path.exists(os.path.join(directory, "n_best.jsonl")) == (n_best > 1)
  assert directory.endswith("_3best_ckpt-0") and decoded[1] == decoded[3]
  with open(os.path.join(directory, "n_best.jsonl"), encoding="utf-8") as f:
    lines = [json.loads(line) for line in f]
  assert [line["index"] for line in lines] == list(range(5))
  for line, text in zip(lines, decoded[3]):
    assert len(line["n_best"]) == 3 and line["n_best"][0]["summary"].split() == text.split()
  assert any(len({entry["summary"] for entry in line["n_best"]}) > 1 for line in lines)

  vocab_file = tmp_path / export.VOCAB_ASSET
  vocab_file.write_text("".join(word + "\n" for word in vocab.words), encoding="utf-8")
  with open(hps.data_path, encoding="utf-8") as f:
    articles = [json.loads(line)["article"] for line in f]
  summarizer = export.ServingModule(
      model, str(vocab_file), hps, export.recorded_settings(hps, len(vocab), "model.ckpt-0", 0))
  served = {k: v.numpy() for k, v in summarizer.summarize(tf.constant(articles)).items()}
  for n, line in enumerate(lines):
    assert [s.decode("utf-8") for s in served["n_best_summaries"][n]] == [
        entry["summary"] for entry in line["n_best"]]
    np.testing.assert_allclose(served["n_best_scores"][n],
                               [entry["score"] for entry in line["n_best"]], rtol=1e-5)
