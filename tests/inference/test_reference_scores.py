"""--score_references: each reference summary's score under the model, as training's loss of
the same batch, written as scores.jsonl and scores.json."""

import json
import os

import numpy as np
import pytest

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.inference import reference_scores
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate

from helpers.search_corpus import WORDS
from helpers.search_corpus import corpus as _corpus
from helpers.search_corpus import model as _model


def test_the_scores_are_trainings_loss_of_the_same_batch(tmp_path):
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, score_references=True,
      data_path=_corpus(str(tmp_path), 7, seed=1), log_root=str(tmp_path), exp_name="run",
      hidden_dim=5, emb_dim=6, vocab_size=len(vocab), batch_size=7, max_enc_steps=10,
      max_dec_steps=6, min_dec_steps=0, coverage=True, compiled_attention=False).validated()
  model = _model(hps, vocab)
  directory = tmp_path / "scores"
  result = reference_scores.run(hps, vocab, model, "model.ckpt-3", str(directory))
  with open(directory / reference_scores.SCORES, encoding="utf-8") as f:
    lines = [json.loads(line) for line in f]
  with open(directory / reference_scores.MEANS, encoding="utf-8") as f:
    assert json.load(f) == result

  _, dataset = data.input_pipeline(hps, vocab, single_pass=True)
  (batch,) = list(dataset)
  _, scalars = evaluate.make_score_fn(model, hps, len(vocab))(batch)
  assert result["num_examples"] == 7 and result["step"] == 3
  assert result["mean_nll_per_example"] == pytest.approx(float(scalars.loss), rel=1e-6)
  assert result["mean_coverage_loss"] == pytest.approx(float(scalars.coverage_loss),
                                                       rel=1e-6)
  dec_len = batch.dec_len.numpy()
  for line, length in zip(lines, dec_len):
    assert line["tokens"] == length == len(line["token_nll"])
    assert line["log_likelihood"] == pytest.approx(-sum(line["token_nll"]), rel=1e-6)
    assert line["nll_per_token"] == pytest.approx(np.mean(line["token_nll"]), rel=1e-5)
    assert 0.0 <= line["copy_share"] <= 1.0
  assert [line["index"] for line in lines] == list(range(7))
  assert 0.0 < result["mean_copy_share"] < 1.0
  assert result["mean_nll_per_token"] == pytest.approx(
      -sum(line["log_likelihood"] for line in lines) / int(np.sum(dec_len)), rel=1e-6)


def test_score_references_needs_single_pass_decode():
  with pytest.raises(DataError, match=r"^--score_references: applies only with --mode=decode "
                                      r"--single_pass$"):
    config.HParams(mode="decode", score_references=True).validated()
  with pytest.raises(DataError, match="--score_references"):
    config.HParams(mode="eval", single_pass=True, score_references=True).validated()
