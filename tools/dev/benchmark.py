"""Speed and memory of training and decoding at the paper's configuration, in one process.

    python tools/dev/benchmark.py [--quick] [--tiny] [--coverage] [--notf1] [--json_out=benchmark.json]

Prints a table and writes JSON: the matmul ceiling for the vocabulary projection's shape; the
training step (median, min, max over --steps steps after warm-up) on real data
(../shared/data/vietnews_bin by default) and on full-length synthetic batches; tokenisation
throughput (articles/s) of each --tokenizer on raw articles (../shared/data/bbc_news_summary),
and the training step fed by its own input pipeline on raw JSONL with --tokenizer=ptb and on
the same examples pre-tokenised in a .bin, beside the time that pipeline alone takes per batch;
decode
articles/s at batch 1 and at a large batch, and with continuous batching; the SavedModel of the
same model (--mode=export's, by default and with --export_compiled_attention) summarising the
same articles as raw text, --decode_batch a call, in seconds per article and against
single-pass decode's; peak RSS; achieved GFLOP/s and its fraction of the
ceiling; and how the step time grows with max_enc_steps and the vocabulary size. Every
training and decode row is float32 unless its name ends in "mixed_bfloat16": those rows
(--bf16, default on) repeat the measurement with --precision=mixed_bfloat16, and the first row
says whether the CPU has bfloat16 instructions (avx512_bf16 / amx_bf16 in /proc/cpuinfo). The
scaling rows end with the step at max_enc_steps 800 / max_dec_steps 200 in each precision, each
run in its own process so that its peak RSS is that step's alone. Unless --notf1, the float32
training rows are followed by the original's formulation (tools/dev/tf1_reference.py, a TF1 graph
that needs tf-keras, run in its own process at the same sizes and --steps, warm-up 1) on
full-length synthetic batches and on the real data, with its peak RSS; after the mixed_bfloat16
training rows, pointer_gen's speed-up over it in each precision (the TF1 graph's median divided
by pointer_gen's); and after the continuous-batching decode rows, the original's decode
(tools/dev/tf1_reference.py --decode, its one-step graph and Python beam search, one article at a
time, in its own process) of the same articles and single-pass decode's speed-up over it (the
original's seconds per article divided by pointer_gen's). Without tf-keras those rows say how
to install it.
Run it alone: the figures are only comparable when nothing else uses the CPU. --tiny shrinks
every size to check the code paths in seconds (its figures mean nothing).
"""

import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[2]
# make_datafiles is a user's tool, in tools/, a folder above this script's (Python puts only
# this script's folder on the path).
sys.path.insert(1, str(REPO / "tools"))

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen import usage
from pointer_gen.base import checkpoints
from pointer_gen.base import environment
from pointer_gen.base import loop_gradients
from pointer_gen.base import precision
from pointer_gen.data import batch as batch_lib
from pointer_gen.data import pipeline as data
from pointer_gen.formats import bin_format
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import export
from pointer_gen.inference import summaries
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import continuous_batching
from pointer_gen.search import contract as search_lib
from pointer_gen.search import registry as strategies
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train
import make_datafiles  # tools/
from process_memory import peak_rss_gb

# The command line's process-wide CPU choices (allocator, XLA's vector width): timed as it runs.
environment.choose_cpu_settings()

VIETNEWS = REPO.parent / "shared" / "data" / "vietnews_bin"
BBC = REPO.parent / "shared" / "data" / "bbc_news_summary"

FLAGS = flags.FLAGS
flags.DEFINE_string("data_path", str(VIETNEWS / "chunked" / "train_*"), "Real training data.")
flags.DEFINE_string("decode_data_path", str(VIETNEWS / "chunked" / "val_*"), "Articles to decode.")
flags.DEFINE_string("vocab_path", str(VIETNEWS / "vocab"), "Vocab of the real data.")
flags.DEFINE_string("raw_data_path", str(BBC / "train.jsonl"), "Raw English JSONL: the training "
                    "step on --tokenizer=ptb --lowercase text (vocab: its most frequent tokens).")
flags.DEFINE_string("raw_articles_path", str(BBC / "val.jsonl"), "Raw English JSONL whose "
                    "articles are tokenised for the tokenisation throughput rows.")
flags.DEFINE_boolean("coverage", True, "Train with coverage (the paper's final phase).")
flags.DEFINE_boolean("xla", False, "Compile the training step with XLA (jit_compile).")
flags.DEFINE_integer("steps", 10, "Timed training steps per configuration (after warm-up).")
flags.DEFINE_integer("warmup", 2, "Untimed steps first (tracing, allocation).")
flags.DEFINE_integer("decode_batch", 32, "Articles per batch for the large-batch decode.")
flags.DEFINE_integer("decode_articles", 128, "Articles decoded per decode measurement (batch 1: "
                     "an eighth of them).")
flags.DEFINE_boolean("scaling", True, "Also time max_enc_steps 100/200/400/800 and vocab "
                     "10k/50k/150k (synthetic batches, fewer steps).")
flags.DEFINE_boolean("quick", False, "Fewer steps everywhere (a smoke run, not a measurement).")
flags.DEFINE_boolean("ablation", False, "Also time the full-length step with each optimisation "
                     "in turn replaced by its plain formulation (steps interleaved, one process).")
flags.DEFINE_string("json_out", "benchmark.json", "Where to write the results.")
flags.DEFINE_boolean("bf16", True, "Also time training and decoding with "
                     "--precision=mixed_bfloat16.")
flags.DEFINE_boolean("tf1", True, "Also time the original's formulation "
                     "(tools/dev/tf1_reference.py, a TF1 graph with coverage; needs tf-keras) on "
                     "full-length and real batches, each in its own process.")
