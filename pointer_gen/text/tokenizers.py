"""Tokenisation shared by the input pipeline, the vocab tool and the serving graph.

Everything here is TensorFlow ops so that a SavedModel tokenises exactly as training did.
"""

import typing

import tensorflow as tf

from pointer_gen.text import cjk
from pointer_gen.text import ptb

# Splits punctuation off words for raw text (JSONL); pre-tokenised data such as CNN/DM's
# finished_files and vietnews use "whitespace" and keep their own tokens untouched.
_PUNCT_PATTERN = r"([\p{P}\p{S}])"

# The characters --tokenizer=cjk makes tokens of their own besides those: ideographs and kana.
_IDEOGRAPHS = cjk.re2_class(cjk.IDEOGRAPHS)
_KANA = cjk.re2_class(cjk.KANA)
_CJK_PATTERN = r"([\p{P}\p{S}" + _IDEOGRAPHS + _KANA + "])"

# make_datafiles.py, which wrote CNN/DM's data after CoreNLP, appends " ." to a line unless its
# last byte is one of these ASCII characters (so a line ending in -RRB- gets one; the last byte
# of a multi-byte character never matches); lines holding "@highlight" are story markers and
# keep their form.
_ENDS_SENTENCE = r"(?s).*[.!?'`\")]"
_HIGHLIGHT_LINE = r".*@highlight.*"


def _split(pattern):
  """A tokenizer that splits at whitespace, `pattern`'s matches (one group) tokens of their own."""

  def split(texts, lowercase):
    if lowercase:
      texts = tf.strings.lower(texts, encoding="utf-8")
    if pattern:
      texts = tf.strings.regex_replace(texts, pattern, r" \1 ")
    return tf.strings.split(texts)

  return split


# Where tokenize_prefix may cut a text: at the end of the last match in a window (a greedy `.*`
# finds it; it stops at invalid UTF-8, so a window may end inside a character). For whitespace
# and punct, any ASCII space or line break: their tokens end there, and so does the context of
# `lower`'s one context-dependent mapping (a final sigma looks past case-ignorable characters
# only). For ptb, a line break (each line is tokenised alone), or a space after a word of
# lower-case ASCII letters that follows a space or begins a line; see _tokenize_cut. For cjk,
# also after an ideograph or a kana letter (Chinese and Japanese write few spaces): a token of
# its own, and the final sigma's look stops at it (kana's iteration and prolonged sound marks
# are case-ignorable, so they are no cuts).
_SPACE_CUT = "[ \n]"
_CUT_KANA = cjk.re2_class(((0x3041, 0x3096), (0x309F, 0x309F), (0x30A1, 0x30FA),
                           (0x30FF, 0x30FF)))

# The tokens that text for people writes without a space between two of them (`written`).
_CJK_WRITTEN = "[" + cjk.re2_class(cjk.WRITTEN_TOGETHER) + "]"


class _Tokenizer(typing.NamedTuple):
  split: typing.Callable  # (texts, lowercase) -> tokens, one more rank
  cut: str  # where tokenize_prefix may cut (above)
  # The tokens `written` without a space between two, or beside a punctuation or symbol
  # character (None: none).
  together: str | None = None


# Each --tokenizer. The one place the choices are declared: the flags, tools/make_vocab.py and
# the checks that try each take them from here.
_TOKENIZERS = {
    "whitespace": _Tokenizer(_split(None), _SPACE_CUT),
    "punct": _Tokenizer(_split(_PUNCT_PATTERN), _SPACE_CUT),
    "ptb": _Tokenizer(lambda texts, lowercase: _tokenize_ptb(texts, lowercase),
                      "(?:(?:^|[ \n])[a-z]+ |\n)"),
    "cjk": _Tokenizer(_split(_CJK_PATTERN), "[ \n" + _IDEOGRAPHS + _CUT_KANA + "]",
                      together=_CJK_WRITTEN),
}
TOKENIZERS = tuple(_TOKENIZERS)


