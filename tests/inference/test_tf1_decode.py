"""The original's decode as `tools/dev/tf1_reference.py --decode` runs it (its one-step TF1 graph,
its beam search in Python over one article at a time) against pointer_gen's compiled beam
search on the same weights and articles.

One subprocess (TF1's LSTMCell needs TF_USE_LEGACY_KERAS=1, which cannot share a process with
Keras 3) decodes demo-corpus articles at a 30-word vocabulary, so that they copy OOVs, with
weights large enough that some hypotheses end in [STOP] at different steps, and saves those
weights as a TF1 checkpoint; this process converts it and decodes the same articles.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen.data import pipeline as data
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import beam as beam_search
from pointer_gen.search import contract as search_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint

from helpers import REPO

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

V, E, H, L = 30, 6, 5, 12
BEAM, MIN_STEPS, MAX_STEPS = 4, 3, 8
WARMUP, ARTICLES = 1, 5
# Uniform(+-2) weights: distributions peaked enough that [STOP] wins in some articles.
INIT_MAG = 2.0


@pytest.fixture(scope="module")
def tf1_decode(demo_corpus, tmp_path_factory):
  """The tool's JSON and the prefix of the checkpoint of the weights it decoded with."""
  out = tmp_path_factory.mktemp("tf1_decode")
  prefix = str(out / "model.ckpt")
  argv = [sys.executable, str(REPO / "tools" / "dev" / "tf1_reference.py"), "--decode",
          f"--vocab_size={V}", f"--emb_dim={E}", f"--hidden_dim={H}", f"--max_enc_steps={L}",
          f"--beam_size={BEAM}", f"--min_dec_steps={MIN_STEPS}", f"--max_dec_steps={MAX_STEPS}",
          f"--warmup={WARMUP}", f"--decode_articles={ARTICLES}",
          f"--rand_unif_init_mag={INIT_MAG}", f"--data_path={demo_corpus['val']}",
          f"--vocab_path={demo_corpus['vocab']}", f"--json_out={out / 'decode.json'}",
          f"--checkpoint_out={prefix}"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
  child = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
  assert child.returncode == 0, child.stderr[-5000:]
  assert "original's decode (TF1 one-step graph" in child.stdout
  with open(out / "decode.json", encoding="utf-8") as f:
    return json.load(f), prefix


def _pointer_gen_winners(prefix, demo_corpus, compiled):
  """pointer_gen's beam search over the same articles with the checkpoint's weights, and the
  articles' lengths; compiled: with single-pass decode's XLA kernel (the xla attention)."""
  hps = config.HParams(vocab_size=V, emb_dim=E, hidden_dim=H, pointer_gen=True, coverage=True,
                       max_enc_steps=L, max_dec_steps=1, batch_size=WARMUP + ARTICLES,
                       data_path=demo_corpus["val"], seed=0)
  model = model_lib.PointerGenerator.from_hparams(hps, V)
  tf1_checkpoint.load(prefix, model)
  vocab = vocab_lib.Vocab.from_file(demo_corpus["vocab"], V)
  _, dataset = data.input_pipeline(hps, vocab, single_pass=True)
  batch = next(iter(dataset))
  settings = search_lib.Settings(max_dec_steps=MAX_STEPS, min_dec_steps=MIN_STEPS)
  searched = attention.SearchAttention.of(hps.replace(compiled_attention=compiled), "decode")
  # Eager: tracing the search would cost more than these few steps.
  winners = beam_search.BeamSearch(settings, beam_search.BeamSettings(beam_size=BEAM),
                                   searched).search(
      model, batch.enc_input, batch.enc_len, batch.enc_input_ext,
      tf.reduce_max(batch.num_oovs))
  return winners.map(lambda t: t.numpy()), batch.enc_len.numpy()


@pytest.mark.parametrize("compiled", [False, True])
def test_original_decode_gives_pointer_gen_beam_search_winners(tf1_decode, demo_corpus,
                                                               compiled):
  result, prefix = tf1_decode
  decoded = result["decoded"]
  assert len(decoded) == WARMUP + ARTICLES
  got, enc_len = _pointer_gen_winners(prefix, demo_corpus, compiled)
  for n, article in enumerate(decoded):
    assert article["enc_len"] == enc_len[n]
    length = got.length[n]
    assert article["tokens"] == got.tokens[n, :length].tolist(), f"article {n}"
    np.testing.assert_allclose(article["avg_log_prob"], got.score[n], rtol=1e-5, atol=1e-5)
  # Not a trivial match: some winners end in [STOP] (after at least MIN_STEPS other tokens),
  # some searches end early with beam_size results, others run all MAX_STEPS, and the
  # winners copy article OOVs (extended ids).
  finished = [a for a in decoded if a["tokens"][-1] == vocab_lib.STOP_ID]
  assert finished and len(finished) < len(decoded)
  assert all(MIN_STEPS + 1 <= len(a["tokens"]) for a in finished)
  assert all(len(a["tokens"]) == MAX_STEPS for a in decoded if a not in finished)
  assert {a["steps"] for a in decoded} > {MAX_STEPS}
  assert any(t >= V for a in decoded for t in a["tokens"])


def test_timing_counts_the_articles_after_warm_up(tf1_decode):
  result, _ = tf1_decode
  timed = [a["seconds"] for a in result["decoded"][WARMUP:]]
  assert result["n"] == ARTICLES
  assert result["median"] == pytest.approx(np.median(timed))
  assert (result["min"], result["max"]) == (min(timed), max(timed))
  assert result["articles_per_sec"] == pytest.approx(ARTICLES / sum(timed))
  assert result["steps"]["median"] == np.median([a["steps"] for a in result["decoded"][WARMUP:]])
