"""A tiny corpus and a random model for the search's tests (test_search, test_controls,
test_reference_scores): words w0..w15, articles of 3-10 of them, a likelier [STOP]."""

import json
import os

import numpy as np
import tensorflow as tf

from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib


WORDS = [f"w{i}" for i in range(16)]


def corpus(directory, num, seed):
  """A JSONL file of `num` articles of 3-10 of WORDS and an unseen word or two."""
  rng = np.random.default_rng(seed)
  path = os.path.join(directory, "val.jsonl")
  with open(path, "w", encoding="utf-8") as f:
    for n in range(num):
      words = list(rng.choice(WORDS + ["oovA", "oovB"], rng.integers(3, 11)))
      f.write(json.dumps({"article": " ".join(words), "abstract": " ".join(words[:3])}) + "\n")
  return path


def model(hps, vocab):
  """A random model of `hps`'s sizes with a likelier [STOP], so that some summaries end before
  max_dec_steps."""
  tf.keras.utils.set_random_seed(0)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  rng = np.random.default_rng(0)
  for var in model.weights:
    var.assign(rng.normal(0.0, 0.6, var.shape).astype(np.float32))
  bias = model.cell.vocab_projection.bias
  bias.assign(tf.tensor_scatter_nd_update(bias, [[vocab_lib.STOP_ID]], [2.0]))
  return model
