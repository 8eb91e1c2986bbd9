"""Tokenisation shared by the input pipeline, the vocab tool and the serving graph.

Everything here is TensorFlow ops so that a SavedModel tokenises exactly as training did.
"""

import tensorflow as tf

TOKENIZERS = ("whitespace", "punct")

# Splits punctuation off words for raw text (JSONL); pre-tokenised data such as CNN/DM's
# finished_files and vietnews use "whitespace" and keep their own tokens untouched.
_PUNCT_PATTERN = r"([\p{P}\p{S}])"


def tokenize(texts, tokenizer="whitespace", lowercase=False):
  """Splits a string tensor of any shape into a ragged tensor of tokens (one more rank)."""
  if tokenizer not in TOKENIZERS:
    raise ValueError(f"--tokenizer={tokenizer!r}: expected one of {', '.join(TOKENIZERS)}")
  texts = tf.convert_to_tensor(texts, tf.string)
  if lowercase:
    texts = tf.strings.lower(texts, encoding="utf-8")
  if tokenizer == "punct":
    texts = tf.strings.regex_replace(texts, _PUNCT_PATTERN, r" \1 ")
  return tf.strings.split(texts)


def tokenize_py(text, tokenizer="whitespace", lowercase=False):
  """Tokenises one Python string with the same ops, for tools that count words."""
  return [t.decode("utf-8") for t in tokenize(tf.constant(text), tokenizer, lowercase).numpy()]