class Tokenization(typing.NamedTuple):
  """How text becomes tokens: a --tokenizer, and whether the text is lower-cased first."""
  tokenizer: str
  lowercase: bool


def _of(tokenizer):
  if tokenizer not in TOKENIZERS:
    raise ValueError(f"--tokenizer={tokenizer!r}: expected one of {', '.join(TOKENIZERS)}")
  return _TOKENIZERS[tokenizer]


def tokenize(texts, tokenizer="whitespace", lowercase=False):
  """Splits a string tensor of any shape into a ragged tensor of tokens (one more rank)."""
  return _of(tokenizer).split(tf.convert_to_tensor(texts, tf.string), lowercase)


def separators(tokens, tokenizer):
  """What text for people writes before each token of `tokens` (a ragged string tensor
  [B, (T)], the model's tokens as `tokenizer` makes them): nothing before a row's first token
  and where `tokenizer` writes tokens together (cjk: between two CJK characters, and between
  one and a punctuation or symbol character beside it, as the language writes `研究(MRP)`,
  `“好课”的`, and within a decimal number: `3.2`), else a space. [B, (T)]."""
  flat = tokens.values  # [N]
  position = (tf.range(tf.size(flat, tf.int64))
              - tf.gather(tokens.row_starts(), tokens.value_rowids()))  # [N]
  after_one = position > 0  # [N] a token after another of its row
  apart = after_one  # [N]
  together = _of(tokenizer).together
  if together:
    joins = tf.strings.regex_full_match(flat, together)  # [N]
    mark = joins | tf.strings.regex_full_match(flat, _PUNCT_PATTERN)  # [N]
    apart &= ~(mark & _shifted(mark) & (joins | _shifted(joins)))
    # The tokenizer splits a decimal point off its digits (`3.2` is `3 . 2`); written apart,
    # `3 . 2 个百分点` reads as three things. A `.` between two runs of digits in a row is written
    # as the number was.
    digits = tf.strings.regex_full_match(flat, "[0-9]+")  # [N]
    point = ((flat == ".") & after_one & _shifted(digits)
             & _shifted(digits & after_one, forward=True))  # [N]
    apart &= ~(point | _shifted(point))
  return tokens.with_values(tf.where(apart, " ", ""))


def _shifted(values, forward=False):
  """[N] bool: the value of the token before each (False for the first), or with `forward` of
  the token after each (False for the last)."""
  if forward:
    return tf.concat([values[1:], [False]], 0)
  return tf.concat([[False], values[:-1]], 0)


def written(tokens, tokenizer, shown=None):
  """The text for people of each row of `tokens` (a ragged string tensor [B, (T)]): the
  tokens, or `shown` (the same shape: the tokens as a page marks them), joined by
  `separators`. [B]."""
  shown = tokens if shown is None else shown
  if not _of(tokenizer).together:
    return tf.strings.reduce_join(shown, axis=-1, separator=" ")
  return tf.strings.reduce_join(separators(tokens, tokenizer) + shown, axis=-1)


def writes_together(tokenizer):
  """Whether text for people (`written`) writes some of `tokenizer`'s tokens without a space
  between them."""
  return _of(tokenizer).together is not None


def separators_of(words, tokenizer):
  """`separators` of one list of words (str), as a list of str."""
  ragged = tf.ragged.constant([words], tf.string, ragged_rank=1)  # [1, (T)]
  return [s.decode("utf-8") for s in separators(ragged, tokenizer)[0].numpy()]


def written_sentences(sentences, tokenizer):
  """Sentences of space-separated tokens (a summary as the ROUGE files hold it), one after
  another as text for people. Split at the spaces that join them only: a token may hold other
  whitespace (ptb's `<p\xa0class=x>`)."""
  return written_text([t for s in sentences for t in s.split(" ") if t], tokenizer)