flags.DEFINE_boolean("tiny", False, "Tiny model and lengths everywhere: checks every code path "
                     "in seconds (a smoke run; the figures mean nothing).")
flags.DEFINE_string("long_step_json", "", "Internal: time only the long step (max_enc_steps 800 "
                    "/ max_dec_steps 200) at --long_step_precision, write its timing and peak "
                    "RSS to this file, exit.")
flags.DEFINE_enum("long_step_precision", "float32", list(precision.PRECISIONS),
                  "Internal: the precision of --long_step_json.")

flags.DEFINE_string("trained_ckpt_path", "", "Trained-model decode rows: a checkpoint of the "
                    "paper configuration (with --coverage as given). Empty: train the small "
                    "configuration (TRAINED) on --data_path for --trained_steps steps here.")
flags.DEFINE_integer("trained_steps", 300, "Training steps of the model the trained-model "
                     "decode rows decode (without --trained_ckpt_path).")
flags.DEFINE_integer("trained_articles", 256, "Articles decoded per trained-model decode row.")
flags.DEFINE_integer("slots", 64, "Searches side by side in the continuous-batching decode rows "
                     "(untrained and trained).")
flags.DEFINE_boolean("trained_only", False, "Only the trained-model decode rows.")
flags.DEFINE_boolean("input_only", False, "Only the input rows: tokenisation throughput and the "
                     "training step fed by its own input pipeline on .bin and on ptb JSONL.")

PAPER = config.HParams(batch_size=16, max_enc_steps=400, max_dec_steps=100, vocab_size=50000,
                       emb_dim=128, hidden_dim=256, pointer_gen=True, seed=0)
TINY = config.HParams(batch_size=2, max_enc_steps=40, max_dec_steps=10, vocab_size=500,
                      emb_dim=16, hidden_dim=16, pointer_gen=True, seed=0)
# The lengths users ran out of memory at with the original.
LONG_ENC_STEPS, LONG_DEC_STEPS = 800, 200
# The model trained here for the trained-model decode rows: small enough to learn to stop in a
# few hundred steps, so that its summaries end at different lengths.
TRAINED = PAPER.replace(vocab_size=20000, emb_dim=64, hidden_dim=128)
TF1_REFERENCE = REPO / "tools" / "dev" / "tf1_reference.py"
TF1_SIZES = ("batch_size", "max_enc_steps", "max_dec_steps", "vocab_size", "emb_dim", "hidden_dim")
TF1_MISSING = "needs tf-keras: pip install -r requirements-test.txt (or --notf1)"
# The TF1 rows: results key (as in "train_<key>") and the name of the batches.
TF1_DATA = (("real", "real data (vietnews)"), ("full_length", "full-length synthetic 400/100"))


def stats(times):
  return {"median": float(np.median(times)), "min": float(np.min(times)),
          "max": float(np.max(times)), "n": len(times)}


def matmul_ceiling(rows=1600, inner=256, cols=50000, repeats=5):
  """GFLOP/s of one float32 matmul of the projection's shape."""
  a = tf.random.normal([rows, inner])
  b = tf.random.normal([inner, cols])
  matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))
  matmul(a, b)
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    matmul(a, b).numpy()
    times.append(time.perf_counter() - start)
  return 2.0 * rows * inner * cols / np.median(times) / 1e9


def step_flops(hps, enc_len, dec_steps, real_steps, vocab_size):
  """Matmul FLOPs of one training step (forward x 3 for forward + backward)."""
  b, e, h = hps.batch_size, hps.emb_dim, hps.hidden_dim
  encoder = 2 * b * enc_len * (2 * e * 4 * h + 2 * h * 4 * h + 2 * h * 2 * h)
  per_step = 2 * b * ((e + 2 * h) * e + (e + h) * 4 * h + 2 * h * 2 * h
                      + enc_len * 2 * h * 2 + (4 * h + e))
  projection = 2 * real_steps * (3 * h * h + h * vocab_size)
  return 3 * (encoder + dec_steps * per_step + projection)


def synthetic_batch(hps, vocab_size, rng):
  b, l, t = hps.batch_size, hps.max_enc_steps, hps.max_dec_steps
  ids = lambda shape: tf.constant(rng.integers(4, vocab_size, shape), tf.int32)
  enc = ids((b, l))
  return batch_lib.TrainingBatch(enc_input=enc, enc_input_ext=enc, enc_len=tf.fill([b], l),
                                 num_oovs=tf.zeros([b], tf.int32), dec_input=ids((b, t)),
                                 target=ids((b, t)), dec_len=tf.fill([b], t))


def time_training(hps, vocab_size, batches, steps, warmup):
  """Times `steps` training steps on an endless iterator of batches; returns stats and FLOPs."""
  vocab = vocab_lib.Vocab([f"w{i}" for i in range(vocab_size - 4)])
  trainer = train.Trainer(hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
  step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps,
                               vocab_size, jit_compile=FLAGS.xla)
  # All batches are made first and handed over through a dataset whose spec has unknown
  # lengths, so that the step is traced once and its time holds no input work.
  prepared = [next(batches) for _ in range(warmup + steps)]
  spec = batch_lib.spec(text=False)
  iterator = iter(tf.data.Dataset.from_generator(lambda: prepared, output_signature=spec))
  times, flops = [], []
  for i, batch in enumerate(prepared):
    start = time.perf_counter()
    step(iterator)["loss"].numpy()
    seconds = time.perf_counter() - start
    if i >= warmup:
      times.append(seconds)
      lengths = batch.dec_len.numpy()
      flops.append(step_flops(hps, batch.enc_input.shape[1], batch.dec_input.shape[1],
                              int(lengths.sum()), vocab_size))
  return stats(times), float(np.mean(flops) / np.median(times) / 1e9)


