"""Converts a checkpoint trained with the original TF1 code into a pointer_gen run.

  python tools/convert_tf1_checkpoint.py --tf1_checkpoint=pretrained/train/model.ckpt-238410 \
      --vocab_path=finished_files/vocab --log_root=logs --exp_name=pretrained --coverage

writes `<log_root>/<exp_name>/train/model.ckpt-<step>` as that run's newest checkpoint, with the
original's Adagrad accumulators and global step (--drop_optimizer_state starts them afresh).
The model flags (--hidden_dim, --emb_dim, --vocab_size, --pointer_gen, --coverage; the same
--flagfile as training works) must describe the model the checkpoint holds. --raw_tokenizer and
--raw_lowercase state how raw text became the tokens of its training data (the original's
CNN/DailyMail data and pretrained models: --raw_tokenizer=ptb --raw_lowercase); the run records
them, and its export and raw-JSONL decode apply them.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app
from absl import flags

from pointer_gen import config
from pointer_gen import usage
from pointer_gen.base import environment
from pointer_gen.base.errors import DataError
from pointer_gen.data import raw_text
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint

FLAGS = flags.FLAGS
# The run's own flags, so the run directory and the model match what the modes build.
config.define_flags()
flags.DEFINE_string("tf1_checkpoint", "", "Prefix of the original's checkpoint: "
                    ".../train/model.ckpt-NNN or .../eval/bestmodel-NNN.")
flags.DEFINE_boolean("drop_optimizer_state", False, "Start the Adagrad accumulators (at "
                     "--adagrad_init_acc) and the global step (at 0) afresh instead of "
                     "carrying the original's; needed for eval's bestmodel checkpoints, which "
                     "hold no accumulators.")


def convert(hps, prefix, drop_optimizer_state):
  if not prefix:
    raise DataError("--tf1_checkpoint is required (the original checkpoint's prefix)")
  if not hps.exp_name:
    raise DataError("--exp_name is required: the checkpoint goes to --log_root/--exp_name/train")
  environment.configure_tensorflow()
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  path, step = tf1_checkpoint.convert_to_run(hps, vocab, prefix, drop_optimizer_state)
  state = "fresh optimizer state" if drop_optimizer_state else "Adagrad accumulators carried"
  print(f"Wrote {path} (step {step}, {state}), the newest checkpoint of {hps.train_dir}")
  if raw_text.known(hps) is None:
    print(f"How raw text became the model's tokens is not recorded: export and raw-JSONL decode "
          f"will ask for {raw_text.STATEMENT} ({raw_text.PAPER} for the original's models)")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    hps = raw_text.settle(config.HParams.from_flags(FLAGS), config.given_flags(FLAGS))
    convert(hps, FLAGS.tf1_checkpoint, FLAGS.drop_optimizer_state)
  except DataError as e:
    sys.exit(f"convert_tf1_checkpoint: error: {e}")


if __name__ == "__main__":
  usage.run_tool(main)
