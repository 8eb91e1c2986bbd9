"""The Python API as a new user finds it: an empty article summarized as the export does, a
summary's maximum length a summarize() setting, the settings listed with their defaults
(pointer_gen.settings(), the calls' help, docs/python.md), dir(pointer_gen), n-best entries
with n_best.jsonl's field names, fit()'s training log shown and a run past num_train_steps said,
a run's pairs kept (fit's, evaluate's), and a step given as digits."""

import contextlib
import glob
import itertools
import json
import logging
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from pointer_gen import api
from pointer_gen import config
from pointer_gen.base import settings as settings_lib
from pointer_gen.base.errors import DataError
from pointer_gen.formats import bin_format
from pointer_gen.formats import skips as skips_lib
import pointer_gen

from helpers import REPO
from helpers import TINY_RUN

ARTICLE = "the police said the man was arrested on saturday ."


@pytest.fixture(scope="module")
def summarizer(tiny_run, tmp_path_factory):
  run_dir = tmp_path_factory.mktemp("usability") / "run"
  shutil.copytree(tiny_run, run_dir)
  return pointer_gen.load(run_dir, max_dec_steps=6, min_dec_steps=2, batch_size=2)


def test_an_article_without_tokens_gets_the_exports_empty_summary(summarizer):
  (alone,) = summarizer.summarize([ARTICLE])
  mixed = summarizer.summarize(["", ARTICLE, " \n\t", ""])
  assert [s.text for s in mixed] == ["", alone.text, "", ""]
  assert mixed[1].tokens == alone.tokens and "[UNK]" not in alone.tokens
  assert mixed[1].log_prob == pytest.approx(alone.log_prob, abs=1e-4)
  for empty in mixed[0], mixed[2]:
    assert (empty.tokens, empty.article_tokens, empty.log_prob, empty.p_gen_mean) == (
        (), (), 0.0, 0.0)
    assert empty.attention is None and empty.n_best is None
  assert [s.text for s in summarizer.summarize([""])] == [""]
  assert [s.text for s in summarizer.summarize(["", ARTICLE], tokenized=True)] == [
      "", " ".join(summarizer.summarize([ARTICLE], tokenized=True)[0].tokens)]
  viewed = summarizer.summarize(["", ARTICLE], attention=True)
  assert viewed[0].attention.shape == (0, 0) and viewed[1].tokens == alone.tokens
  ranked = summarizer.summarize(["  ", ARTICLE], n_best=2)
  assert ranked[0].n_best == (("", 0.0, 0.0), ("", 0.0, 0.0))
  assert ranked[1].n_best[0].summary == ranked[1].text


def test_n_best_entries_have_the_jsonl_field_names(summarizer):
  (ranked,) = summarizer.summarize([ARTICLE], n_best=2)
  best, second = ranked.n_best
  assert isinstance(best, pointer_gen.NBestSummary)
  assert best._fields == ("summary", "score", "log_prob")
  assert best.summary == ranked.text and best.log_prob == pytest.approx(ranked.log_prob, abs=1e-4)
  assert best.score >= second.score
  assert best._asdict() == {"summary": best[0], "score": best[1], "log_prob": best[2]}


def test_max_dec_steps_is_a_summarize_setting(summarizer):
  (short,) = summarizer.summarize([ARTICLE], search="greedy", max_dec_steps=3, min_dec_steps=1)
  (full,) = summarizer.summarize([ARTICLE], search="greedy")
  assert len(full.tokens) > 3 and short.tokens == full.tokens[:3]
  assert "max_dec_steps" in api.SUMMARIZE_SETTINGS
  # Declared with the data's settings, not listed by hand: batch_size `decoding`, max_dec_steps
  # kept as the run's decoding default (which each decode may set anew).
  declared = {field.name: field.metadata for _, field in config.declarations()}
  assert declared["batch_size"]["decoding"] and "batch_size" in api.SUMMARIZE_SETTINGS
  assert declared["max_dec_steps"]["record"] == settings_lib.DECODING


def test_a_run_setting_given_to_summarize_says_why_it_is_not_one(summarizer):
  with pytest.raises(TypeError, match=r"^summarize\(\): 'max_enc_steps' is not a decoding "
                     r"setting: the run's record \(run_config.json\) fixes it: the model runs "
                     r"with the value it was trained with \(this run's is 40\)$"):
    summarizer.summarize([ARTICLE], max_enc_steps=10)
  with pytest.raises(TypeError, match=r"^summarize\(\): 'lr' is not a decoding setting: the "
                     r"run's other settings are load\(\)'s"):
    summarizer.summarize([ARTICLE], lr=0.1)
  with pytest.raises(TypeError, match=r"'beam_sise' is not a decoding setting \(pointer_gen."
                     r"settings\('summarize'\) lists them\) \(did you mean beam_size\?\)"):
    summarizer.summarize([ARTICLE], beam_sise=2)


