"""Is a change within noise? Times two checkouts of the project in interleaved rounds, the order of
the two alternated each round (on a loaded or drifting machine the first process of a pair often
runs faster, whichever tree it is), and checks that their decodes are byte-identical.

    python tools/dev/compare_trees.py --base=../old_checkout [--new=.] [--rounds=4]

Each round, for each tree: the demo's training (flags/demo.cfg, 300 steps; steps/s of its last
100), the paper's training step with coverage on vietnews (steps/s of steps 21-40 of a fresh
run) and single-pass decode of --decode_articles vietnews validation articles at the paper's
size (beam 4, min/max 35/100 steps; wall seconds, start-up included) from one checkpoint, made
once by the base tree after a single step so that every summary runs to max_dec_steps. Prints
each figure's median, min and max per tree and the new/base ratio of each round, with the CPU.
Both trees run with this interpreter (--python) and its packages; each imports its own
pointer_gen (the checkout is the working directory). Needs ../shared/data/vietnews_bin. Run it
alone: nothing else should use the CPU.
"""

import filecmp
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from absl import flags

import interleaved
from pointer_gen import usage

REPO = pathlib.Path(__file__).resolve().parents[2]
VIETNEWS = REPO.parent / "shared" / "data" / "vietnews_bin"

FLAGS = flags.FLAGS
flags.DEFINE_string("base", None, "The checkout to compare against.", required=True)
flags.DEFINE_string("new", str(REPO), "The checkout with the change.")
flags.DEFINE_integer("rounds", 4, "Rounds; each runs both trees, in alternating order.")
flags.DEFINE_integer("decode_articles", 256, "Validation articles per decode.")
flags.DEFINE_string("python", sys.executable, "The interpreter both trees run with.")
flags.DEFINE_string("work_dir", "", "Where the runs go (default: a temporary directory).")

PAPER_TRAIN = ("--mode=train", f"--data_path={VIETNEWS}/chunked/train_*",
               f"--vocab_path={VIETNEWS}/vocab", "--exp_name=pg", "--coverage", "--seed=1",
               "--checkpoint_secs=100000")


def _run(tree, *args):
  """stderr of `python -m pointer_gen.run *args` in the checkout `tree`; a failure stops all."""
  done = subprocess.run([FLAGS.python, "-m", "pointer_gen.run", *args], cwd=tree,
                        capture_output=True, text=True)
  if done.returncode:
    sys.exit(f"compare_trees: {tree}: pointer_gen.run {' '.join(args)} failed:\n{done.stderr}")
  return done.stderr


def _rate(log, step):
  """steps/s of the training log line of `step`."""
  return float(re.findall(rf"step {step}: .*; ([\d.]+) steps/s", log)[-1])


def _measure(tree, work, name):
  """This round's figures of `tree`, its runs in `work`/`name`_*."""
  demo = _run(tree, "--flagfile=flags/demo.cfg", f"--log_root={work}/{name}_demo")
  paper = _run(tree, *PAPER_TRAIN, f"--log_root={work}/{name}_paper", "--num_train_steps=40",
               "--log_every_n_steps=20")
  decode_dir = f"{work}/{name}_decode"
  start = time.monotonic()
  _run(tree, "--mode=decode", "--single_pass", f"--data_path={VIETNEWS}/chunked/val_000.bin",
       f"--log_root={work}/checkpoint", "--exp_name=pg",
       f"--max_decode_examples={FLAGS.decode_articles}", f"--decode_dir={decode_dir}",
       "--rouge_tokenizer=whitespace")
  return {"demo training steps/s": _rate(demo, 300), "paper training steps/s": _rate(paper, 40),
          "paper decode seconds": time.monotonic() - start}


def _identical(first, second):
  """The files two decode directories differ in (their TensorBoard events files aside)."""
  differ = []
  for sub in ("", "decoded", "reference"):
    names = sorted(n for n in os.listdir(os.path.join(first, sub))
                   if os.path.isfile(os.path.join(first, sub, n)) and "tfevents" not in n)
    _, mismatch, errors = filecmp.cmpfiles(os.path.join(first, sub), os.path.join(second, sub),
                                           names, shallow=False)
    differ += [os.path.join(sub, n) for n in mismatch + errors]
  return differ


def main(argv):
  del argv
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="compare_trees_")
  trees = {"base": os.path.abspath(FLAGS.base), "new": os.path.abspath(FLAGS.new)}
  _run(trees["base"], *PAPER_TRAIN, f"--log_root={work}/checkpoint", "--num_train_steps=1")
  figures = {name: {} for name in trees}
  for round_index in range(FLAGS.rounds):
    for name in interleaved.order(round_index):
      for run_dir in pathlib.Path(work).glob(f"{name}_*"):
        shutil.rmtree(run_dir)
      for key, value in _measure(trees[name], work, name).items():
        figures[name].setdefault(key, []).append(value)
    differ = _identical(f"{work}/base_decode", f"{work}/new_decode")
    verdict = f"differ in {', '.join(differ)}" if differ else "byte-identical"
    print(f"round {round_index + 1}: decodes {verdict}", flush=True)
  print(f"CPU: {interleaved.cpu()}; {FLAGS.rounds} rounds, order alternated")
  print("\n".join(interleaved.summary(figures)))


if __name__ == "__main__":
  usage.run_tool(main)
