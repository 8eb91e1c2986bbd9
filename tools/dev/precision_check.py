"""Convergence of --precision=mixed_bfloat16 against float32 on real data.

    python tools/dev/precision_check.py [--steps=2000] [--window=250] [--json_out=precision_check.json]

Trains the same small model twice from the same seed (so the same initial weights and the same
batches in the same order), once per precision, on ../shared/data/vietnews_bin by default, and
prints the mean training loss of each window of --window steps for both and their difference;
the check passes when every window's difference is within --tolerance. This is a check, not a
unit test: 2 x 2,000 steps take hours on a small CPU. Each run's train dir is under --log_root
(removed first, so that a run never resumes an older one).
"""

import json
import os
import pathlib
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[2]

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np

from pointer_gen import config
from pointer_gen import usage
from pointer_gen.base import environment
from pointer_gen.base.precision import PRECISIONS
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train

# The command line's process-wide CPU choices (allocator, XLA's vector width): timed as it runs.
environment.choose_cpu_settings()

VIETNEWS = REPO.parent / "shared" / "data" / "vietnews_bin"

FLAGS = flags.FLAGS
flags.DEFINE_string("data_path", str(VIETNEWS / "chunked" / "train_*"), "Training data.")
flags.DEFINE_string("vocab_path", str(VIETNEWS / "vocab"), "Vocab of the data.")
flags.DEFINE_string("log_root", "/tmp/pointer_gen_precision_check", "Where the runs train.")
flags.DEFINE_integer("steps", 2000, "Training steps per precision.")
flags.DEFINE_integer("window", 250, "Steps per window of the loss comparison.")
flags.DEFINE_float("tolerance", 0.05, "Largest allowed difference of a window's mean loss.")
flags.DEFINE_integer("hidden_dim", 64, "Small configuration: LSTM size.")
flags.DEFINE_integer("emb_dim", 64, "Small configuration: embedding size.")
flags.DEFINE_integer("vocab_size", 20000, "Small configuration: vocabulary entries.")
flags.DEFINE_integer("max_enc_steps", 200, "Small configuration: article tokens.")
flags.DEFINE_integer("max_dec_steps", 30, "Small configuration: summary tokens.")
flags.DEFINE_integer("batch_size", 16, "Small configuration: batch size.")
flags.DEFINE_boolean("coverage", False, "Train with coverage.")
flags.DEFINE_integer("seed", 0, "Seed of both runs: initial weights and data order.")
flags.DEFINE_string("json_out", "precision_check.json", "Where to write the per-step losses "
                    "and the window table.")


def run_precision(precision):
  """The per-step training losses of one run of FLAGS.steps steps at `precision`."""
  hps = config.HParams(
      data_path=FLAGS.data_path, vocab_path=FLAGS.vocab_path, log_root=FLAGS.log_root,
      exp_name=precision, hidden_dim=FLAGS.hidden_dim, emb_dim=FLAGS.emb_dim,
      vocab_size=FLAGS.vocab_size, max_enc_steps=FLAGS.max_enc_steps,
      max_dec_steps=FLAGS.max_dec_steps, batch_size=FLAGS.batch_size, coverage=FLAGS.coverage,
      num_train_steps=FLAGS.steps, checkpoint_secs=10**9, seed=FLAGS.seed,
      precision=precision).validated()
  shutil.rmtree(hps.run_dir, ignore_errors=True)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  history = train.Trainer(hps, vocab).train()
  return [row["loss"] for row in history]


def window_table(curves, window):
  """Rows (first step, last step, mean loss per precision, bf16 - fp32) per full window."""
  steps = min(len(c) for c in curves.values())
  rows = []
  for start in range(0, steps - window + 1, window):
    means = {p: float(np.mean(c[start:start + window])) for p, c in curves.items()}
    rows.append({"steps": [start + 1, start + window], **means,
                 "difference": means["mixed_bfloat16"] - means["float32"]})
  return rows


def main(argv):
  del argv
  environment.configure_tensorflow()
  curves = {precision: run_precision(precision) for precision in PRECISIONS}
  rows = window_table(curves, FLAGS.window)
  worst = max((abs(r["difference"]) for r in rows), default=float("nan"))
  passed = bool(rows) and worst <= FLAGS.tolerance
  print(f"{'steps':>11}  {'float32':>8}  {'bf16':>8}  {'bf16-fp32':>9}")
  for r in rows:
    first, last = r["steps"]
    print(f"{first:>5}-{last:<5}  {r['float32']:8.4f}  {r['mixed_bfloat16']:8.4f}  "
          f"{r['difference']:+9.4f}")
  print(f"largest |difference| {worst:.4f}: {'within' if passed else 'NOT within'} "
        f"{FLAGS.tolerance}")
  settings = {name: FLAGS[name].value for name in (
      "data_path", "steps", "window", "tolerance", "hidden_dim", "emb_dim", "vocab_size",
      "max_enc_steps", "max_dec_steps", "batch_size", "coverage", "seed")}
  with open(FLAGS.json_out, "w", encoding="utf-8") as f:
    json.dump({"settings": settings, "windows": rows, "largest_difference": worst,
               "passed": passed, "losses": curves}, f, indent=2)
  print(f"Wrote {FLAGS.json_out}")
  return 0 if passed else 1


if __name__ == "__main__":
  usage.run_tool(main)
