"""text.tokenize_prefix: the first max_tokens tokens of a text, read from a prefix of it, are
exactly those of tokenising the whole text, for every tokenizer, case and cut: at every place
the ptb tokenizer may be cut in real and hand-made text, in windows that end anywhere (inside
a character, a token, a tag), and in the text the serving graph and the input pipeline see."""

import functools
import json
import re

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import tensorflow as tf

from pointer_gen.data import pipeline as data
from pointer_gen.text import ptb
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

CONFIGS = [(t, lowercase) for t in text.TOKENIZERS for lowercase in (False, True)]

# Text around which ptb's rules look past a space or to the end of a line: abbreviations and
# acronyms before capitals, sentence starts and lower-case words, quotes, clitics, spaced
# dots, numbers with spaces, markup that holds spaces or is left open, and characters of one
# to four bytes (a final sigma lower-cases by what follows it).
FRAGMENTS = (
    "Inc.", "Corp.", "Calif.", "U.S.", "I.", "Mr.", "No.", "So.", "Co.", "Pty.", "ca.", "The",
    "He", "It", "africa", "Ltd", "limited", "OK!", "magazine", "'", '"', "`", "''", "'s", "n't",
    "'t", "was", "cannot", "gonna", "dunno", "y'", "all", "'99", "O'Neill", "...", ". . .", ".",
    "....", "5", "1/2", "(555)", "123", "4567", "4.2bn", "3-year-old", "1,000", "<p",
    "class='x y'", "<b c=d>", ">", "<!--", "-->", "</b>", "<<", ">>", "<a@b.example.com>",
    "&lt;", "&amp;", ":)", ":D", "d", "p", "http://x.com/a.", "www.bbc.co.uk", "#tag", "@user",
    "US$", "\u00a3", "\u00bd", "\u00ad", "\u00a0", "\u200b", "caf\u00e9", "\u6771\u4eac",
    "\U0001f600", "\u03a3", "\u0391\u03a3", "\t", "\r", "a", "word", "@highlight", "-", "--",
    "(", ")", "e-mail", "said", "the",
)
SEPARATORS = (" ", " ", " ", "  ", "\n", "", " \n ")
# Cuts tried in a line (each a tokenisation of the line up to there): about this many at most.
MAX_CUTS = 80


# And single characters, punctuation most, to make what the fragments do not spell out.
CHARACTERS = (".,'\"`<>!?:;()[]{}&#$@-_/\\*=+~^%| \t\xa0\xad\u2019\u201c\u2026\u2013\ufffd"
              "aAdDiIlLnNoOpPsStTxXyY0159\u00e9\u03a3\U0001f600")

_TEXTS = st.lists(st.one_of(
    st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)).map("".join),
    st.sampled_from(CHARACTERS)), max_size=80).map("".join)


def _strings(tensor):
  return [t.decode("utf-8", "replace") for t in tensor.numpy().tolist()]


# Graphs, as the input pipeline and the SavedModel run them (eager, each op of each window's
# tokenisation would be a Python call): one of each function per tokenisation.
@functools.lru_cache(maxsize=None)
def _prefix_function(tokenizer, lowercase, repair_utf8, default_window):
  def prefix(article, max_tokens, first_window):
    return text.tokenize_prefix(article, max_tokens, tokenizer, lowercase, repair_utf8,
                                None if default_window else first_window)
  return tf.function(prefix, autograph=False, input_signature=[
      tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64)])


def _prefix(article, max_tokens, tokenizer, lowercase=False, first_window=None,
            repair_utf8=False):
  """text.tokenize_prefix's tokens as strings (bytes with repair_utf8)."""
  function = _prefix_function(tokenizer, lowercase, repair_utf8, first_window is None)
  tokens = function(tf.constant(article), max_tokens, first_window or 0)
  return tokens.numpy().tolist() if repair_utf8 else _strings(tokens)


@functools.lru_cache(maxsize=None)
def _whole_function(tokenizer, lowercase):
  return tf.function(lambda article: text.tokenize(article, tokenizer, lowercase),
                     autograph=False, input_signature=[tf.TensorSpec([], tf.string)])


def _whole(article, tokenizer, lowercase):
  return _strings(_whole_function(tokenizer, lowercase)(tf.constant(article)))


