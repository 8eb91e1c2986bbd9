"""Eval's time per checkpoint with and without its samples (--eval_samples), at the paper's
configuration.

    python tools/dev/eval_cost.py [--checkpoints=10] [--eval_samples=3] [--coverage] [--ckpt_path=...]
        [--tiny] [--json_out=eval_cost.json]

Two evaluators (`--mode=eval` beside training, pointer_gen.training.evaluate), one with
--eval_samples samples and one without, take turns on the same checkpoint: each turn is what eval
does when a new checkpoint appears (load it, score one validation batch of 16, write TensorBoard,
save a best model when the running average is a new low; with samples, decode them and write their
text, pictures and figures). The first turn of each, which traces and compiles, is reported
apart; then --checkpoints turns each: median, min and max seconds, the samples' cost (the
difference of the medians) and its share of the paper's 60 s checkpoint interval, and the CPU.

The model has the paper's sizes (vocab 50k, hidden 256, emb 128, 400 article / 100 summary
tokens, beam 4, min_dec_steps 35) and random weights unless --ckpt_path names a checkpoint of
that shape: an untrained model rarely ends a summary before max_dec_steps, so its samples take
the longest a summary can. The articles are vietnews' validation split (../shared/data).
Run it alone: the figures are only comparable when nothing else uses the CPU (beside a trainer,
the two share it). --tiny runs the demo corpus on a tiny model to check the code path in seconds
(its figures mean nothing).
"""

import json
import os
import pathlib
import platform
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[2]

from absl import flags  # pylint: disable=g-import-not-at-top
import tensorflow as tf

from pointer_gen import config
from pointer_gen import usage
from pointer_gen.base import checkpoints
from pointer_gen.base import environment
from pointer_gen.data import demo as demo_data
from pointer_gen.data import pipeline as data
from pointer_gen.inference import eval_samples
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate

# The command line's process-wide CPU choices (allocator, XLA's vector width): timed as it runs.
environment.choose_cpu_settings()

VIETNEWS = REPO.parent / "shared" / "data" / "vietnews_bin"
CHECKPOINT_SECS = 60  # the paper's configuration: a checkpoint a minute

FLAGS = flags.FLAGS
flags.DEFINE_string("data_path", str(VIETNEWS / "chunked" / "val_*"), "Validation data.")
flags.DEFINE_string("vocab_path", str(VIETNEWS / "vocab"), "Vocab of the data.")
flags.DEFINE_string("ckpt_path", "", "A checkpoint of the paper's configuration to time (with "
                    "--coverage as it has). Empty: random weights.")
flags.DEFINE_integer("checkpoints", 10, "Timed turns of each evaluator after the first.")
flags.DEFINE_integer("eval_samples", 3, "The samples of the evaluator with samples.")
flags.DEFINE_boolean("coverage", False, "The coverage phase's model.")
flags.DEFINE_boolean("tiny", False, "The demo corpus and a tiny model: checks the code path in "
                     "seconds (the figures mean nothing).")
flags.DEFINE_string("json_out", "eval_cost.json", "Where to write the results.")

PAPER = config.HParams(mode="eval", batch_size=16, max_enc_steps=400, max_dec_steps=100,
                       min_dec_steps=35, beam_size=4, vocab_size=50000, emb_dim=128,
                       hidden_dim=256, seed=0)
TINY = PAPER.replace(batch_size=4, max_enc_steps=40, max_dec_steps=10, min_dec_steps=2,
                     vocab_size=519, emb_dim=8, hidden_dim=8)


def cpu_name():
  """The CPU's model name, family and model numbers and its logical CPUs, from /proc/cpuinfo."""
  fields = {}
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), []).append(value.strip())
  except OSError:
    return platform.processor() or "unknown"
  name = fields.get("model name", ["unknown"])[0]
  return (f"{name} (family {fields.get('cpu family', ['?'])[0]} model "
          f"{fields.get('model', ['?'])[0]}), {len(fields.get('processor', []))} logical CPUs")


