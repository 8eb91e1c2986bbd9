"""tools/average_checkpoints.py: the averaged checkpoint holds the mean of the checkpoints' model
weights and the newest's optimizer state and step, and every mode's loader reads it."""

import numpy as np
import pytest

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import training_state

from helpers import load_tool
from test_search import WORDS
from test_search import _model

average_checkpoints = load_tool("average_checkpoints")


def _state(seed):
  hps = config.HParams(hidden_dim=5, emb_dim=6, vocab_size=len(WORDS) + 4, coverage=True)
  model = _model(hps, vocab_lib.Vocab(WORDS))
  rng = np.random.default_rng(seed)
  for var in model.weights:
    var.assign(rng.normal(0.0, 1.0, var.shape).astype(np.float32))
  state = training_state.TrainingState(hps, model)
  for var in state.optimizer.variables:
    if len(var.shape):  # the accumulators, told apart by the seed; not the iteration count
      var.assign(np.full(var.shape, seed, var.dtype))
  return hps, state


def test_the_average_is_the_mean_of_the_weights(tmp_path):
  paths, weights = [], []
  for seed, step in ((1, 100), (2, 200), (3, 300)):
    hps, state = _state(seed)
    state.step.assign(step)
    paths.append(state.write_as_newest(str(tmp_path / "train"),
                                       f"{checkpoints.CHECKPOINT_NAME}-{step}"))
    weights.append({v.path: v.numpy() for v in state.model.weights})
  assert average_checkpoints.chosen(str(tmp_path / "train"), 2, "") == paths[1:]
  output = str(tmp_path / "averaged" / "model.ckpt-300")
  averaged = average_checkpoints.average(paths, output)
  assert len(averaged) == len(weights[0])

  _, fresh = _state(9)
  assert fresh.restore(output) == 300  # the whole training state: train resumes from it
  for var in fresh.model.weights:
    want = np.mean([w[var.path].astype(np.float64) for w in weights], axis=0)
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-6, atol=1e-7, err_msg=var.path)
  _, newest = _state(3)
  for mine, theirs in zip(fresh.optimizer.variables, newest.optimizer.variables):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
  # Decode, eval and export load the weights alone.
  _, model_only = _state(7)
  assert checkpoints.restore_weights(model_only.model, output) == 300


def test_checkpoints_of_another_model_are_refused(tmp_path):
  _, small = _state(1)
  first = small.write_as_newest(str(tmp_path / "a"), "model.ckpt-1")
  hps = config.HParams(hidden_dim=7, emb_dim=6, vocab_size=len(WORDS) + 4, coverage=True)
  other = training_state.TrainingState(hps, _model(hps, vocab_lib.Vocab(WORDS)))
  second = other.write_as_newest(str(tmp_path / "b"), "model.ckpt-2")
  with pytest.raises(DataError, match=r"model\.ckpt-1: not the model of .*model\.ckpt-2"):
    average_checkpoints.average([first, second], str(tmp_path / "out" / "model.ckpt-2"))
  with pytest.raises(DataError, match=r"--average_last=3: .* lists 1 checkpoint"):
    average_checkpoints.chosen(str(tmp_path / "a"), 3, "")
