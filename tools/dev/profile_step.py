"""Where the time of one training step goes, at the paper's configuration.

    python tools/dev/profile_step.py [--nocoverage] [--real_data] [--precision=mixed_bfloat16]
        [--tiny] [--noserial] [--logdir=DIR] [--top=25] [--json_out=profile_step.json]

Builds the training step as tools/dev/benchmark.py times it (its sizes; full-length synthetic
400/100 batches, or with --real_data vietnews batches from --data_path), runs --warmup steps,
traces the next one with tf.profiler into --logdir (TensorBoard's profile plugin opens it) and
prints: the traced step's wall time; the total time of its TensorFlow ops (the rest of the wall
time is spent between ops); the op time of each part of the step (encoder, decoder loop,
vocabulary projection, loss and the rest, each forward and backward, and the optimizer update)
with its costliest op types; the --top ops by time, each summed over its executions (a loop's
op runs once per iteration). Writes the same as JSON to --json_out.
By default (--serial) the step runs with one inter-op thread
(tf.config.threading.set_inter_op_parallelism_threads(1)), so that no two ops share the 2 cores
and inflate each other's durations; its wall time is then a serial step's, not benchmark.py's.
--tiny shrinks every size to check the code in seconds (its figures mean nothing). Run it
alone: other work on the CPU inflates every duration.

    python tools/dev/profile_step.py --decode [--slots=64] [--decode_steps=5] [--nocoverage] [--tiny]

traces single-pass decode instead, as tools/dev/benchmark.py times it (continuous batching over
--slots searches, beam 4, 35-120 steps, compiled attention, untrained weights): the refill of
every slot (`_encode` of --slots articles, then `_admit`) and --decode_steps search steps of
all slots (the last steps of their searches), each in a trace of its own; prints the wall time
of each, and the op time per search step of each part (attention, cell, projection, the
softmax and top-k of the vocabulary distribution, the rest of the candidates, the beam's
bookkeeping stages, the loop) and per refill, with their costliest op types and the --top ops.
"""

import collections
import json
import os
import re
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf

import benchmark  # tools/, next to this script: its configurations, batches and data flags
from pointer_gen import attention
from pointer_gen import usage
from pointer_gen.base import environment
from pointer_gen.base import precision
from pointer_gen.data import batch as batch_lib
from pointer_gen.search import continuous_batching
from pointer_gen.search import contract as search_lib
from pointer_gen.search import registry as strategies
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train
from trace_ops import op_events  # tools/, next to this script
from trace_ops import read_trace

# The command line's process-wide CPU choices (allocator, XLA's vector width): timed as it runs.
environment.choose_cpu_settings()

FLAGS = flags.FLAGS
flags.DEFINE_boolean("real_data", False, "Trace a step on vietnews batches (--data_path, "
                     "--vocab_path) instead of a full-length synthetic one.")
flags.DEFINE_enum("precision", "float32", list(precision.PRECISIONS), "Compute precision.")
flags.DEFINE_boolean("serial", True, "One inter-op thread: ops do not share the cores, so "
                     "each op's duration is its own.")
flags.DEFINE_string("logdir", "", "Where the trace goes (empty: a new temporary directory).")
flags.DEFINE_integer("top", 25, "How many individual ops to list.")
flags.DEFINE_boolean("decode", False, "Trace single-pass decode's slot refill and search "
                     "steps instead of a training step.")
flags.DEFINE_integer("decode_steps", 5, "With --decode: search steps traced.")
FLAGS.set_default("json_out", "profile_step.json")
# benchmark.py's flags that apply here, so that --helpshort lists them.
for _name in ("coverage", "tiny", "warmup", "data_path", "vocab_path", "json_out", "slots"):
  flags.declare_key_flag(_name)

# The parts of the step, in the order printed.
PARTS = ("encoder fwd", "encoder bwd", "decoder loop fwd", "decoder loop bwd", "projection fwd",
         "projection bwd", "loss and other fwd", "other bwd", "optimizer")
LEGEND = ("encoder: BiLSTM, reduce_state, W_h features, and the recurrent kernels' gradient "
          "after the loop; decoder loop: attention with coverage, LSTM cell, p_gen, and the "
          "encoder states' gradient through every context after the loop; projection: "
          "output_hidden and vocab_projection of the real steps; loss and other: embeddings, "
          "glue around the loops, losses (softmax at the targets, copy distribution, coverage), "
          "and the gradients' norm and clipping; optimizer: Adagrad update, step counter")
OPTIMIZER = ("Adagrad", "adagrad", "ResourceApply", "AssignAdd")
# Each part's ops by name; the late gradients' scopes are their functions' names.
ENCODER = ("encoder", "/W_h", "/reduce_state", "recurrent_kernel_gradient")
DECODER_LOOP = ("/while/", "while_grad", "context_states_gradient")
PROJECTION = ("vocab_projection", "output_hidden")