def real_batches(hps, vocab):
  _, dataset = data.input_pipeline(hps.replace(data_path=FLAGS.data_path, seed=0), vocab,
                                   single_pass=False)
  for batch in dataset:
    yield batch.without_text()


def time_tokenizers(articles, repeats):
  """Articles/s of each tokenizer (--lowercase) over raw articles, one article per call in a
  parallel tf.data map, as the input pipeline calls it."""
  results = {}
  for tokenizer in text.TOKENIZERS:
    dataset = tf.data.Dataset.from_tensor_slices(articles).map(
        lambda article, name=tokenizer: tf.size(text.tokenize(article, name, lowercase=True)),
        num_parallel_calls=tf.data.AUTOTUNE)
    for _ in dataset:  # warm-up: tracing
      pass
    times = []
    for _ in range(repeats):
      start = time.perf_counter()
      for _ in dataset:
        pass
      times.append(time.perf_counter() - start)
    results[tokenizer] = {**stats(times), "articles_per_sec": len(articles) / np.median(times)}
  return results


def raw_vocab(hps, path):
  """The most frequent --tokenizer=ptb --lowercase tokens of the raw JSONL at `path`, filled up
  to hps.vocab_size with words no text has (so that the step costs what a full vocab's does)."""
  recs = data_formats.read_records([path], "auto", skips_lib.SkipCounter())
  texts = [t for r in recs for t in (r.article, *r.abstract_sentences)]
  tokens = text.tokenize(texts, "ptb", lowercase=True).to_list()  # [N, (tokens)]
  counts = vocab_lib.count_words([t.decode("utf-8") for t in row] for row in tokens)
  words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
  size = hps.vocab_size - len(vocab_lib.SPECIALS)
  # "[" is never inside a ptb token (it becomes -LSB-).
  return vocab_lib.Vocab(words[:size] + [f"[fill{i}]" for i in range(size - len(words))])


def pretokenized_copy(path, out_path):
  """Writes the raw JSONL at `path` as tools/make_datafiles.py prepares it, a .bin of its
  --tokenizer=ptb --lowercase tokens: the same examples, tokenised before training."""
  stories = (make_datafiles.jsonl_story(r)
             for r in data_formats.read_records([path], "auto", skips_lib.SkipCounter()))
  bin_format.BIN.write(out_path, make_datafiles.tokenized_records(
      stories, make_datafiles.line_tokenizer("ptb", lowercase=True)))
  return out_path


def time_fed_training(hps, vocab, data_path, steps, warmup):
  """The input pipeline alone (seconds per batch, as fast as it can make them) and the training
  step fed by it (tokenisation in a parallel map, prefetch): if the pipeline keeps ahead of the
  model, the fed step takes no longer than the step on ready batches."""
  _, dataset = data.input_pipeline(hps.replace(data_path=data_path, seed=0), vocab,
                                   single_pass=False)
  dataset = dataset.map(batch_lib.Batch.without_text)
  batches = iter(dataset)
  for _ in range(warmup):  # fills the bucketing cache
    next(batches)
  start = time.perf_counter()
  for _ in range(steps):
    next(batches)
  input_seconds = (time.perf_counter() - start) / steps
  trainer = train.Trainer(hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
  step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, len(vocab),
                               jit_compile=FLAGS.xla)
  times = []
  for i in range(warmup + steps):
    start = time.perf_counter()
    step(batches)["loss"].numpy()
    if i >= warmup:
      times.append(time.perf_counter() - start)
  return {**stats(times), "input_seconds_per_batch": input_seconds}


def pipeline_rows(hps, vocab, steps, warmup, results, rows):
  """Tokenisation throughput of each tokenizer, and the training step fed by its own input
  pipeline on the .bin data (pre-tokenised) and on raw English JSONL with --tokenizer=ptb."""
  articles = [r.article for r in data_formats.read_records([FLAGS.raw_articles_path], "auto",
                                                           skips_lib.SkipCounter())]
  results["tokenize"] = time_tokenizers(articles, 2 if FLAGS.quick else 5)
  for name, timing in results["tokenize"].items():
    rows.append((f"tokenize raw articles, --tokenizer={name} --lowercase",
                 f"{timing['articles_per_sec']:.0f} art/s",
                 f"{len(articles)} articles of {FLAGS.raw_articles_path}, a parallel map"))
  # The same examples both ways, in the same order (seed 0): tokenised in the input pipeline
  # from raw JSONL, and read as pre-tokenised .bin. If the pipeline keeps ahead of the model,
  # both steps take the same time.
  ptb_hps = hps.replace(tokenizer="ptb", lowercase=True, seed=0)
  raw_data_vocab = raw_vocab(hps, FLAGS.raw_data_path)
  with tempfile.TemporaryDirectory() as tmp:
    tokenized = pretokenized_copy(FLAGS.raw_data_path, os.path.join(tmp, "train.bin"))
    fed_bin = time_fed_training(hps.replace(seed=0), raw_data_vocab, tokenized, steps, warmup)
  fed_ptb = time_fed_training(ptb_hps, raw_data_vocab, FLAGS.raw_data_path, steps, warmup)
  results["train_fed_pretokenized_bin"], results["train_fed_ptb_jsonl"] = fed_bin, fed_ptb
  for name, timing in (("pre-tokenised .bin (BBC, ptb tokens)", fed_bin),
                       ("raw JSONL (BBC), --tokenizer=ptb --lowercase", fed_ptb)):
    rows.append((f"train step fed by the input pipeline, {name}", f"{timing['median']:.2f} s",
                 f"min {timing['min']:.2f} max {timing['max']:.2f}; the input pipeline alone "
                 f"makes a batch in {timing['input_seconds_per_batch']:.3f} s"))
  rows.append(("train step on raw JSONL with ptb / on the same data pre-tokenised",
               f"{fed_ptb['median'] / fed_bin['median']:.2f}x", "about 1x when the pipeline keeps ahead"))

