"""Text written without spaces: the characters `--tokenizer=cjk` makes tokens of their own, and
that rule for ROUGE in plain Python (`--rouge_tokenizer=cjk`; metrics computes without
TensorFlow). text.py builds its RE2 classes from the same ranges.

The anchor is BERT's basic tokenizer: every CJK ideograph a token of its own, other text split at
whitespace and at each punctuation or symbol character (Unicode P and S), runs of other letters
and digits kept as words. Kana is split as ideographs are; Hangul stays in words (Korean writes
spaces).
"""

import re
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