# A search step's parts (op name markers, the first that matches wins), in the order printed:
# the scopes of the model's layers and of search.beam.BeamSearch.advance's stages.
DECODE_PARTS = (("attention", ("/attention",)),
                ("cell", ("/decoder", "/embedding")),
                ("projection", PROJECTION),
                ("softmax and top-k", ("candidates/softmax", "candidates/top_k")),
                ("other candidates", ("/candidates/",)),
                ("visit", ("/visit/",)),
                ("next_live", ("/next_live/",)),
                ("next_done", ("/next_done/",)),
                ("reorder decoder state", ("/reorder_decoder_state/",)),
                ("hold_ended", ("/hold_ended/",)),
                ("loop and other", ("",)))
DECODE_LEGEND = ("attention: scores (the XLA kernel), softmax, context, W_s; cell: embedding, "
                 "input projection, LSTM, p_gen; projection: output_hidden and vocab_projection; "
                 "softmax and top-k: of the vocabulary distribution; other candidates: the copy "
                 "distribution's candidates and the candidates' scores; visit, next_live, "
                 "next_done, reorder decoder state, hold_ended: search.beam.BeamSearch.advance's "
                 "stages; refill: encoding --slots articles and admitting them into the slots")


def backward_ops(step, iterator):
  """Names of the ops the step made from its gradient computation on. The tape's own are named
  gradient_tape/..., but custom gradients' ops, the zeros for unconnected gradients and the
  clipping have no scope that says so."""
  ops = step.get_concrete_function(iterator).graph.get_operations()  # in the order made
  first = next(i for i, op in enumerate(ops) if op.name.startswith("gradient_tape/"))
  return {op.name for op in ops[first:]}


def part(name, backward):
  """The part of the step an op belongs to, from its name (scope path)."""
  if any(marker in name for marker in OPTIMIZER):
    return "optimizer"
  direction = " bwd" if backward else " fwd"
  for prefix, markers in (("encoder", ENCODER), ("decoder loop", DECODER_LOOP),
                          ("projection", PROJECTION)):
    if any(marker in name for marker in markers):
      return prefix + direction
  return "other bwd" if backward else "loss and other fwd"


def build_step(hps, vocab_size, batches, count):
  """The training step as benchmark.time_training builds it, and an iterator over `count`
  batches made beforehand (so that no input work lands in the trace)."""
  vocab = vocab_lib.Vocab([f"w{i}" for i in range(vocab_size - 4)])
  trainer = train.Trainer(hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
  step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, vocab_size)
  prepared = [next(batches) for _ in range(count)]
  iterator = iter(tf.data.Dataset.from_generator(lambda: prepared,
                                                 output_signature=batch_lib.spec(text=False)))
  return step, iterator, prepared


def short_name(name):
  """The op's name without what many share, so that one op's executions add up: layers and ops
  get numbered copies (_1, _2); a loop's op is named after the loop, then body/_N/ or cond/_N/,
  then its own name; everything is under pointer_generator/; a gradient inside a loop repeats
  the loop's path after "gradients/"."""
  name = re.sub(r"_\d+(?=/|$)", "", name)
  name = re.sub(r"^.*/(body|cond)//", "", name).replace("pointer_generator/", "")
  return re.sub(r"^gradient_tape/(.*?)/gradients/\1/", r"gradient_tape/\1/", name)


def breakdown(space, backward, top):
  """The training step's op time (ms) per part of PARTS, in order, with its costliest op
  types, and the `top` ops by time."""
  total, found, top_ops = op_breakdown(
      space, lambda name: part(name, name.startswith("gradient_tape/") or name in backward), top)
  parts = {}
  for where in PARTS:
    entry = found.get(where, {"ms": 0.0, "top_types_ms": {}})
    parts[where] = {**entry, "percent": 100 * entry["ms"] / total}
  return total, parts, top_ops


def report(results):
  config = results["config"]
  print(f"traced step ({config['data']}, batch {config['batch_size']}, "
        f"{config['enc_steps']}/{config['dec_steps']} steps, {config['real_dec_steps']} real "
        f"decoder steps, {config['precision']}, {'' if config['coverage'] else 'no '}coverage"
        f"{', serial' if config['serial'] else ''}): {1e3 * results['wall_s']:.0f} ms wall, "
        f"{results['op_ms']:.0f} ms op time")
  print_parts(results["parts"], results["op_ms"], 0)
  print(f"({LEGEND})")
  print_top_ops(results["top_ops"], "")