def time_decode(hps, vocab, model, batch_size, articles):
  """Articles per second of single-pass beam search, `batch_size` articles at a time."""
  _, dataset = data.input_pipeline(hps.replace(data_path=FLAGS.decode_data_path), vocab,
                                   single_pass=True, batch_size=batch_size)
  ids = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[ids, tf.TensorSpec([None], tf.int32), ids,
                                tf.TensorSpec([], tf.int32)])
  def search(enc_input, enc_len, ext, max_oovs):
    return strategies.make(hps, search_lib.Settings.from_hparams(hps)).search(
        model, enc_input, enc_len, ext, max_oovs).length

  batches = iter(dataset)
  warm = next(batches)
  search(warm.enc_input, warm.enc_len, warm.enc_input_ext, tf.reduce_max(warm.num_oovs)).numpy()
  done, steps, start = 0, 0, time.perf_counter()
  while done < articles:
    batch = next(batches)
    lengths = search(batch.enc_input, batch.enc_len, batch.enc_input_ext,
                     tf.reduce_max(batch.num_oovs)).numpy()
    done += len(lengths)
    steps += int(lengths.max())
  seconds = time.perf_counter() - start
  return {"articles_per_sec": done / seconds, "articles": done, "seconds": seconds}


def trained_model(hps, vocab, steps):
  """The --trained_ckpt_path model, or one trained here on --data_path for `steps` steps."""
  if FLAGS.trained_ckpt_path:
    model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
    checkpoints.restore_weights(model, FLAGS.trained_ckpt_path)
    return model
  trainer = train.Trainer(hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
  step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps, len(vocab))
  spec = batch_lib.spec(text=False)
  iterator = iter(tf.data.Dataset.from_generator(lambda: real_batches(hps, vocab),
                                                 output_signature=spec))
  for _ in range(steps):
    loss = float(step(iterator)["loss"])
  print(f"Trained the decode rows' model for {steps} steps: loss {loss:.3f}", flush=True)
  return trainer.model


def decode_examples(hps, vocab, count):
  """The first `count` examples of --decode_data_path, as single-pass decode reads them."""
  _, dataset = data.input_pipeline(hps.replace(data_path=FLAGS.decode_data_path), vocab,
                                   single_pass=True)
  return list(itertools.islice(summaries.examples(dataset), count))


def time_continuous_decode(hps, vocab, model, slots, articles, compiled_attention=True):
  """Articles per second of single-pass decode with continuous batching over `slots` slots,
  and the summaries' lengths (decoder steps). The first `slots` articles and then the timed
  ones are decoded once untimed first: that traces the compiled functions and compiles
  --compiled_attention's kernel for every shape the timed run meets."""
  # Read first, so that the time holds no input work.
  examples = decode_examples(hps, vocab, slots + articles)
  settings = search_lib.Settings.from_hparams(hps)
  decoder = continuous_batching.SlotDecoder(
      model, strategies.make(hps, settings, attention.SearchAttention.of(
          hps.replace(compiled_attention=compiled_attention), "decode")),
      slots, hps.max_enc_steps)
  list(decoder.decode(examples[:slots]))
  list(decoder.decode(examples[slots:]))
  start = time.perf_counter()
  lengths = [int(result.length) for _, result in decoder.decode(examples[slots:])]
  seconds = time.perf_counter() - start
  return {"articles_per_sec": len(lengths) / seconds, "articles": len(lengths),
          "seconds": seconds, "steps": stats(lengths)}


def time_saved_model_serving(hps, vocab, model, batch_size, slots, articles,
                             compiled_attention=False):
  """Seconds per article of `model`'s SavedModel (--mode=export's, with
  --export_compiled_attention as given) summarising raw text, `batch_size` articles a call
  through its serving_default signature: the articles time_continuous_decode times (its .bin
  text, split on whitespace as decode splits it), all run once untimed first (which compiles
  the compiled attention for every shape met)."""
  texts = [e.article for e in decode_examples(hps, vocab, slots + articles)]
  batches = [tf.constant(texts[i:i + batch_size])
             for i in range(slots, len(texts), batch_size)]
  with tempfile.TemporaryDirectory() as tmp:
    ckpt_path = checkpoints.make_checkpoint(model).save(os.path.join(tmp, "train", "model.ckpt"))
    path = export.export(hps.replace(raw_tokenizer="whitespace", raw_lowercase=False,
                                     export_compiled_attention=compiled_attention), vocab,
                         ckpt_path, os.path.join(tmp, "export"))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    for batch in batches:
      serve(article=batch)["summary"].numpy()
    start = time.perf_counter()
    for batch in batches:
      serve(article=batch)["summary"].numpy()
    seconds = time.perf_counter() - start
  done = len(texts) - slots
  return {"seconds_per_article": seconds / done, "articles": done, "seconds": seconds}


