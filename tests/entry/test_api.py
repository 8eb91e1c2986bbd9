"""The Python API (pointer_gen.load, fit; docs/python.md): a loaded run's summaries are the
single-pass decode's, word for word, for every strategy; a run trained from Python pairs is one
the command line decodes and resumes; misuse is a clear error; the docstrings' examples run."""

import doctest
import glob
import json
import os
import re
import shutil

import numpy as np
import pytest

from pointer_gen import api
from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.formats import bin_format
from pointer_gen.formats import skips as skips_lib
from pointer_gen.search import registry as strategies
import pointer_gen

from helpers import REPO
from helpers import run_entry_point
from helpers import TINY_RUN

NUM_ARTICLES = 5
DECODE = {"max_dec_steps": 8, "min_dec_steps": 2, "batch_size": 2}


def _records(pattern, count):
  first = sorted(glob.glob(pattern))[0]
  records = bin_format.BIN.read(first, skips_lib.SkipCounter())
  return [next(records) for _ in range(count)]


@pytest.fixture(scope="module")
def loaded(tiny_run, tmp_path_factory):
  """(a copy of the tiny run, pointer_gen.load of it with DECODE's settings)."""
  run_dir = tmp_path_factory.mktemp("api") / "run"
  shutil.copytree(tiny_run, run_dir)
  return run_dir, pointer_gen.load(run_dir, **DECODE)


@pytest.mark.parametrize("name", sorted(strategies.STRATEGIES))
def test_summaries_are_the_single_pass_decodes_for_every_strategy(loaded, demo_corpus, name):
  run_dir, summarizer = loaded
  decode_dir = f"decode_{name}"
  code = run_entry_point("--mode=decode", "--single_pass", f"--log_root={run_dir.parent}",
                         f"--exp_name={run_dir.name}", f"--data_path={demo_corpus['val']}",
                         f"--search={name}", f"--max_decode_examples={NUM_ARTICLES}",
                         f"--decode_dir={decode_dir}",
                         *(f"--{k}={v}" for k, v in DECODE.items()))
  assert code == 0
  decoded = [open(run_dir / decode_dir / "decoded" / f"{i:06d}_decoded.txt",
                  encoding="utf-8").read().split() for i in range(NUM_ARTICLES)]
  articles = [r.article for r in _records(demo_corpus["val"], NUM_ARTICLES)]
  summaries = summarizer.summarize(articles, tokenized=True, search=name)
  assert [list(s.tokens) for s in summaries] == decoded
  assert all(s.text == " ".join(s.tokens) for s in summaries)
  per_example = [json.loads(line) for line in open(run_dir / decode_dir / "per_example.jsonl",
                                                   encoding="utf-8")]
  assert [s.p_gen_mean for s in summaries] == pytest.approx(
      [row["p_gen_mean"] for row in per_example], abs=1e-6)


@pytest.mark.parametrize("name", sorted(strategies.STRATEGIES))
def test_one_slot_gives_the_summaries_of_two(loaded, demo_corpus, name):
  _, summarizer = loaded
  articles = [r.article for r in _records(demo_corpus["val"], NUM_ARTICLES)]
  two = summarizer.summarize(articles, tokenized=True, search=name, batch_size=2)
  (one,) = summarizer.summarize(articles[:1], tokenized=True, search=name, batch_size=1)
  assert one.tokens == two[0].tokens
  assert one.log_prob == pytest.approx(two[0].log_prob, abs=1e-4)


def test_raw_text_is_tokenised_as_the_run_says_with_attention_on_request(loaded):
  _, summarizer = loaded
  article = "The police said the man was arrested on Saturday."
  (plain,) = summarizer.summarize([article])
  # The demo run's raw text was split on whitespace, case kept (its vocab's
  # .tokenization.json): the period stays on the word, an OOV the search may copy.
  assert plain.article_tokens == tuple(article.split())
  assert np.isfinite(plain.log_prob) and plain.log_prob < 0
  assert 0 < plain.p_gen_mean < 1
  assert plain.attention is None and plain.n_best is None
  (viewed,) = summarizer.summarize([article], attention=True)
  assert viewed.tokens == plain.tokens
  assert viewed.log_prob == pytest.approx(plain.log_prob, abs=1e-4)
  steps = len(viewed.tokens) + (len(viewed.tokens) < DECODE["max_dec_steps"])
  assert viewed.attention.shape == (steps, len(article.split()))
  np.testing.assert_allclose(viewed.attention.sum(axis=1), 1.0, atol=1e-5)
  assert summarizer.summarize([]) == []
  (ranked,) = summarizer.summarize([article], n_best=2)
  assert len(ranked.n_best) == 2 and ranked.n_best[0][0] == ranked.text
  assert ranked.n_best[0][1] >= ranked.n_best[1][1]