def print_parts(parts, total_ms, decimals):
  """One line per part: its op time, its share of `total_ms` and its costliest op types."""
  width = max(len(where) for where in parts)
  for where, entry in parts.items():
    kinds = ", ".join(f"{t} {ms:.{decimals}f}" for t, ms in entry["top_types_ms"].items())
    print(f"  {where:<{width}}  {entry['ms']:6.{decimals}f} ms  "
          f"{100 * entry['ms'] / total_ms:5.1f}%  {kinds}")


def print_top_ops(top_ops, of):
  print(f"top {len(top_ops)} ops{of} (ms, executions, name:type):")
  for entry in top_ops:
    print(f"  {entry['ms']:7.1f}  {entry['executions']:5d}  {entry['op'][-100:]}")


def decode_part(name):
  """The part of a search step an op belongs to, from its name."""
  return next(where for where, markers in DECODE_PARTS if any(m in name for m in markers))


def op_breakdown(space, part_of, top):
  """Op time per part (ms) with its costliest op types, and the `top` ops by time."""
  seconds = collections.Counter()
  types = collections.defaultdict(collections.Counter)
  ops = collections.Counter()
  counts = collections.Counter()
  for name, op_type, duration in op_events(space):
    where = part_of(name)
    seconds[where] += duration
    types[where][op_type] += duration
    key = f"{short_name(name)}:{op_type}"
    ops[key] += duration
    counts[key] += 1
  parts = {where: {"ms": 1e3 * seconds[where],
                   "top_types_ms": {t: 1e3 * s for t, s in types[where].most_common(4)}}
           for where in seconds}
  top_ops = [{"op": key, "ms": 1e3 * s, "executions": counts[key]}
             for key, s in ops.most_common(top)]
  return 1e3 * sum(seconds.values()), parts, top_ops


def traced(logdir, function):
  """Runs function() under the profiler; returns its wall time in seconds and the trace."""
  # Level 3 traces the ops the executor deems cheap too: at the default 2 a varying part of the
  # loops' small ops (AddN, TensorList*) is missing from the trace.
  options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3)
  tf.profiler.experimental.start(logdir, options)
  start = time.perf_counter()
  function()
  seconds = time.perf_counter() - start
  tf.profiler.experimental.stop()
  return seconds, read_trace(logdir)


def synthetic_articles(count, length, vocab_size, rng):
  """`count` full-length articles as summaries.examples gives them, a few ids out of the
  vocabulary (article OOVs) in each."""
  oovs = 5
  articles = []
  for _ in range(count):
    ext = rng.integers(4, vocab_size + oovs, length).astype(np.int32)
    articles.append(batch_lib.Example(
        enc_input=np.where(ext >= vocab_size, vocab_lib.UNK_ID, ext).astype(np.int32),
        enc_input_ext=ext, num_oovs=oovs))
  return articles


def profile_decode(hps, logdir):
  """Traces single-pass decode's refill of every slot and --decode_steps search steps."""
  hps = hps.replace(mode="decode", beam_size=4, max_dec_steps=12 if FLAGS.tiny else 120,
                    min_dec_steps=3 if FLAGS.tiny else 35)
  vocab = vocab_lib.Vocab([f"w{i}" for i in range(hps.vocab_size - 4)])
  model = train.Trainer(hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab).model
  settings = search_lib.Settings.from_hparams(hps)
  decoder = continuous_batching.SlotDecoder(
      model, strategies.make(hps, settings, attention.SearchAttention.of(
          hps.replace(compiled_attention=True), "decode")),
      FLAGS.slots, hps.max_enc_steps)
  articles = synthetic_articles(FLAGS.slots, hps.max_enc_steps, hps.vocab_size,
                                np.random.default_rng(0))
  slots = np.arange(FLAGS.slots, dtype=np.int32)
  max_oovs = np.int32(articles[0].num_oovs)
  steps = min(FLAGS.decode_steps, hps.max_dec_steps)
  state = {}

  def refill():
    encoded = decoder._encode(*continuous_batching._padded(articles))  # pylint: disable=protected-access
    search = decoder._admit(decoder._empty, slots, slots, encoded)  # pylint: disable=protected-access
    # The searches' last `steps` steps: _run goes on until they end.
    state["search"] = search._replace(step=tf.fill([FLAGS.slots], hps.max_dec_steps - steps))
    state["search"].step.numpy()

  def run():
    decoder._run(state["search"], max_oovs)[1].length.numpy()  # pylint: disable=protected-access

  for _ in range(max(FLAGS.warmup, 1)):
    refill()
    run()
  results = {"config": {"slots": FLAGS.slots, "beam_size": hps.beam_size,
                        "enc_steps": hps.max_enc_steps, "vocab_size": hps.vocab_size,
                        "hidden_dim": hps.hidden_dim, "emb_dim": hps.emb_dim,
                        "coverage": FLAGS.coverage, "tiny": FLAGS.tiny, "serial": FLAGS.serial,
                        "search_steps": steps}, "logdir": logdir}
  refill_s, refill_trace = traced(os.path.join(logdir, "refill"), refill)
  run_s, run_trace = traced(os.path.join(logdir, "steps"), run)
  total, parts, top_ops = op_breakdown(run_trace, decode_part, FLAGS.top)
  refill_ms, refill_parts, _ = op_breakdown(refill_trace, lambda name: "refill", 0)
  per_step = {where: {"ms": parts[where]["ms"] / steps,
                      "top_types_ms": {t: ms / steps
                                       for t, ms in parts[where]["top_types_ms"].items()}}
              for where, _ in DECODE_PARTS if where in parts}
  results.update({"refill_wall_s": refill_s, "refill_op_ms": refill_ms,
                  "refill_top_types_ms": refill_parts["refill"]["top_types_ms"],
                  "step_wall_ms": 1e3 * run_s / steps, "step_op_ms": total / steps,
                  "parts_per_step": per_step, "top_ops": top_ops})
  return results