def test_settings_list_each_calls_settings_with_their_defaults():
  every = {s.name: s for s in pointer_gen.settings()}
  assert every["beam_size"].default == 4 and every["min_dec_steps"].default == 35
  assert every["max_dec_steps"].read_by == config.COMMON
  assert every["beam_size"].help.startswith("Beam size")
  assert {"mode", "log_root", "exp_name", "ckpt_path", "data"}.isdisjoint(every)
  assert {s.name for s in pointer_gen.settings("summarize")} == api.SUMMARIZE_SETTINGS
  assert {s.name for s in pointer_gen.settings("export")} == api.EXPORT_SETTINGS
  fit = {s.name for s in pointer_gen.settings("fit")}
  assert {"lr", "hidden_dim", "strategy"} <= fit and "beam_size" not in fit
  with pytest.raises(ValueError, match=r"call='decode': expected None or one of fit, load"):
    pointer_gen.settings("decode")
  for function, call in ((pointer_gen.load, "load"), (pointer_gen.Summarizer.summarize,
                                                      "summarize")):
    doc = function.__doc__
    assert f"pointer_gen.settings({call!r})" in doc
    for setting in pointer_gen.settings(call):
      assert f"{setting.name}={setting.default!r}" in doc, (call, setting.name)
  assert "min_dec_steps, ...)" not in pointer_gen.load.__doc__


def _settings_table():
  """docs/python.md's settings table as the declarations make it."""
  rows = ["| setting | default | read by | `summarize()` | `export()` |", "|---|---|---|---|---|"]
  for s in pointer_gen.settings():
    rows.append(f"| `{s.name}` | `{s.default!r}` | {s.read_by} | "
                f"{'yes' if s.name in api.SUMMARIZE_SETTINGS else ''} | "
                f"{'yes' if s.name in api.EXPORT_SETTINGS else ''} |")
  return "\n".join(rows)


def test_the_python_docs_list_every_setting_as_declared():
  """The TypeError of an unknown keyword sends the user to docs/python.md: its table is the
  declarations' (on failure, paste the expected table printed)."""
  docs = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
  section = docs.split("\n## Settings\n", 1)[1]
  table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
  expected = _settings_table()
  assert table == expected, f"docs/python.md's settings table should be:\n{expected}"


@pytest.mark.slow
def test_dir_lists_the_api_in_a_fresh_interpreter():
  listed = subprocess.run(
      [sys.executable, "-c", "import pointer_gen, sys; print(' '.join(dir(pointer_gen))); "
       "print('tensorflow' in sys.modules)"],
      capture_output=True, text=True, check=True, cwd=REPO,
      env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}).stdout.splitlines()
  assert set(pointer_gen.__all__) <= set(listed[0].split())
  assert {"fit", "load", "settings", "Summarizer", "Summary", "NBestSummary"} <= set(
      listed[0].split())
  assert listed[1] == "False"  # dir() imports no TensorFlow


def test_dir_lists_the_api():
  assert set(pointer_gen.__all__) <= set(dir(pointer_gen))


class _Records(logging.Handler):
  """The log records that reach Python's root logger's handlers."""

  def __init__(self):
    super().__init__()
    self.records = []

  def emit(self, record):
    self.records.append(record)


@contextlib.contextmanager
def _as_a_plain_interpreter_logs():
  """Logging as a plain interpreter has it (no level on absl's logger, the root logger's default
  WARNING), with what reaches the root's handlers kept."""
  absl_logger, root = logging.getLogger("absl"), logging.getLogger()
  levels = absl_logger.level, root.level
  absl_logger.setLevel(logging.NOTSET)
  root.setLevel(logging.WARNING)
  records = _Records()
  root.addHandler(records)
  try:
    yield records.records
  finally:
    root.removeHandler(records)
    absl_logger.setLevel(levels[0])
    root.setLevel(levels[1])


def _pairs(demo_corpus, start, count):
  records = bin_format.BIN.read(sorted(glob.glob(demo_corpus["train"]))[0],
                                skips_lib.SkipCounter())
  return [(r.article, " ".join(r.abstract_sentences))
          for r in itertools.islice(records, start, start + count)]


SIZES = {k: v for k, v in TINY_RUN.items() if k != "exp_name"}


@pytest.fixture(scope="module")
def fitted(demo_corpus, tmp_path_factory):
  """(a run fit() trained 2 steps on pairs, logging a line a step as a plain interpreter
  shows them: its log records, the pairs)."""
  run_dir = tmp_path_factory.mktemp("fitted") / "run"
  pairs = _pairs(demo_corpus, 0, 8)
  with _as_a_plain_interpreter_logs() as records:
    pointer_gen.fit(run_dir, data=pairs, vocab_path=demo_corpus["vocab"], num_train_steps=2,
                    log_every_n_steps=1, checkpoint_secs=1000, **SIZES)
    assert logging.getLogger("absl").level == logging.NOTSET  # as it was
  return run_dir, pairs, records