def written_text(words, tokenizer, shown=None):
  """`written` of one list of words (str), as a str."""
  ragged = tf.ragged.constant([words], tf.string, ragged_rank=1)  # [1, (T)]
  shown = None if shown is None else tf.ragged.constant([shown], tf.string, ragged_rank=1)
  return written(ragged, tokenizer, shown).numpy()[0].decode("utf-8")


# tokenize_prefix's first window, in bytes per token wanted: English text has about 5 bytes to a
# ptb token, 6 to a whitespace one, so the first window almost always suffices (Chinese has 3 to
# a cjk one).
WINDOW_BYTES_PER_TOKEN = 8


def tokenize_prefix(text, max_tokens, tokenizer="whitespace", lowercase=False,
                    repair_utf8=False, first_window=None):
  """The first `max_tokens` tokens of `tokenize(text, tokenizer, lowercase)` for a scalar
  string `text`, read from only as much of the text as they need: a window of its first
  `first_window` bytes (WINDOW_BYTES_PER_TOKEN per token by default), cut at its last safe
  place (the tokenizer's `cut`) and tokenised; while that gives fewer tokens (or ptb cannot
  vouch for them), a window twice as long, up to the whole text. The cost follows the tokens wanted, not the text.

  repair_utf8: invalid UTF-8 becomes U+FFFD in the window, as unicode_transcode does it to the
  whole text up to any ASCII byte, the cut's included.
  """
  _of(tokenizer)
  text = tf.convert_to_tensor(text, tf.string)  # []
  size = tf.cast(tf.strings.length(text), tf.int64)  # []
  max_tokens = tf.cast(max_tokens, tf.int64)
  if first_window is None:
    first_window = WINDOW_BYTES_PER_TOKEN * max_tokens
  first = tf.cast(first_window, tf.int64)

  def read(window_bytes, tokens, done):
    del tokens, done
    window = tf.strings.substr(text, tf.constant(0, tf.int64), window_bytes)  # []
    if repair_utf8:
      window = tf.strings.unicode_transcode(window, "UTF-8", "UTF-8", errors="replace")  # []
    whole = window_bytes >= size
    prefix = tf.where(whole, window, _cut(window, tokenizer))  # []
    tokens, vouched = _tokenize_cut(prefix, ~whole, tokenizer, lowercase)  # [T], []
    done = whole | (vouched & (tf.size(tokens, tf.int64) >= max_tokens))
    return window_bytes * 2, tokens[:max_tokens], done

  _, tokens, _ = tf.while_loop(
      lambda window_bytes, tokens, done: ~done, read,
      (first, tf.zeros([0], tf.string), tf.constant(False)),
      shape_invariants=(first.shape, tf.TensorShape([None]), tf.TensorShape([])))
  return tokens  # [min(T, max_tokens)]


def _cut(windows, tokenizer):
  """Each window (a string tensor) up to the end of its last cut ("" without one): what
  a `^.*` match of that removes."""
  rest = tf.strings.regex_replace(windows, "^(?s:.*" + _of(tokenizer).cut + ")", "")
  return tf.strings.substr(windows, tf.zeros_like(tf.strings.length(windows)),
                           tf.strings.length(windows) - tf.strings.length(rest))


