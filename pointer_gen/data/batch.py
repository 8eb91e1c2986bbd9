"""A batch: the tensors the input pipeline makes of its examples, which the model, the losses and
the search read by field.

A NamedTuple, so that tf.data, tf.function input signatures, tf.distribute and tf.nest take it
as they take a tuple. One example, before batching, has the same fields without the batch
dimension (`pipeline.example_features`). Training reads a TrainingBatch: the same without the
strings.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

TEXT_FIELDS = ("article", "abstract", "article_oovs")


class Batch(NamedTuple):
  """B examples, each padded to the longest of the batch (PAD_ID, 0 or b"").

  Who reads what: teacher forcing enc_input, enc_len, dec_input, dec_len; the losses target,
  enc_input_ext, dec_len; the search enc_input, enc_input_ext, enc_len, num_oovs; decode turns
  ids into words with article_oovs and writes article and abstract. A batch built by hand
  leaves out (None) what its reader does not read.
  """
  enc_input: tf.Tensor  # [batch, enc_len] int32: article ids, out-of-vocab words as UNK_ID
  enc_input_ext: tf.Tensor  # [batch, enc_len] int32: the k-th article OOV as vocab_size + k
  enc_len: tf.Tensor  # [batch] int32: article tokens (after truncation to max_enc_steps)
  num_oovs: tf.Tensor = None  # [batch] int32: the article's distinct OOVs
  dec_input: tf.Tensor = None  # [batch, dec_len] int32: START, then the abstract's vocab ids
  target: tf.Tensor = None  # [batch, dec_len] int32: the abstract's extended ids, then STOP
  dec_len: tf.Tensor = None  # [batch] int32: decoder steps (at most max_dec_steps)
  article: tf.Tensor = None  # [batch] string: the article as read
  abstract: tf.Tensor = None  # [batch] string: the abstract, sentences joined by newlines
  article_oovs: tf.Tensor = None  # [batch, max_oovs] string: the article's OOVs, in id order

  def without_text(self):
    """The TrainingBatch of this batch."""
    return TrainingBatch(**{name: getattr(self, name) for name in TrainingBatch._fields})


class TrainingBatch(NamedTuple):
  """A Batch's fields without its strings (TEXT_FIELDS), as training reads them: strings cannot
  be placed on accelerators, and a distributed dataset takes no None in their place."""
  enc_input: tf.Tensor  # [batch, enc_len] int32
  enc_input_ext: tf.Tensor  # [batch, enc_len] int32
  enc_len: tf.Tensor  # [batch] int32
  num_oovs: tf.Tensor  # [batch] int32
  dec_input: tf.Tensor  # [batch, dec_len] int32
  target: tf.Tensor  # [batch, dec_len] int32
  dec_len: tf.Tensor  # [batch] int32


def spec(text=True):
  """The TensorSpecs of a Batch from the pipeline, for tf.function input signatures and
  generators' output signatures; without `text`, of its TrainingBatch."""
  ids = tf.TensorSpec([None, None], tf.int32)
  counts = tf.TensorSpec([None], tf.int32)
  strings = tf.TensorSpec([None], tf.string)
  result = Batch(enc_input=ids, enc_input_ext=ids, enc_len=counts, num_oovs=counts,
                 dec_input=ids, target=ids, dec_len=counts, article=strings, abstract=strings,
                 article_oovs=tf.TensorSpec([None, None], tf.string))
  return result if text else result.without_text()


class Example(NamedTuple):
  """One article of a batch as numpy and str values, its ids cut to its length: what decode and
  the Python API turn into words and single-pass decode's continuous batching searches. One
  built by hand for a search alone leaves the text out (None)."""
  enc_input: np.ndarray  # [enc_len] int32
  enc_input_ext: np.ndarray  # [enc_len] int32
  num_oovs: int
  article_oovs: list = None  # [num_oovs] str
  article: str = None
  abstract: str = None


def examples(batch):
  """The Examples of a batch from the pipeline (text included), in order."""
  values = tf.nest.map_structure(lambda value: value.numpy(), batch)
  for n, length in enumerate(values.enc_len):
    num_oovs = int(values.num_oovs[n])
    yield Example(
        enc_input=values.enc_input[n, :length],
        enc_input_ext=values.enc_input_ext[n, :length],
        num_oovs=num_oovs,
        article_oovs=[s.decode("utf-8") for s in values.article_oovs[n, :num_oovs]],
        article=values.article[n].decode("utf-8"),
        abstract=values.abstract[n].decode("utf-8"))
