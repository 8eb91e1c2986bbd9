"""Shared by the distribution tests and their helper processes."""

import tensorflow as tf

from pointer_gen.data import pipeline as data

from helpers import tiny_hparams as tiny_run_hparams

# The run's flags besides the tiny run's (helpers.TINY_RUN).
CHANGES = {"coverage": True, "seed": 7, "num_train_steps": 1}


def tiny_hparams(corpus, log_root):
  """The tiny run with CHANGES on the demo corpus in the directory `corpus`."""
  files = {"train": f"{corpus}/chunked/train_*", "vocab": f"{corpus}/vocab"}
  return tiny_run_hparams(files, log_root, checkpoint_secs=10000, **CHANGES)


def first_batch(hps, vocab, batch_size, num_shards=1, shard_index=0):
  """The first training batch one input pipeline (shard) produces, without the strings.

  tf.data's shuffle seed combines with the global seed, which the Trainer sets from --seed.
  """
  tf.keras.utils.set_random_seed(hps.seed)
  source = data.RecordSource(data.files_of(hps), seed=hps.seed, num_shards=num_shards,
                             shard_index=shard_index)
  batch = next(iter(data.make_dataset(source, vocab.lookup_table(), len(vocab), hps,
                                      batch_size=batch_size)))
  return batch.without_text()


def concat_batches(first, second):
  """One batch holding both, padded to the longer encoder and decoder lengths with [PAD]."""

  def concat(a, b):
    if a.shape.rank == 2:
      width = max(a.shape[1], b.shape[1])
      a = tf.pad(a, [[0, 0], [0, width - a.shape[1]]], constant_values=1)
      b = tf.pad(b, [[0, 0], [0, width - b.shape[1]]], constant_values=1)
    return tf.concat([a, b], axis=0)

  return tf.nest.map_structure(concat, first, second)
