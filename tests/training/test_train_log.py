"""The training log: one line every --log_every_n_steps global steps (and one at the end) with
the means of the steps since the previous line, while TensorBoard still gets every step."""

import re

import pytest

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.data.batch import Batch
from pointer_gen.formats import data_files
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train

from helpers import events
from helpers import tiny_hparams

LINE = re.compile(r"step (\d+): loss ([\d.]+), coverage loss ([\d.]+), p_gen ([\d.]+), "
                  r"global norm ([\d.]+)(?: \(means of (\d+) steps\))?; ([\d.]+) steps/s"
                  r"(?:, ETA (\d+):(\d\d):(\d\d))?$")
# The printed digits of each mean: loss, coverage loss, p_gen, global norm.
DIGITS = {"loss": 4, "coverage_loss": 4, "p_gen_mean": 3, "global_norm": 3}


def _hps(demo_corpus, tmp_path, **changes):
  return tiny_hparams(demo_corpus, tmp_path, coverage=True, checkpoint_secs=1000, **changes)


def _train(hps, caplog, dataset=None):
  """(the per-step history, the parsed log lines) of one training run."""
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  with caplog.at_level("INFO", logger="absl"):
    history = train.Trainer(hps, vocab).train(dataset)
  lines = [m for m in caplog.messages if m.startswith("step ")]
  return history, [LINE.fullmatch(m) for m in lines]


def _check_means(lines, history, windows):
  """Each line against the per-step values of its window (a slice of history)."""
  assert len(lines) == len(windows)
  for match, window in zip(lines, windows):
    rows = history[window]
    assert match is not None
    assert int(match.group(1)) == rows[-1]["step"]
    assert match.group(6) == (str(len(rows)) if len(rows) > 1 else None)
    for group, (key, digits) in enumerate(DIGITS.items(), start=2):
      mean = sum(row[key] for row in rows) / len(rows)
      assert float(match.group(group)) == pytest.approx(mean, abs=0.5 * 10**-digits + 1e-9), key


@pytest.mark.parametrize("every", [3, 1])
def test_one_line_every_n_steps_with_the_means_and_an_eta(demo_corpus, tmp_path, caplog, every):
  hps = _hps(demo_corpus, tmp_path, num_train_steps=7, log_every_n_steps=every)
  history, lines = _train(hps, caplog)
  assert [row["step"] for row in history] == list(range(1, 8))
  # Steps 3 and 6, then the last step on its own; or every step.
  windows = ([slice(0, 3), slice(3, 6), slice(6, 7)] if every == 3
             else [slice(k, k + 1) for k in range(7)])
  _check_means(lines, history, windows)
  for match in lines:
    eta = int(match.group(8)) * 3600 + int(match.group(9)) * 60 + int(match.group(10))
    left = 7 - int(match.group(1))
    # The ETA is the steps left over the rate, rounded to the second. The rate is printed to 2
    # decimals, within 0.005 of the one the ETA used: a slow step (a busy machine) leaves a
    # wide range of ETAs.
    rate = float(match.group(7))
    assert left / (rate + 0.005) - 0.5 - 1e-6 <= eta
    assert rate <= 0.005 or eta <= left / (rate - 0.005) + 0.5 + 1e-6
  assert lines[-1].group(8, 9, 10) == ("0", "00", "00")
  # TensorBoard still gets every step, the same values.
  scalars = events.read_scalars(hps.train_dir)
  for key in ("loss", "coverage_loss", "p_gen_mean", "global_norm"):
    assert [step for step, _ in scalars[key]] == list(range(1, 8)), key
    assert [value for _, value in scalars[key]] == pytest.approx(
        [row[key] for row in history], rel=1e-6), key


def test_without_num_train_steps_no_eta_and_the_last_steps_are_logged_when_the_data_ends(
    demo_corpus, tmp_path, caplog):
  hps = _hps(demo_corpus, tmp_path, log_every_n_steps=3)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  source = data.RecordSource(data_files.DataFiles.find(demo_corpus["val"]), single_pass=True)
  batches = data.make_dataset(source, vocab.lookup_table(), len(vocab),
                              hps.replace(single_pass=True))
  dataset = batches.map(Batch.without_text)
  history, lines = _train(hps, caplog, dataset.take(5))
  assert [row["step"] for row in history] == [1, 2, 3, 4, 5]
  _check_means(lines, history, [slice(0, 3), slice(3, 5)])
  assert all(match.group(8) is None for match in lines)


def test_log_every_n_steps_must_be_positive():
  with pytest.raises(DataError, match=r"^--log_every_n_steps=0: must be positive$"):
    config.HParams(log_every_n_steps=0).validated()