def test_misuse_is_a_clear_error(loaded, tmp_path):
  run_dir, summarizer = loaded
  with pytest.raises(DataError, match=r"holds no run \(run_config.json is missing\)"):
    pointer_gen.load(tmp_path)
  (tmp_path / "untrained").mkdir()
  shutil.copy(run_dir / "run_config.json", tmp_path / "untrained")
  with pytest.raises(DataError, match=r"the run has no checkpoint in .*untrained/train: train it "
                     "first"):
    pointer_gen.load(tmp_path / "untrained")
  with pytest.raises(DataError, match="no checkpoint of step 3 in .* keeps steps 4"):
    pointer_gen.load(run_dir, checkpoint=3)
  with pytest.raises(DataError, match="no best model in"):
    pointer_gen.load(run_dir, checkpoint="best")
  with pytest.raises(DataError, match="^hidden_dim=16 conflicts with hidden_dim=8 recorded in "
                     ".*run_config.json"):
    pointer_gen.load(run_dir, hidden_dim=16)
  with pytest.raises(TypeError, match=r"load\(\): 'hiden_dim' is not a setting .*did you mean "
                     r"hidden_dim\?"):
    pointer_gen.load(run_dir, hiden_dim=8)
  with pytest.raises(TypeError, match=r"summarize\(\): 'hidden_dim' is not a decoding setting"):
    summarizer.summarize(["an article"], hidden_dim=8)
  with pytest.raises(DataError, match="^top_k= is a setting of search=sample, not of "
                     "search=beam"):
    summarizer.summarize(["an article"], top_k=3)
  with pytest.raises(TypeError, match=r"summarize\(\): article 1 is a bytes, not a str"):
    summarizer.summarize(["an article", b"bytes"])
  with pytest.raises(TypeError, match="expected a list of articles"):
    summarizer.summarize("one string")
  with pytest.raises(TypeError, match=r"fit\(\): pair 0 is not an \(article, abstract\) pair"):
    pointer_gen.fit(tmp_path / "new", data=["just an article"], vocab_path="vocab")
  assert not (tmp_path / "new").exists()


def test_summarize_takes_every_setting_decode_mode_declares():
  """summarize()'s settings (and export()'s, which add its compiled attention) are the ones
  --help lists under decode, from the same declarations (DecodeSettings' fields, each search
  strategy's and decoding control's own), and those declared `decoding` elsewhere (the
  summary's maximum length, batch_size)."""
  decode_group = dict(config.help_groups())[config.DecodeSettings.HELP]
  assert api.SUMMARIZE_SETTINGS == frozenset(decode_group) | {"max_dec_steps", "batch_size"}
  for strategy in strategies.STRATEGIES.values():
    assert set(strategy.Options.flags()) <= api.SUMMARIZE_SETTINGS < api.EXPORT_SETTINGS


def _pairs(demo_corpus, count):
  return [(r.article, " ".join(r.abstract_sentences))
          for r in _records(demo_corpus["train"], count)]