def _jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _assert_cuts_are_prefixes(lines, tokenizer, lowercase, ends):
  """Windows of each line's UTF-8 ending at each of its `ends` (byte offsets), cut as
  tokenize_prefix cuts them (text._cut): wherever text._tokenize_cut vouches for a cut's tokens,
  they are the first tokens of the whole line. Returns the number of windows cut somewhere
  (not before their start) and of those not vouched for."""
  encoded = [line.encode("utf-8") for line in lines]
  windows = [(i, line[:end]) for i, line in enumerate(encoded) for end in ends(line)]
  if not windows:
    return 0, 0
  wholes = text.tokenize(encoded, tokenizer, lowercase).to_list()
  prefixes = text._cut(tf.constant([w for _, w in windows]), tokenizer)
  tokens, vouched = text._tokenize_cut(prefixes, True, tokenizer, lowercase)
  cuts = refused = 0
  for (i, _), prefix, got, is_vouched in zip(windows, prefixes.numpy().tolist(), tokens.to_list(),
                                             vouched.numpy().tolist()):
    cuts += bool(prefix)
    refused += bool(prefix) and not is_vouched
    if is_vouched:
      assert got == wholes[i][:len(got)], prefix
  return cuts, refused


def _after_spaces(line):
  """The byte offsets after the spaces of a line (where its cuts can end: a cut keeps the space
  it ends with), about MAX_CUTS of them spread over a long line."""
  ends = [m.end() for m in re.finditer(b" ", line)]
  return ends[::len(ends) // MAX_CUTS + 1]


@pytest.mark.parametrize("tokenizer, lowercase", CONFIGS)
def test_every_cut_of_real_and_hand_made_text(ptb_oracle, tokenizer, lowercase):
  """The argument in text._tokenize_cut, tried at each cut: BBC articles, CoreNLP's own
  tokenizer tests and the oracle's hand-written cases (rules that look ahead), and the
  fragments of the generated texts below, one line each (a line is tokenised alone)."""
  lines = [line for r in _jsonl(ptb_oracle / "bbc_val.jsonl")[:12]
           for line in r["article_raw"].split("\n")]
  lines += [r["input"] for r in _jsonl(ptb_oracle / "cases.jsonl")]
  lines += [re.sub(r"[ \t\r\n]+", " ", r["input"])
            for r in _jsonl(ptb_oracle / "corenlp_3.7.0_tests.jsonl")]
  lines.append(" ".join(FRAGMENTS))
  cuts, refused = _assert_cuts_are_prefixes(lines, tokenizer, lowercase, _after_spaces)
  # Not vacuous: thousands of cuts, nearly all vouched for; for ptb, markup refuses some.
  assert cuts > 3000
  if tokenizer == "ptb":
    assert 0 < refused < cuts / 20
  else:
    assert refused == 0


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(article=_TEXTS, config=st.sampled_from(CONFIGS))
def test_every_cut_of_generated_text(article, config):
  """Windows ending at every byte of the text: inside characters, tokens, tags, after line
  breaks."""
  _assert_cuts_are_prefixes([article], *config, lambda line: range(1, len(line)))


def test_an_open_tag_refuses_the_cut_and_a_closed_one_does_not():
  lines = ["a <p class x y ", "a <p class x y> z ", "a <!-- x y ", "a <!-- x > y ",
           "x < y and b ", "<< x >> y ", "a <ann@x.example.com> b ", "a <b c='x>y' d ",
           "a </b ", "a <?x y "]
  assert ptb.open_markup(tf.constant(lines)).numpy().tolist() == [
      True, False, True, False, False, False, False, True, True, True]
  # What the refusal guards against: before the tag closes, its words are tokens of their own.
  article = "a <p class x y > z"
  whole = _whole(article, "ptb", False)
  assert whole == ["a", "<p\u00a0class\u00a0x\u00a0y\u00a0>", "z", "."]
  cut = text._tokenize_ptb(tf.constant("a <p class x y "), False, cut=True)
  assert _strings(cut) == ["a", "<", "p", "class", "x", "y"]
  # The first window, "a <p class x y ", is refused; the next holds the whole text.
  assert _strings(text.tokenize_prefix(article, 2, "ptb", first_window=15)) == whole[:2]


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(article=_TEXTS, config=st.sampled_from(CONFIGS), max_tokens=st.integers(1, 40),
       first_window=st.integers(1, 80))
def test_prefix_tokens_equal_the_whole_texts(article, config, max_tokens, first_window):
  """Windows from one byte on, doubling: they end inside characters, tokens and tags."""
  tokenizer, lowercase = config
  got = _prefix(article, max_tokens, tokenizer, lowercase, first_window)
  assert got == _whole(article, tokenizer, lowercase)[:max_tokens]


@pytest.mark.parametrize("tokenizer, lowercase", CONFIGS)
def test_long_real_text(bbc, tokenizer, lowercase):
  """200 BBC articles in one text of 400 KB, read to 400 tokens from the default window and
  to 3,000 from a window of 100 bytes (six doublings); and a text that ends inside a word."""
  article = "\n".join(r["article"] for r in _jsonl(bbc / "val.jsonl")[:200])
  assert len(article.encode("utf-8")) > 400_000
  # The lines before a line break tokenise as in the whole text (a line is tokenised alone, a
  # space or line break ends whitespace's and punct's tokens): whole lines enough for 3,000
  # tokens.
  whole = _whole(article[:article.index("\n", 40_000)], tokenizer, lowercase)
  assert len(whole) > 3000
  for max_tokens, first_window in ((400, None), (3000, 100)):
    got = _prefix(article, max_tokens, tokenizer, lowercase, first_window)
    assert got == whole[:max_tokens]
  short = article[:article.index(" ", 2000) + 1] + "Yuk"
  assert (_prefix(short, 10_000, tokenizer, lowercase, first_window=64)
          == _whole(short, tokenizer, lowercase))


@pytest.mark.parametrize("tokenizer, lowercase", CONFIGS)
def test_edge_texts(tokenizer, lowercase):
  """Empty and blank text, fewer tokens than asked for, text without whitespace, and windows
  ending inside each byte of 2-, 3- and 4-byte characters."""
  for article, max_tokens, first_windows in (
      ("", 5, (1, None)), (" \n\t ", 5, (1, 2, None)), ("Only three words", 400, (1, 5, None)),
      ("x" * 5000 + ".", 3, (1, 100, None)),
      ("\u00e9\u6771\U0001f600 " * 40, 30, (1, 2, 3, 5, 7, 9))):
    whole = _whole(article, tokenizer, lowercase)
    for first_window in first_windows:
      got = _prefix(article, max_tokens, tokenizer, lowercase, first_window)
      assert got == whole[:max_tokens], (article[:20], first_window)


@pytest.mark.parametrize("tokenizer", text.TOKENIZERS)
def test_a_megabyte_without_whitespace_is_one_token(tokenizer):
  """Nowhere to cut: the windows grow to the whole text (ptb adds the line's period)."""
  article = "X" * 1_000_000
  assert _prefix(article, 3, tokenizer, lowercase=True) == (
      ["x" * 1_000_000] + (["."] if tokenizer == "ptb" else []))


@pytest.mark.parametrize("tokenizer", text.TOKENIZERS)
def test_repair_utf8_as_the_whole_text_transcoded(tokenizer):
  """Invalid bytes become U+FFFD in the window as they do in the whole text, wherever the
  window ends (also inside a broken sequence)."""
  article = b"caf\xc3 \xff\xfe the police \xe2\x82 said \xf0\x9f\x98 it " * 20
  repaired = tf.strings.unicode_transcode(article, "UTF-8", "UTF-8", errors="replace")
  whole = text.tokenize(repaired, tokenizer).numpy().tolist()
  assert whole[:50] != text.tokenize(article, tokenizer).numpy().tolist()[:50]
  for first_window in (1, 4, 5, 13, 17, 40):
    assert _prefix(article, 50, tokenizer, first_window=first_window,
                   repair_utf8=True) == whole[:50]


def test_article_features_read_a_prefix_of_the_article():
  """The input pipeline's and the serving graph's tokens, ids and OOVs of a long article are
  those of its first max_enc_steps tokens, with a tokenisation that looks ahead at the cut."""
  table = vocab_lib.Vocab(["the", "."]).lookup_table()  # the specials, then ids 4 and 5
  article = "The U.S. The end of Apple Inc. The start.\n" * 20_000
  features = data.article_features(tf.constant(article), table, 6, 30, tokenizer="ptb",
                                   lowercase=True)
  tokens = _whole(article[:400], "ptb", True)[:30]
  assert tokens[:6] == ["the", "u.s.", ".", "the", "end", "of"]
  assert _strings(features.article_tokens) == tokens
  assert features.enc_input.numpy().tolist() == [
      4 if t == "the" else 5 if t == "." else vocab_lib.UNK_ID for t in tokens]
  assert _strings(features.article_oovs) == ["u.s.", "end", "of", "apple", "inc.", "start"]