def write_checkpoints(hps, vocab, exp_names):
  """<log_root>/<exp_name>/train/model.ckpt-1 for each of exp_names, the same weights:
  --ckpt_path's, or random ones. Returns their paths."""
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  _, batches = data.input_pipeline(hps, vocab, single_pass=True)
  model(next(iter(batches)), real_steps_only=True)  # builds the weights
  if FLAGS.ckpt_path:
    checkpoints.restore_weights(model, FLAGS.ckpt_path)
  checkpoint = checkpoints.make_checkpoint(model)
  checkpoint.step.assign(1)
  return [tf.train.CheckpointManager(checkpoint, hps.replace(exp_name=name).train_dir, 1,
                                     checkpoint_name="model.ckpt").save(checkpoint_number=1)
          for name in exp_names]


def _summary(times):
  return {"median": statistics.median(times), "min": min(times), "max": max(times),
          "all": times}


def main(argv):
  del argv
  environment.configure_tensorflow()
  with tempfile.TemporaryDirectory() as log_root:
    base = TINY if FLAGS.tiny else PAPER
    if FLAGS.tiny:
      corpus = demo_data.ensure_demo_corpus(os.path.join(log_root, "demo_data"))
      base = base.replace(data_path=corpus["val"], vocab_path=corpus["vocab"])
    else:
      base = base.replace(data_path=FLAGS.data_path, vocab_path=FLAGS.vocab_path)
    hps = base.replace(log_root=log_root, exp_name="cost", coverage=FLAGS.coverage,
                       eval_samples=FLAGS.eval_samples)
    vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
    # Each in a run directory of its own: their best models and events stay apart.
    names = ("with_samples", "without_samples")
    paths = dict(zip(names, write_checkpoints(hps, vocab, names)))
    evaluators = {name: evaluate.ConcurrentEvaluator(
        hps.replace(exp_name=name), vocab, eval_samples.Samples if name == names[0] else None)
                  for name in names}
    writers = {name: tf.summary.create_file_writer(e.hps.eval_dir)
               for name, e in evaluators.items()}
    batches = {name: iter(e.dataset) for name, e in evaluators.items()}
    times = {name: [] for name in names}
    # What ConcurrentEvaluator.run does for each new checkpoint, without its waiting.
    # pylint: disable=protected-access
    for _ in range(FLAGS.checkpoints + 1):
      for name, evaluator in evaluators.items():
        start = time.perf_counter()
        step = evaluator._load(paths[name])
        evaluator._score_checkpoint(step, batches[name], writers[name])
        times[name].append(time.perf_counter() - start)
    for writer in writers.values():
      writer.close()
  results = {"cpu": cpu_name(), "threads": os.cpu_count(), "tiny": FLAGS.tiny,
             "coverage": FLAGS.coverage, "eval_samples": FLAGS.eval_samples,
             "ckpt_path": FLAGS.ckpt_path or "random weights",
             **{name: {"first": t[0], **_summary(t[1:])} for name, t in times.items()}}
  cost = results["with_samples"]["median"] - results["without_samples"]["median"]
  results["samples_cost"] = cost
  results["share_of_checkpoint_interval"] = cost / CHECKPOINT_SECS
  print(f"CPU: {results['cpu']}")
  for name in evaluators:
    r = results[name]
    print(f"eval per checkpoint {name.replace('_', ' ')}: median {r['median']:.2f} s (min "
          f"{r['min']:.2f}, max {r['max']:.2f}, {FLAGS.checkpoints} checkpoints; the first, "
          f"compiling: {r['first']:.1f} s)")
  print(f"samples ({FLAGS.eval_samples}): {cost:.2f} s per checkpoint, "
        f"{100 * cost / CHECKPOINT_SECS:.1f} % of a {CHECKPOINT_SECS} s checkpoint interval")
  with open(FLAGS.json_out, "w", encoding="utf-8") as f:
    json.dump(results, f, indent=2)
  print(f"Wrote {FLAGS.json_out}")


if __name__ == "__main__":
  usage.run_tool(main)
