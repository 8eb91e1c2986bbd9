"""Tokenisation shared by the input pipeline, the vocab tool and the serving graph.

Everything here is TensorFlow ops so that a SavedModel tokenises exactly as training did.
"""

import tensorflow as tf

from pointer_gen import ptb

TOKENIZERS = ("whitespace", "punct", "ptb")

# Splits punctuation off words for raw text (JSONL); pre-tokenised data such as CNN/DM's
# finished_files and vietnews use "whitespace" and keep their own tokens untouched.
_PUNCT_PATTERN = r"([\p{P}\p{S}])"

# make_datafiles.py, which wrote CNN/DM's data after CoreNLP, appends " ." to a line unless its
# last byte is one of these ASCII characters (so a line ending in -RRB- gets one; the last byte
# of a multi-byte character never matches); lines holding "@highlight" are story markers and
# keep their form.
_ENDS_SENTENCE = r"(?s).*[.!?'`\")]"
_HIGHLIGHT_LINE = r".*@highlight.*"


def tokenize(texts, tokenizer="whitespace", lowercase=False):
  """Splits a string tensor of any shape into a ragged tensor of tokens (one more rank)."""
  if tokenizer not in TOKENIZERS:
    raise ValueError(f"--tokenizer={tokenizer!r}: expected one of {', '.join(TOKENIZERS)}")
  texts = tf.convert_to_tensor(texts, tf.string)
  if tokenizer == "ptb":
    return _tokenize_ptb(texts, lowercase)
  if lowercase:
    texts = tf.strings.lower(texts, encoding="utf-8")
  if tokenizer == "punct":
    texts = tf.strings.regex_replace(texts, _PUNCT_PATTERN, r" \1 ")
  return tf.strings.split(texts)


def _tokenize_ptb(texts, lowercase):
  """CNN/DM's text pipeline: each line (paragraph) PTB-tokenised alone, then, as
  make_datafiles.py did it, ASCII-only lower-casing and the missing period added per line;
  lines without tokens vanish. The tokens of a text's lines are concatenated."""
  lines = tf.strings.split(tf.reshape(texts, [-1]), "\n")  # [N, (lines)]
  tokens = ptb.tokenize_lines(lines.flat_values)  # [M, (T)]
  if lowercase:
    # Without an encoding, only A-Z change: make_datafiles.py lower-cased Python 2 byte strings.
    tokens = tf.ragged.map_flat_values(tf.strings.lower, tokens)  # [M, (T)]
  num_tokens = tokens.row_lengths()  # [M]
  # Each line's last token ("" before any token: a text may have none at all).
  last = tf.gather(tf.concat([[""], tokens.flat_values], 0), tokens.row_limits())  # [M]
  needs_period = ((num_tokens > 0)
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


def tokenize_py(text, tokenizer="whitespace", lowercase=False):
  """Tokenises one Python string with the same ops, for tools that count words."""
  return [t.decode("utf-8") for t in tokenize(tf.constant(text), tokenizer, lowercase).numpy()]
