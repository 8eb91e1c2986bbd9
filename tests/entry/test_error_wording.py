"""Errors worded for who reads them: the unknown-word diagnosis's causes each a sentence, and
the Python API's errors in keywords, not the command line's flags."""

import pytest

from pointer_gen.base.errors import DataError
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