def _tokenize_cut(prefix, cut, tokenizer, lowercase):
  """The tokens of `prefix` (a string tensor, of any shape as `tokenize`: the whole text, or,
  when `cut`, the text up to a cut) and whether they are the first tokens of the whole
  text whatever follows (a bool of prefix's shape).

  whitespace, punct, cjk: always (see the cuts' comment). ptb: each line alone, so a cut after a
  line break is always safe. Within a line, cut at (after) a space that follows a word w of [a-z]+ after a
  space or the line's start, every pass of ptb.py makes the same text before the space of the
  cut line as of the whole line, and leaves the space and w's letters:
  - a rule that matches across a space needs before it something else than w's last letter: a
    period (abbreviations, acronyms, `So. Africa`, `Co. Ltd`, spaced dots, `....`), a digit
    (fractions, phone numbers, `'99 `), `!` (`OK! magazine`), or a word that starts with a
    capital (the word after an acronym that starts a sentence);
  - a rule whose last character may be the space (a non-letter after a clitic, a smiley, a
    number or an abbreviation) sees it in both, as the cut keeps it; no rule has a `$` or `\\b`
    right after the space, where the two differ (each `$` follows a letter, or a period and at
    most one more character; each `\\b` that ends a match follows a letter);
  - a match that starts at the space (a rule's left context) or after it rewrites only what
    follows;
  - w stays lower-case letters (`cannot`, `gonna`, `dunno` ... are split into such words), and
    in the lexer's passes only phone numbers and fractions (digits) and spaced dots hold a
    space, so this holds pass after pass and the tokens split there;
  - the cut line gets no period (`cut`), and ptb lower-cases a token at a time.
  The exception is markup, taken out first: a tag may hold spaces and end far beyond (`<p
  class=a title='x y'>`, `<!-- ... -->`), so a cut line holding a `<` that may open a tag not
  closed before the cut (ptb.open_markup) is not vouched for.
  """
  cut = tf.convert_to_tensor(cut, tf.bool)
  if tokenizer != "ptb":
    return tokenize(prefix, tokenizer, lowercase), tf.fill(tf.shape(prefix), True)
  lines = tf.strings.split(tf.reshape(prefix, [-1]), "\n")  # [N, (lines)]
  last_lines = tf.gather(lines.flat_values, lines.row_limits() - 1)  # [N]
  vouched = ~cut | ~ptb.open_markup(last_lines)  # [N]
  return _tokenize_ptb(prefix, lowercase, cut), tf.reshape(vouched, tf.shape(prefix))


def _tokenize_ptb(texts, lowercase, cut=False):
  """CNN/DM's text pipeline: each line (paragraph) PTB-tokenised alone, then, as
  make_datafiles.py did it, ASCII-only lower-casing and the missing period added per line;
  lines without tokens vanish. The tokens of a text's lines are concatenated. `cut` (a bool
  tensor): the text was cut inside its last line, which goes on, so gets no period yet."""
  lines = tf.strings.split(tf.reshape(texts, [-1]), "\n")  # [N, (lines)]
  tokens = ptb.tokenize_lines(lines.flat_values)  # [M, (T)]
  if lowercase:
    # Without an encoding, only A-Z change: make_datafiles.py lower-cased Python 2 byte strings.
    tokens = tf.ragged.map_flat_values(tf.strings.lower, tokens)  # [M, (T)]
  num_tokens = tokens.row_lengths()  # [M]
  # Each line's last token ("" before any token: a text may have none at all).
  last = tf.gather(tf.concat([[""], tokens.flat_values], 0), tokens.row_limits())  # [M]
  last_lines = lines.row_limits() - 1  # [N], a text has at least one line
  goes_on = tf.scatter_nd(last_lines[:, None], tf.fill(tf.shape(last_lines), cut),
                          tf.shape(num_tokens, tf.int64))  # [M]
  needs_period = ((num_tokens > 0)
                  & ~goes_on
                  & ~tf.strings.regex_full_match(last, _ENDS_SENTENCE)
                  & ~tf.strings.regex_full_match(lines.flat_values, _HIGHLIGHT_LINE))  # [M]
  period = tf.ragged.boolean_mask(tf.fill([tf.size(num_tokens), 1], "."),
                                  needs_period[:, None])  # [M, (0 or 1)]
  tokens = tf.concat([tokens, period], axis=1)  # [M, (T')]
  tokens = lines.with_flat_values(tokens).merge_dims(1, 2)  # [N, (tokens)]
  if texts.shape.rank == 0:
    return tokens[0]
  # Back to the input's shape, as tf.strings.split returns it: [d0, ..., (tokens)].
  for axis in range(texts.shape.rank - 1, 0, -1):
    tokens = tf.RaggedTensor.from_uniform_row_length(tokens, tf.shape(texts, tf.int64)[axis])
  return tokens