def test_fit_shows_its_training_log_in_a_plain_interpreter(fitted):
  """A line each log_every_n_steps steps, as the command line logs them, each once."""
  _, _, records = fitted
  steps = [record.getMessage().split(":")[0] for record in records
           if record.name == "absl" and record.getMessage().startswith("step ")]
  assert steps == ["step 1", "step 2"]
  assert all(record.levelno == logging.INFO for record in records
             if record.getMessage().startswith("step "))


def test_fit_past_num_train_steps_says_so_and_runs_no_step(fitted):
  run_dir, pairs, _ = fitted
  checkpoints = sorted(glob.glob(str(run_dir / "train" / "model.ckpt-*.index")))
  with _as_a_plain_interpreter_logs() as records:
    history = pointer_gen.fit(run_dir, data=pairs, num_train_steps=2)
  assert history == []
  warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
  assert any("the run is at step 2, num_train_steps is 2" in message for message in warnings)
  assert sorted(glob.glob(str(run_dir / "train" / "model.ckpt-*.index"))) == checkpoints


def test_a_second_fit_with_other_pairs_keeps_the_first(fitted, demo_corpus):
  """The run's train_pairs.jsonl says what it was trained on: other pairs are refused, naming
  the run and data=, and the file is left as it was."""
  run_dir, pairs, _ = fitted
  kept = (run_dir / api.TRAIN_PAIRS).read_bytes()
  assert kept.decode("utf-8") == "".join(
      json.dumps({"article": a, "abstract": b}, ensure_ascii=False) + "\n" for a, b in pairs)
  with pytest.raises(DataError, match=rf"^fit\(\): {re.escape(str(run_dir))} was trained on "
                     r"other pairs, kept in its train_pairs.jsonl: give data="):
    pointer_gen.fit(run_dir, data=_pairs(demo_corpus, 8, 8), num_train_steps=3)
  assert (run_dir / api.TRAIN_PAIRS).read_bytes() == kept
  assert pointer_gen.load(run_dir).step == 2


def test_a_step_given_as_digits_loads_that_step(summarizer):
  run_dir = summarizer.hparams.run_dir
  assert pointer_gen.load(run_dir, checkpoint=str(summarizer.step)).step == summarizer.step
  with pytest.raises(DataError, match=f"no checkpoint of step {summarizer.step + 1} in "):
    pointer_gen.load(run_dir, checkpoint=str(summarizer.step + 1))


def test_evaluate_keeps_the_pairs_its_metrics_name(summarizer, demo_corpus):
  pairs = _pairs(demo_corpus, 0, 3)
  scores = summarizer.evaluate(pairs)
  metrics = json.loads(pathlib.Path(summarizer.hparams.eval_dir, f"metrics-{summarizer.step}.json")
                       .read_text(encoding="utf-8"))
  assert scores == metrics and metrics["num_examples"] == 3
  kept = [json.loads(line) for line in open(metrics["data_path"], encoding="utf-8")]
  assert [(row["article"], row["abstract"]) for row in kept] == pairs


def _traced(summarizer):
  """{search: the tracing count of each of its compiled functions}, of the searches the
  Summarizer has built."""
  searches = summarizer._searches.values()  # pylint: disable=protected-access
  return {id(search): [f.experimental_get_tracing_count() for f in (
      [search] if hasattr(search, "experimental_get_tracing_count")
      else [v for v in vars(search).values() if hasattr(v, "experimental_get_tracing_count")])]
          for search in searches}


@pytest.mark.parametrize("attention", [False, True])
def test_each_set_of_search_settings_is_traced_once_and_other_settings_reuse_it(summarizer,
                                                                                attention):
  """A new search's functions are traced once each at most (one a run may not call); settings
  only decode mode's files read (decode_dir, rouge_tokenizer) reuse the search of the same
  search settings."""
  first = summarizer.summarize([ARTICLE], attention=attention, beam_size=3)[0]
  traced = _traced(summarizer)
  assert all(1 in counts and set(counts) <= {0, 1} for counts in traced.values())
  again = summarizer.summarize([ARTICLE], attention=attention, beam_size=3,
                               rouge_tokenizer="cjk", decode_dir="elsewhere")[0]
  assert _traced(summarizer) == traced and again.tokens == first.tokens
  summarizer.summarize([ARTICLE], attention=attention, beam_size=3, min_dec_steps=3)
  after = _traced(summarizer)
  assert len(after) == len(traced) + 1
  assert all(1 in counts and set(counts) <= {0, 1} for counts in after.values())