def report_decode(results):
  config = results["config"]
  print(f"single-pass decode ({config['slots']} slots x beam {config['beam_size']}, "
        f"{config['enc_steps']} encoder steps, vocab {config['vocab_size']}, "
        f"{'' if config['coverage'] else 'no '}coverage, compiled attention"
        f"{', serial' if config['serial'] else ''}): {config['search_steps']} search steps "
        f"{results['step_wall_ms']:.1f} ms wall, {results['step_op_ms']:.1f} ms op time per "
        f"step; refill of every slot {1e3 * results['refill_wall_s']:.0f} ms wall, "
        f"{results['refill_op_ms']:.0f} ms op time")
  print_parts(results["parts_per_step"], results["step_op_ms"], 1)
  kinds = ", ".join(f"{t} {ms:.0f}" for t, ms in results["refill_top_types_ms"].items())
  print(f"  refill: {results['refill_op_ms']:.0f} ms ({kinds})")
  print(f"({DECODE_LEGEND})")
  print_top_ops(results["top_ops"], " of the search steps")


def make_batches(hps):
  """The vocabulary size and an endless iterator of --real_data or full-length synthetic
  batches, as benchmark.py's rows make them."""
  if FLAGS.real_data:
    vocab = vocab_lib.Vocab.from_file(FLAGS.vocab_path, hps.vocab_size)
    return len(vocab), benchmark.real_batches(hps, vocab)
  rng = np.random.default_rng(0)
  return hps.vocab_size, iter(lambda: benchmark.synthetic_batch(hps, hps.vocab_size, rng), None)


def main(argv):
  del argv
  if FLAGS.serial:
    tf.config.threading.set_inter_op_parallelism_threads(1)
  environment.configure_tensorflow()
  base = benchmark.TINY if FLAGS.tiny else benchmark.PAPER
  hps = base.replace(coverage=FLAGS.coverage, precision=FLAGS.precision)
  logdir = FLAGS.logdir or tempfile.mkdtemp(prefix="profile_step_")
  if FLAGS.decode:
    results = profile_decode(hps, logdir)
    report_decode(results)
    with open(FLAGS.json_out, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=2)
    print(f"Traces in {logdir}; wrote {FLAGS.json_out}")
    return
  vocab_size, batches = make_batches(hps)
  step, iterator, prepared = build_step(hps, vocab_size, batches, FLAGS.warmup + 1)
  for _ in range(FLAGS.warmup):
    step(iterator)["loss"].numpy()
  wall, space = traced(logdir, lambda: step(iterator)["loss"].numpy())
  total, parts, top_ops = breakdown(space, backward_ops(step, iterator), FLAGS.top)
  batch = prepared[-1]
  results = {"config": {"data": "vietnews" if FLAGS.real_data else "synthetic",
                        "coverage": FLAGS.coverage, "precision": FLAGS.precision,
                        "tiny": FLAGS.tiny, "serial": FLAGS.serial,
                        "batch_size": int(batch.enc_input.shape[0]),
                        "enc_steps": int(batch.enc_input.shape[1]),
                        "dec_steps": int(batch.dec_input.shape[1]),
                        "real_dec_steps": int(tf.reduce_sum(batch.dec_len))},
             "logdir": logdir, "wall_s": wall, "op_ms": total, "parts": parts,
             "top_ops": top_ops}
  report(results)
  with open(FLAGS.json_out, "w", encoding="utf-8") as f:
    json.dump(results, f, indent=2)
  print(f"Trace in {logdir}; wrote {FLAGS.json_out}")


if __name__ == "__main__":
  usage.run_tool(main)