@pytest.mark.slow
def test_a_run_trained_from_python_pairs_is_the_command_lines(demo_corpus, tmp_path, capsys):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  pairs = _pairs(demo_corpus, 24)
  run_dir = tmp_path / "from_python"
  sizes = {k: v for k, v in TINY_RUN.items() if k != "exp_name"}
  dataset = tf.data.Dataset.from_tensor_slices(([a for a, _ in pairs], [b for _, b in pairs]))
  history = pointer_gen.fit(run_dir, data=dataset, vocab_path=demo_corpus["vocab"],
                            num_train_steps=2, checkpoint_secs=1000, **sizes)
  assert [row["step"] for row in history] == [1, 2]
  written = [json.loads(line) for line in open(run_dir / api.TRAIN_PAIRS, encoding="utf-8")]
  assert [(w["article"], w["abstract"]) for w in written] == pairs
  record = json.loads((run_dir / "run_config.json").read_text(encoding="utf-8"))
  assert (record["hidden_dim"], record["data_format"]) == (8, "auto")
  capsys.readouterr()
  # Decoded by the command line with no setting repeated: the record gives the model's.
  assert run_entry_point("--mode=decode", "--single_pass", f"--log_root={tmp_path}",
                         "--exp_name=from_python", f"--data_path={demo_corpus['val']}",
                         "--max_decode_examples=2", "--max_dec_steps=5", "--min_dec_steps=1",
                         "--beam_size=2") == 0
  assert len(glob.glob(str(run_dir / "decode_val_40maxenc_*" / "decoded" / "*.txt"))) == 2
  # Resumed by --mode=train on the pairs the run keeps.
  assert run_entry_point("--mode=train", f"--log_root={tmp_path}", "--exp_name=from_python",
                         f"--data_path={run_dir / api.TRAIN_PAIRS}", "--num_train_steps=3") == 0
  assert "Trained steps 3-3" in capsys.readouterr().out
  assert os.path.exists(run_dir / "train" / "model.ckpt-3.index")
  summarizer = pointer_gen.load(run_dir, max_dec_steps=4, min_dec_steps=1)
  assert summarizer.step == 3
  scores = summarizer.evaluate(pairs[:6])
  assert scores["num_examples"] == 6 and scores["step"] == 3
  assert scores == json.loads((run_dir / "eval" / "metrics-3.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_docstrings_examples_run(demo_corpus, tmp_path):
  """The Examples of api.py's docstrings, in the order a user takes them: fit, load,
  summarize, evaluate, export."""
  pairs = _pairs(demo_corpus, 12)
  namespace = {"pointer_gen": pointer_gen, "os": os, "pairs": pairs,
               "run_dir": str(tmp_path / "run"), "vocab": demo_corpus["vocab"],
               "export_dir": str(tmp_path / "export")}
  tests = {test.name.split(".")[-1]: test for test in doctest.DocTestFinder().find(api)
           if test.examples}
  order = ["fit", "load", "summarize", "evaluate", "export"]
  assert sorted(tests) == sorted(order)
  runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
  for name in order:
    test = tests[name]
    test.globs = namespace
    result = runner.run(test, clear_globs=False)
    assert (result.attempted, result.failed) == (len(test.examples), 0), name
  assert os.path.isfile(os.path.join(namespace["export_dir"], "2", "saved_model.pb"))


@pytest.mark.slow
def test_the_python_docs_examples_run_from_a_fresh_directory(tmp_path, monkeypatch, capsys):
  """docs/python.md's code blocks, in order, in one namespace, in an empty working directory:
  the built-in demo corpus is all they need (no ../shared)."""
  blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "python.md").read_text(
      encoding="utf-8"), re.DOTALL)
  assert len(blocks) == 3
  monkeypatch.chdir(tmp_path)
  namespace = {}
  for block in blocks:
    exec(compile(block, "docs/python.md", "exec"), namespace)  # pylint: disable=exec-used
  printed = capsys.readouterr().out.splitlines()
  assert namespace["history"][-1]["step"] == 5
  greedy = namespace["summarizer"].summarize(namespace["articles"], search="greedy")
  assert all(f"{s.text} {s.log_prob} {s.p_gen_mean}" in printed for s in greedy)
  # The page says what a model of five steps prints, and why, before a reader runs it.
  said = re.search(r"so its summaries repeat the commonest words \(`(.*?) \.\.\.`\)",
                   (REPO / "docs" / "python.md").read_text(encoding="utf-8"))
  assert said and all(s.text.startswith(said[1]) for s in greedy), [s.text for s in greedy]
  assert namespace["summary"].attention.shape[1] == len(namespace["summary"].article_tokens)
  assert os.path.isfile(tmp_path / "runs" / "python_demo" / "export" / "5" / "saved_model.pb")
  served = [s.decode("utf-8") for s in namespace["serve"](
      namespace["tf"].constant(namespace["articles"]))["summary"].numpy()]
  assert served == [s.text for s in namespace["summarizer"].summarize(namespace["articles"])]
