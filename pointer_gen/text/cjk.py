"""Text written without spaces: the characters `--tokenizer=cjk` makes tokens of their own, that
rule for ROUGE in plain Python (`--rouge_tokenizer=cjk`; metrics computes without TensorFlow),
and how such text read by another tokenizer is recognised (`unsplit`: the vocab tool, the
vocab's and the data's checks name --tokenizer=cjk by it). text.py builds its RE2 classes from
the same ranges.

The anchor is BERT's basic tokenizer: every CJK ideograph a token of its own, other text split at
whitespace and at each punctuation or symbol character (Unicode P and S), runs of other letters
and digits kept as words. Kana is split as ideographs are; Hangul stays in words (Korean writes
spaces).
"""

import re
import typing
import unicodedata

# The CJK ideograph blocks: unified, extension A, extension B, extensions C to F, compatibility,
# compatibility supplement.
IDEOGRAPHS = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2EBEF),
              (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
KANA = ((0x3040, 0x30FF),)  # hiragana and katakana
# Text for people writes no space between two tokens of these, nor between one and a
# punctuation or symbol character (text.written): the ideographs, kana, and the CJK and
# full-width punctuation, symbols and forms.
WRITTEN_TOGETHER = IDEOGRAPHS + KANA + ((0x3000, 0x303F), (0xFF00, 0xFFEF))

# What tf.strings.split splits at: ASCII whitespace only.
_WHITESPACE = re.compile("[\t\n\v\f\r ]+")


def re2_class(ranges):
  """The ranges as the inside of an RE2 character class: `\\x{4E00}-\\x{9FFF}...`."""
  return "".join(f"\\x{{{low:X}}}-\\x{{{high:X}}}" for low, high in ranges)


def _in(character, ranges):
  point = ord(character)
  return any(low <= point <= high for low, high in ranges)


def is_own_token(character):
  """Whether `--tokenizer=cjk` makes `character` a token of its own."""
  return (_in(character, IDEOGRAPHS + KANA)
          or unicodedata.category(character)[0] in "PS")


def tokens(text):
  """`--tokenizer=cjk`'s tokens of `text` (str) in plain Python, as ROUGE takes them."""
  result = []
  for word in _WHITESPACE.split(text):
    start = 0
    for i, character in enumerate(word):
      if is_own_token(character):
        result += [word[start:i], character]
        start = i + 1
    result.append(word[start:])
  return [token for token in result if token]


def has_cjk(text):
  """Whether `text` holds an ideograph or a kana letter."""
  return any(_in(character, IDEOGRAPHS + KANA) for character in text)


# Text written without spaces read by a tokenizer that splits at spaces (whitespace, punct, ptb)
# gives "words" that are clauses or whole texts. A run of this many ideographs or kana in one
# token is more than a word: a segmenter's Chinese words are mostly one or two characters, few
# over four.
UNSPLIT_RUN = 5
# Tokens are taken as such text when the characters in those runs are over this share of all
# their characters: csl_titles' train split read by whitespace or punct has 77.7 % (the rest is
# Latin, digits and marks; docs/data.md); text in words, or mostly in another script, next to
# none.
# Characters, not tokens, are counted: punct makes every mark between two clauses a token.
UNSPLIT_SHARE = 0.25
_UNSPLIT = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in IDEOGRAPHS + KANA)
                      + f"]{{{UNSPLIT_RUN},}}")


class Unsplit(typing.NamedTuple):
  """Tokens found to be text written without spaces."""
  share: float  # of their characters in runs of UNSPLIT_RUN or more ideographs or kana
  example: str  # the most frequent token holding such a run, cut to 20 characters

  def said(self):
    """What the tokens are, for a message that names the fix after it."""
    return (f"runs of ideographs or kana ({100 * self.share:.1f} % of their characters in runs "
            f"of {UNSPLIT_RUN} or more, e.g. {self.example!r}): text written without spaces, "
            "which --tokenizer=cjk splits into characters")


def unsplit(counts):
  """Unsplit when `counts` (a mapping of token to occurrences) are tokens of text written
  without spaces (above), else None."""
  total = in_runs = 0
  example, example_count = None, 0
  for token, count in counts.items():
    total += len(token) * count
    run_chars = sum(len(run) for run in _UNSPLIT.findall(token))
    in_runs += run_chars * count
    if run_chars and count > example_count:
      example, example_count = token, count
  if not total or in_runs <= UNSPLIT_SHARE * total:
    return None
  cut = example if len(example) <= 20 else example[:20] + "…"
  return Unsplit(in_runs / total, cut)
