"""The batch types against what the input pipeline makes: the specs that signatures are built
from are those of its batches, with and without the strings, and a batch's Examples are its
articles cut to their lengths."""

import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.data import batch as batch_lib
from pointer_gen.data import pipeline as data
from pointer_gen.text import vocab as vocab_lib

WORDS = ["the", "cat", "sat", "on", "mat", "."]
# The four special tokens first: the=4 ... .=9; article OOVs from V on.
V = len(vocab_lib.SPECIALS) + len(WORDS)
THE, CAT, SAT, ON, MAT, DOT = range(len(vocab_lib.SPECIALS), V)
UNK = vocab_lib.UNK_ID
PAIRS = [("the zebra sat on the quokka .", "the zebra sat ."),
         ("the cat", "a cat sat\non the mat .")]


@pytest.fixture(scope="module")
def dataset():
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(batch_size=2, max_enc_steps=10, max_dec_steps=6, single_pass=True)
  return data.make_dataset(lambda: iter(PAIRS), vocab.lookup_table(), len(vocab), hps)


def _compatible(spec, element_spec):
  """Each field of `spec` is a TensorSpec its field of `element_spec` fits."""
  assert type(spec) is type(element_spec)
  for name, declared, made in zip(spec._fields, spec, element_spec, strict=True):
    assert declared.is_compatible_with(made), name


def test_the_spec_is_the_pipelines(dataset):
  _compatible(batch_lib.spec(), dataset.element_spec)


def test_the_training_batch_is_the_batch_without_its_strings(dataset):
  training = dataset.map(batch_lib.Batch.without_text)
  assert batch_lib.TrainingBatch._fields == tuple(
      name for name in batch_lib.Batch._fields if name not in batch_lib.TEXT_FIELDS)
  assert all(spec.dtype != tf.string for spec in training.element_spec)
  _compatible(batch_lib.spec(text=False), training.element_spec)
  (batch,) = list(dataset)
  for name, value in batch.without_text()._asdict().items():
    assert value is getattr(batch, name), name


def test_examples_are_the_articles_cut_to_their_lengths(dataset):
  (batch,) = list(dataset)
  examples = list(batch_lib.examples(batch))
  assert [e.article for e in examples] == [p[0] for p in PAIRS]
  assert [e.abstract for e in examples] == [p[1] for p in PAIRS]
  first, second = examples
  assert first.enc_input.tolist() == [THE, UNK, SAT, ON, THE, UNK, DOT]
  assert first.enc_input_ext.tolist() == [THE, V, SAT, ON, THE, V + 1, DOT]  # zebra, quokka
  assert (first.num_oovs, first.article_oovs) == (2, ["zebra", "quokka"])
  # The shorter article's padding and the first's OOV columns are cut off.
  assert second.enc_input.tolist() == second.enc_input_ext.tolist() == [THE, CAT]
  assert (second.num_oovs, second.article_oovs) == (0, [])