def trained_decode_rows(hps, results, rows):
  """Decode of a trained model, whose summaries end at different lengths: one article at a
  time, then --slots searches side by side with continuous batching."""
  vocab = vocab_lib.Vocab.from_file(FLAGS.vocab_path, hps.vocab_size)
  steps = 2 if FLAGS.quick else FLAGS.trained_steps
  model = trained_model(hps, vocab, steps)
  decode_hps = hps.replace(mode="decode", beam_size=4, max_dec_steps=120, min_dec_steps=35)
  articles = 4 if FLAGS.quick else FLAGS.trained_articles
  one = time_continuous_decode(decode_hps, vocab, model, 1, max(2, articles // 8))
  many = time_continuous_decode(decode_hps, vocab, model, FLAGS.slots, articles)
  # The same articles in padded batches, each waiting for its slowest article (the decode before
  # continuous batching).
  padded = time_decode(decode_hps, vocab, model, FLAGS.slots, articles)
  ratio = many["articles_per_sec"] / one["articles_per_sec"]
  results["decode_trained"] = {"model": "checkpoint" if FLAGS.trained_ckpt_path else
                               f"trained {steps} steps", "batch_1": one,
                               f"continuous_{FLAGS.slots}": many, f"padded_{FLAGS.slots}": padded,
                               "speedup": ratio}
  lengths = many["steps"]
  rows.append(("decode trained model, beam 4, 35-120 steps, batch 1",
               f"{one['articles_per_sec']:.2f} art/s", ""))
  rows.append((f"decode trained model, continuous batching, {FLAGS.slots} slots",
               f"{many['articles_per_sec']:.2f} art/s",
               f"{ratio:.1f}x batch 1; summary steps median {lengths['median']:.0f} "
               f"(min {lengths['min']:.0f}, max {lengths['max']:.0f})"))
  rows.append((f"decode trained model, padded batches of {FLAGS.slots}",
               f"{padded['articles_per_sec']:.2f} art/s",
               f"{padded['articles_per_sec'] / one['articles_per_sec']:.1f}x batch 1"))


def _project_every_step(call):
  return lambda self, batch, real_steps_only=False, for_xla=False: call(self, batch, False,
                                                                        for_xla)


def _no_late_gradient(*_):
  return None


# Each optimisation and its plain formulation: a list of (module, attribute, plain replacement
# factory) patched together, or the attention implementation (attention.IMPLEMENTATIONS) trained
# in place of auto's.
ABLATIONS = {
    "encoder's recurrent kernel: gradient summed in the loop": [
        (loop_gradients, "loop_matmul",
         lambda _: lambda x, kernel, kernel_t: tf.matmul(x, kernel)),
        (loop_gradients, "recurrent_kernel_gradient", lambda _: _no_late_gradient)],
    "attention: eager (the paper's equations, TensorFlow's gradients, einsum context)": "eager",
    "attention tanh and its gradient: TensorFlow's ops, not XLA kernels": "hand_gradient",
    "loss: gather after softmax": [
        (losses, "softmax_at",
         lambda _: lambda logits, ids: tf.gather(tf.nn.softmax(logits), ids, batch_dims=1))],
    "projection on padding steps too": [
        (model_lib.PointerGenerator, "call", _project_every_step)],
}


def ablation(hps, batches, rounds):
  """Median step time with all optimisations and with each replaced by its plain form; the
  variants' steps are interleaved so that they share the machine's state."""
  vocab = vocab_lib.Vocab([f"w{i}" for i in range(hps.vocab_size - 4)])
  spec = batch_lib.spec(text=False)
  steps = {}
  for name in ["all optimisations"] + list(ABLATIONS):
    patches = ABLATIONS.get(name, [])
    variant = hps
    if isinstance(patches, str):
      variant, patches = hps.replace(attention_implementation=patches), []
    originals = [getattr(target, attribute) for target, attribute, _ in patches]
    for (target, attribute, plain), original in zip(patches, originals):
      setattr(target, attribute, plain(original))
    try:
      trainer = train.Trainer(variant.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
      step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, variant,
                                   hps.vocab_size)
      iterator = iter(tf.data.Dataset.from_generator(lambda: batches, output_signature=spec)
                      .repeat())
      step(iterator)["loss"].numpy()  # traces with the replacement in place
    finally:
      for (target, attribute, _), original in zip(patches, originals):
        setattr(target, attribute, original)
    steps[name] = (step, iterator)
  times = {name: [] for name in steps}
  for _ in range(rounds):
    for name, (step, iterator) in steps.items():
      start = time.perf_counter()
      step(iterator)["loss"].numpy()
      times[name].append(time.perf_counter() - start)
  return {name: stats(t) for name, t in times.items()}


def cpu_bf16_row():
  """Whether the CPU has bfloat16 instructions (for the report only)."""
  found = precision.native_bf16_flags()
  return ("CPU bfloat16 instructions", "yes" if found else "no",
          ", ".join(found) if found else "no avx512_bf16 / amx_bf16 in /proc/cpuinfo: "
          "mixed_bfloat16 is emulated (docs/precision.md recommends float32)")


def long_hps(hps):
  """The long-article configuration, shrunk in the same proportion under --tiny."""
  if FLAGS.tiny:
    return hps.replace(max_enc_steps=LONG_ENC_STEPS // 10, max_dec_steps=LONG_DEC_STEPS // 10)
  return hps.replace(max_enc_steps=LONG_ENC_STEPS, max_dec_steps=LONG_DEC_STEPS)


def long_step_only(hps, steps):
  """--long_step_json: this process times the long step alone and records its peak RSS."""
  scaled = long_hps(hps).replace(precision=FLAGS.long_step_precision)
  rng = np.random.default_rng(0)
  batches = iter(lambda: synthetic_batch(scaled, scaled.vocab_size, rng), None)
  timing, _ = time_training(scaled, scaled.vocab_size, batches, steps, 1)
  with open(FLAGS.long_step_json, "w", encoding="utf-8") as f:
    json.dump({**timing, "peak_rss_gb": peak_rss_gb(), "max_enc_steps": scaled.max_enc_steps,
               "max_dec_steps": scaled.max_dec_steps, "precision": scaled.precision}, f)


def long_step(precision_name):
  """Timing and peak RSS of the long step, measured in a child process."""
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "long_step.json")
    argv = [sys.executable, __file__, f"--long_step_json={out}",
            f"--long_step_precision={precision_name}", f"--coverage={FLAGS.coverage}",
            f"--quick={FLAGS.quick}", f"--tiny={FLAGS.tiny}", f"--xla={FLAGS.xla}"]
    subprocess.run(argv, check=True)
    with open(out, encoding="utf-8") as f:
      return json.load(f)


def missing_tf_keras(stderr):
  """Whether a child failed for want of tf-keras, where TF1's LSTMCell lives in TF 2.x."""
  return any(re.match(r"(ModuleNotFound|Import)Error: .*tf_keras", line)
             for line in stderr.splitlines())


def tf1_reference(hps, args):
  """Timing and peak RSS of the original's formulation (tools/dev/tf1_reference.py `args`, after 1
  warm-up step or article) at `hps`'s sizes, measured in a child process (it sets
  TF_USE_LEGACY_KERAS before importing TensorFlow); None without tf-keras."""
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "tf1_reference.json")
    argv = [sys.executable, str(TF1_REFERENCE), "--warmup=1", f"--json_out={out}", *args,
            *(f"--{name}={getattr(hps, name)}" for name in TF1_SIZES)]
    child = subprocess.run(argv, stderr=subprocess.PIPE, text=True, check=False)
    if child.returncode and missing_tf_keras(child.stderr):
      return None
    if child.returncode:
      raise RuntimeError(f"tools/dev/tf1_reference.py exited with {child.returncode}:\n"
                         f"{child.stderr[-5000:]}")
    with open(out, encoding="utf-8") as f:
      return json.load(f)


def tf1_rows(hps, steps, results, rows):
  """The original's formulation on the float32 training rows' kinds of batches."""
  data_args = {"real": (f"--data_path={FLAGS.data_path}", f"--vocab_path={FLAGS.vocab_path}"),
               "full_length": ()}
  for key, name in TF1_DATA:
    timing = tf1_reference(hps, (f"--steps={steps}", *data_args[key]))
    if timing is None:
      results["tf1_real"] = results["tf1_full_length"] = None
      rows.append(("original's formulation (TF1 graph)", "not run", TF1_MISSING))
      return
    results[f"tf1_{key}"] = timing
    ratio = timing["median"] / results[f"train_{key}"]["median"]
    rows.append((f"original's formulation (TF1 graph), {name}", f"{timing['median']:.2f} s",
                 f"min {timing['min']:.2f} max {timing['max']:.2f}; peak RSS "
                 f"{timing['peak_rss_gb']:.2f} GB; pointer_gen float32 is {ratio:.2f}x faster"))


def tf1_decode_row(hps, articles, results, rows):
  """The original's decode (tools/dev/tf1_reference.py --decode: its one-step graph and its beam
  search in Python, one article at a time) of the articles the continuous-batching decode rows
  time, after the article before them, against pointer_gen's single-pass decode (continuous
  batching, compiled attention)."""
  timing = tf1_reference(hps, (
      "--decode", f"--decode_articles={articles}", f"--decode_skip={FLAGS.slots - 1}",
      f"--beam_size={hps.beam_size}", f"--min_dec_steps={hps.min_dec_steps}",
      f"--data_path={FLAGS.decode_data_path}", f"--vocab_path={FLAGS.vocab_path}"))
  if timing is None:
    results["tf1_decode"] = None
    rows.append(("single-pass decode vs the original's decode", "not run", TF1_MISSING))
    return
  del timing["decoded"]  # the summaries, article by article
  ours = results["decode_continuous_compiled"]
  # Mean seconds per article on both sides: continuous batching has no per-article time.
  original_seconds, our_seconds = 1 / timing["articles_per_sec"], 1 / ours["articles_per_sec"]
  results["tf1_decode"] = timing
  results["decode_speedup_over_tf1"] = original_seconds / our_seconds
  rows.append(("original's decode (TF1 one-step graph, beam search in Python)",
               f"{original_seconds:.3f} s/art",
               f"one article at a time: median {timing['median']:.3f} min {timing['min']:.3f} "
               f"max {timing['max']:.3f} s; {timing['n']} articles; peak RSS "
               f"{timing['peak_rss_gb']:.2f} GB"))
  rows.append(("single-pass decode vs the original's decode",
               f"{results['decode_speedup_over_tf1']:.1f}x",
               f"the original's s/article / pointer_gen's (continuous batching over "
               f"{FLAGS.slots} slots, compiled attention): {original_seconds:.3f} / "
               f"{our_seconds:.3f} s; decoder steps median {timing['steps']['median']:.0f} / "
               f"{ours['steps']['median']:.0f}"))


def speedup_rows(results, rows):
  """pointer_gen's speed-up over the TF1 graph in each precision timed."""
  results["speedup_over_tf1"] = {}
  for key, name in TF1_DATA:
    tf1 = results[f"tf1_{key}"]["median"]
    ours = {"float32": results[f"train_{key}"]["median"]}
    if f"train_{key}_bf16" in results:
      ours["mixed_bfloat16"] = results[f"train_{key}_bf16"]["median"]
    ratios = {precision_name: tf1 / median for precision_name, median in ours.items()}
    results["speedup_over_tf1"][key] = ratios
    rows.append((f"speed-up over the TF1 graph, {name}",
                 " / ".join(f"{ratio:.2f}x" for ratio in ratios.values()),
                 "TF1 graph's median / pointer_gen's: " + ", ".join(
                     f"{precision_name} {tf1:.2f} / {median:.2f} s"
                     for precision_name, median in ours.items())))


def main(argv):
  del argv
  environment.configure_tensorflow()
  steps, warmup = (3, 1) if FLAGS.quick else (FLAGS.steps, FLAGS.warmup)
  base = TINY if FLAGS.tiny else PAPER
  hps = base.replace(coverage=FLAGS.coverage)
  if FLAGS.long_step_json:
    long_step_only(hps, 2 if FLAGS.quick else 4)
    return
  results = {"config": {"coverage": FLAGS.coverage, "xla": FLAGS.xla, "steps": steps,
                        "threads": os.cpu_count()}}
  rows = [cpu_bf16_row()]
  results["cpu_bf16_flags"] = precision.native_bf16_flags()
  if FLAGS.input_only:
    pipeline_rows(hps, vocab_lib.Vocab.from_file(FLAGS.vocab_path, hps.vocab_size), steps,
                  warmup, results, rows)
    _report(results, rows)
    return
  trained_decode_rows(hps if FLAGS.trained_ckpt_path or FLAGS.tiny else TRAINED.replace(
      coverage=FLAGS.coverage), results, rows)
  if FLAGS.trained_only:
    _report(results, rows)
    return

  m, k, n = (64, 16, 500) if FLAGS.tiny else (1600, 256, 50000)
  ceiling = matmul_ceiling(m, k, n)
  results["matmul_ceiling_gflops"] = ceiling
  rows.append((f"matmul ceiling [{m}x{k}]x[{k}x{n}]", f"{ceiling:.0f} GFLOP/s", ""))

  vocab = vocab_lib.Vocab.from_file(FLAGS.vocab_path, hps.vocab_size)
  real, gflops = time_training(hps, len(vocab), real_batches(hps, vocab), steps, warmup)
  results["train_real"] = {**real, "gflops": gflops, "fraction_of_ceiling": gflops / ceiling}
  rows.append(("train step, real data (vietnews)", f"{real['median']:.2f} s",
               f"min {real['min']:.2f} max {real['max']:.2f}; {gflops:.0f} GFLOP/s "
               f"({100 * gflops / ceiling:.0f}% of ceiling)"))
  pipeline_rows(hps, vocab, steps, warmup, results, rows)

  rng = np.random.default_rng(0)
  synthetic = iter(lambda: synthetic_batch(hps, hps.vocab_size, rng), None)
  full, gflops = time_training(hps, hps.vocab_size, synthetic, steps, warmup)
  results["train_full_length"] = {**full, "gflops": gflops, "fraction_of_ceiling": gflops / ceiling}
  rows.append(("train step, full-length synthetic 400/100", f"{full['median']:.2f} s",
               f"min {full['min']:.2f} max {full['max']:.2f}; {gflops:.0f} GFLOP/s "
               f"({100 * gflops / ceiling:.0f}% of ceiling)"))
  results["peak_rss_gb_after_training"] = peak_rss_gb()
  rows.append(("peak RSS after training", f"{results['peak_rss_gb_after_training']:.2f} GB", ""))
  if FLAGS.tf1:
    tf1_rows(hps, steps, results, rows)

  if FLAGS.bf16:
    bf16 = hps.replace(precision="mixed_bfloat16")
    real16, gflops = time_training(bf16, len(vocab), real_batches(bf16, vocab), steps, warmup)
    results["train_real_bf16"] = {**real16, "gflops": gflops}
    rows.append(("train step, real data (vietnews), mixed_bfloat16", f"{real16['median']:.2f} s",
                 f"min {real16['min']:.2f} max {real16['max']:.2f}; "
                 f"{real['median'] / real16['median']:.2f}x float32's speed"))
    synthetic = iter(lambda: synthetic_batch(bf16, bf16.vocab_size, rng), None)
    full16, gflops = time_training(bf16, bf16.vocab_size, synthetic, steps, warmup)
    results["train_full_length_bf16"] = {**full16, "gflops": gflops}
    rows.append(("train step, full-length synthetic, mixed_bfloat16",
                 f"{full16['median']:.2f} s", f"min {full16['min']:.2f} max {full16['max']:.2f}; "
                 f"{full['median'] / full16['median']:.2f}x float32's speed"))
  if results.get("tf1_real"):
    speedup_rows(results, rows)

  decode_hps = hps.replace(mode="decode", beam_size=4, max_dec_steps=120, min_dec_steps=35)
  if FLAGS.tiny:
    decode_hps = decode_hps.replace(max_dec_steps=12, min_dec_steps=3)
  trainer = train.Trainer(decode_hps.replace(log_root="/tmp/pointer_gen_benchmark"), vocab)
  articles = 4 if FLAGS.quick else FLAGS.decode_articles
  one = time_decode(decode_hps, vocab, trainer.model, 1, max(2, articles // 8))
  many = time_decode(decode_hps, vocab, trainer.model, FLAGS.decode_batch, articles)
  results["decode_batch_1"], results["decode_batch_large"] = one, many
  results["decode_speedup"] = many["articles_per_sec"] / one["articles_per_sec"]
  rows.append(("decode beam 4, 35-120 steps, batch 1", f"{one['articles_per_sec']:.2f} art/s", ""))
  rows.append((f"decode, batch {FLAGS.decode_batch}", f"{many['articles_per_sec']:.2f} art/s",
               f"{results['decode_speedup']:.1f}x batch 1"))
  # Single-pass decode as users run it: continuous batching, the attention scores compiled
  # (--compiled_attention, the default) and with TensorFlow's ops.
  for compiled, name in ((True, "compiled attention"), (False, "--nocompiled_attention")):
    timing = time_continuous_decode(decode_hps, vocab, trainer.model, FLAGS.slots, articles,
                                    compiled_attention=compiled)
    results[f"decode_continuous_{'compiled' if compiled else 'ops'}"] = timing
    rows.append((f"decode, continuous batching over {FLAGS.slots} slots, {name}",
                 f"{timing['articles_per_sec']:.2f} art/s",
                 f"{1 / timing['articles_per_sec']:.3f} s/article; "
                 f"{timing['articles_per_sec'] / one['articles_per_sec']:.1f}x batch 1"))
  single_pass = 1 / results["decode_continuous_compiled"]["articles_per_sec"]
  for compiled, name in ((False, "default export (TensorFlow's ops)"),
                         (True, "--export_compiled_attention")):
    served = time_saved_model_serving(decode_hps, vocab, trainer.model, FLAGS.decode_batch,
                                      FLAGS.slots, articles, compiled_attention=compiled)
    served["over_single_pass_decode"] = served["seconds_per_article"] / single_pass
    results[f"saved_model_serving{'_compiled' if compiled else ''}"] = served
    rows.append((f"SavedModel serve, batch {FLAGS.decode_batch}: s/article, {name}",
                 f"{served['seconds_per_article']:.3f} s",
                 f"{served['over_single_pass_decode']:.2f}x single-pass decode's "
                 f"{single_pass:.3f} s/article (continuous batching, compiled attention)"))
  if FLAGS.tf1:
    tf1_decode_row(decode_hps, articles, results, rows)
  if FLAGS.bf16:
    # The same initial weights (seed 0) as float32's decode.
    decode16 = decode_hps.replace(precision="mixed_bfloat16")
    model16 = train.Trainer(decode16.replace(log_root="/tmp/pointer_gen_benchmark"),
                            vocab).model
    one16 = time_decode(decode16, vocab, model16, 1, max(2, articles // 8))
    many16 = time_decode(decode16, vocab, model16, FLAGS.decode_batch, articles)
    results["decode_batch_1_bf16"], results["decode_batch_large_bf16"] = one16, many16
    for name, fp32_row, bf16_row in ((", batch 1", one, one16),
                                     (f", batch {FLAGS.decode_batch}", many, many16)):
      rows.append((f"decode{name}, mixed_bfloat16", f"{bf16_row['articles_per_sec']:.2f} art/s",
                   f"{bf16_row['articles_per_sec'] / fp32_row['articles_per_sec']:.2f}x "
                   "float32's speed"))

  if FLAGS.scaling:
    scale_steps = 2 if FLAGS.quick else 4
    results["scaling_enc_steps"] = {}
    for length in (10, 20, 40, 80) if FLAGS.tiny else (100, 200, 400, 800):
      scaled = hps.replace(max_enc_steps=length)
      batches = iter(lambda: synthetic_batch(scaled, hps.vocab_size, rng), None)
      timing, _ = time_training(scaled, hps.vocab_size, batches, scale_steps, 1)
      results["scaling_enc_steps"][length] = timing
      rows.append((f"train step, max_enc_steps {length}", f"{timing['median']:.2f} s", ""))
    results["scaling_vocab"] = {}
    for size in (500, 1000, 2000) if FLAGS.tiny else (10000, 50000, 150000):
      scaled = hps.replace(vocab_size=size)
      batches = iter(lambda: synthetic_batch(scaled, size, rng), None)
      timing, _ = time_training(scaled, size, batches, scale_steps, 1)
      results["scaling_vocab"][size] = timing
      rows.append((f"train step, vocab {size}", f"{timing['median']:.2f} s", ""))
    results["long_step"] = {}
    for name in ("float32", "mixed_bfloat16") if FLAGS.bf16 else ("float32",):
      timing = long_step(name)
      results["long_step"][name] = timing
      rows.append((f"train step, max_enc_steps {timing['max_enc_steps']} / max_dec_steps "
                   f"{timing['max_dec_steps']}, {name}", f"{timing['median']:.2f} s",
                   f"peak RSS {timing['peak_rss_gb']:.2f} GB (own process)"))

  if FLAGS.ablation:
    # Real batches have padding steps (short summaries); full-length ones have none.
    real = real_batches(hps, vocab)
    for data_name, batches in (
        ("full-length", [synthetic_batch(hps, hps.vocab_size, rng) for _ in range(2)]),
        ("real data", [next(real) for _ in range(2)])):
      timings = ablation(hps, batches, 2 if FLAGS.quick else max(3, steps // 2))
      results[f"ablation_{data_name}"] = timings
      base = timings["all optimisations"]["median"]
      for name, timing in timings.items():
        rows.append((f"ablation, {data_name}: {name}", f"{timing['median']:.2f} s",
                     f"min {timing['min']:.2f} max {timing['max']:.2f}; "
                     f"{timing['median'] / base:.2f}x all optimisations"))

  _report(results, rows)


def _report(results, rows):
  results["peak_rss_gb"] = peak_rss_gb()
  width = max(len(r[0]) for r in rows)
  for name, value, note in rows:
    print(f"{name:<{width}}  {value:>14}  {note}")
  with open(FLAGS.json_out, "w", encoding="utf-8") as f:
    json.dump(results, f, indent=2)
  print(f"Wrote {FLAGS.json_out}")


if __name__ == "__main__":
  usage.run_tool(main)
