"""Errors worded for who reads them: the unknown-word diagnosis's causes each a sentence, and
the Python API's errors in keywords, not the command line's flags."""

import re
import shutil

import pytest

from pointer_gen import api
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import in_keywords
from pointer_gen.data import pipeline as data
from pointer_gen.text import vocab as vocab_lib
import pointer_gen

from helpers import settle


def test_each_cause_of_unknown_words_is_a_sentence(demo_corpus, tmp_path):
  """A vocab cut by --vocab_size to words of other data, before the demo's own: two causes."""
  words = [line.split()[0] for line in open(demo_corpus["vocab"], encoding="utf-8")]
  path = tmp_path / "vocab"
  path.write_text("".join(f"zzword{i} 1000\n" for i in range(8))
                  + "".join(f"{word} 10\n" for word in words), encoding="utf-8")
  hps = settle(f"--data_path={demo_corpus['train']}", f"--vocab_path={path}",
               f"--log_root={tmp_path}", "--exp_name=run", "--vocab_size=12")
  with pytest.raises(DataError) as refusal:
    data.check_unknown_words(hps, vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size))
  message = str(refusal.value)
  assert "fewer words unknown. The vocab seems made from other data: only 0 of its 8" in message
  assert ". the" not in message


def test_fit_without_a_vocab_names_the_keywords(tmp_path):
  with pytest.raises(DataError, match=r"^fit\(\): vocab_path= is required with data= for a new "
                     "run"):
    pointer_gen.fit(tmp_path / "run", data=[("an article .", "a summary .")])
  assert not (tmp_path / "run").exists()


def _keywords_only(message):
  """No setting in the message is written as a flag."""
  flags = {f"--{name}" for name in api._setting_names()}  # pylint: disable=protected-access
  return not flags & set(re.findall(r"--[a-z][a-z0-9_]*", message))


def test_every_setting_written_as_a_flag_is_written_as_its_keyword():
  """Each declared setting: --name=value as name=value, --name as name=; the booleans' true,
  false and --noname as Python's; a flag that is no keyword is left alone."""
  names = api._setting_names()  # pylint: disable=protected-access
  booleans = {name for name in names if isinstance(api._DECLARED[name].default, bool)}  # pylint: disable=protected-access
  assert booleans and booleans < names
  for name in names:
    assert in_keywords(f"--{name}=7 conflicts with --{name}.", names, booleans) == (
        f"{name}=7 conflicts with {name}=.")
  for name in booleans:
    assert in_keywords(f"--{name}=true, --{name}=false, --no{name};", names, booleans) == (
        f"{name}=True, {name}=False, {name}=False;")
  assert in_keywords("--mode=eval (or out of the --flagfile)", names, booleans) == (
      "--mode=eval (or out of the --flagfile)")


def test_the_apis_errors_name_keywords_where_the_command_line_names_flags(
    tiny_run, demo_corpus, tmp_path):
  run_dir = tmp_path / "run"
  shutil.copytree(tiny_run, run_dir)
  summarizer = pointer_gen.load(run_dir, max_dec_steps=4, min_dec_steps=1)
  refused = {
      "hidden_dim=16 conflicts with hidden_dim=8 recorded in ":
          lambda: pointer_gen.load(run_dir, hidden_dim=16),
      "top_k= is a setting of search=sample, not of search=beam":
          lambda: summarizer.summarize(["an article ."], top_k=3),
      "vocab_path= is required with data_path=":
          lambda: pointer_gen.fit(tmp_path / "new", data_path=demo_corpus["train"]),
  }
  for start, call in refused.items():
    with pytest.raises(DataError) as refusal:
      call()
    assert str(refusal.value).startswith(start)
    assert _keywords_only(str(refusal.value)), str(refusal.value)
