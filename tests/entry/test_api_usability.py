"""The Python API as a new user finds it: an empty article summarized as the export does, a
summary's maximum length a summarize() setting, the settings listed with their defaults
(pointer_gen.settings(), the calls' help, docs/python.md), dir(pointer_gen), and n-best entries
with n_best.jsonl's field names."""

import re
import shutil
import subprocess
import sys

import pytest

from pointer_gen import api
from pointer_gen import config
from pointer_gen.base import settings as settings_lib
import pointer_gen

from helpers import REPO

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
