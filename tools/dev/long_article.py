"""Time and peak memory of a SavedModel on one long article against a short one, alone and in
one request: one request's size must not decide the latency of the articles beside it.

    python tools/dev/long_article.py --make_export=DIR [--repo=CHECKOUT --export_subdir=NAME]
    python tools/dev/long_article.py --saved_model=EXPORT [--long_mb=10] [--json_out=FILE]

--make_export writes into DIR a vocab (the most frequent ptb lower-cased tokens of BBC val) and
the checkpoint of an untrained model (flags/demo.cfg's sizes with --max_enc_steps, seed 1), or
reuses them, and exports it (raw text tokenised by ptb, lower-cased) into DIR/--export_subdir
with the code of --repo (default: this checkout): the same weights exported by an older commit's
code (`git archive COMMIT | tar -x -C CHECKOUT`) give the figures before a change. It prints the
export's path, EXPORT.

--saved_model is timed with TensorFlow alone. The short article is the BBC val article nearest
2.5 KB; the long one is that article followed by other BBC articles up to --long_mb MB, so that
both have the same first max_enc_steps tokens and summary. Each case (short, long, both in one
request) runs in a fresh process per loader (tf.saved_model.load; TF Serving's session loader):
the export loaded, one warm-up call of the case's batch size on the short article, then
--repeats timed calls (the request's tensor made from Python strings included). Printed: the
median and fastest call, the process's peak RSS (VmHWM) after the calls and before them (load
and warm-up), and whether every summary equals the short article's.
Run it alone: the figures are only comparable when nothing else uses the CPU.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = pathlib.Path(__file__).resolve().parents[2]
BBC_VAL = REPO.parent / "shared" / "data" / "bbc_news_summary" / "val.jsonl"

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np

from pointer_gen import usage

from process_memory import peak_rss_gb  # tools/, next to this script

FLAGS = flags.FLAGS
flags.DEFINE_string("saved_model", "", "The export to time (a version directory).")
flags.DEFINE_string("make_export", "", "Write a vocab, checkpoint and export into this directory.")
flags.DEFINE_string("repo", str(REPO), "With --make_export: the checkout whose code exports.")
flags.DEFINE_string("export_subdir", "export", "With --make_export: where in it the export goes.")
flags.DEFINE_string("bbc_path", str(BBC_VAL), "BBC News Summary JSONL: the articles.")
flags.DEFINE_float("long_mb", 10.0, "Size of the long article in MB (10^6 bytes).")
flags.DEFINE_integer("short_bytes", 2500, "The short article: the one nearest this size.")
flags.DEFINE_integer("repeats", 5, "Timed calls per case.")
flags.DEFINE_list("loaders", ["load", "session"], "load: tf.saved_model.load; session: "
                  "tf.compat.v1's loader and a session, as TF Serving.")
flags.DEFINE_integer("max_enc_steps", 400, "With --make_export: the model's max_enc_steps.")
flags.DEFINE_string("json_out", "", "Also write the results here.")
flags.DEFINE_string("case", "", "Internal: run one case in this process and print it as JSON.")
flags.DEFINE_string("loader", "", "Internal: the loader of --case.")

CASES = ("short", "long", "both")
# flags/demo.cfg's model, decoded as its decode does.
DEMO_SIZES = dict(vocab_size=2000, hidden_dim=64, emb_dim=32, max_dec_steps=30, min_dec_steps=5,
                  beam_size=4, pointer_gen=True, coverage=True)

# Runs in --repo's checkout: its pointer_gen exports the checkpoint.
EXPORT = r"""
import json, sys
from pointer_gen import config
from pointer_gen.inference import export
from pointer_gen.text import vocab as vocab_lib
vocab_path, root, ckpt_path, export_dir, sizes = sys.argv[1:]
hps = config.HParams(vocab_path=vocab_path, log_root=root, exp_name="run", tokenizer="ptb",
                     lowercase=True, **json.loads(sizes))
print(export.export(hps, vocab_lib.Vocab.from_file(vocab_path, hps.vocab_size), ckpt_path,
                    export_dir))
"""


def bbc_articles(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line)["article"] for line in f]


def short_and_long(path, short_bytes, long_mb):
  articles = bbc_articles(path)
  short = min(articles, key=lambda a: abs(len(a.encode("utf-8")) - short_bytes))
  others = "\n".join(a for a in articles if a != short).encode("utf-8")
  size = int(long_mb * 1e6)
  body = (short + "\n").encode("utf-8") + others * (size // len(others) + 1)
  return short, body[:size].decode("utf-8", "ignore")


def make_export(directory, repo, max_enc_steps):
  """The vocab and checkpoint with this checkout's code, the export with `repo`'s."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from pointer_gen import config  # pylint: disable=g-import-not-at-top
  from pointer_gen.base import checkpoints  # pylint: disable=g-import-not-at-top
  from pointer_gen.model import pointer_generator as model_lib  # pylint: disable=g-import-not-at-top
  from pointer_gen.text import tokenizers as text  # pylint: disable=g-import-not-at-top
  from pointer_gen.text import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  directory = pathlib.Path(directory).resolve()
  directory.mkdir(parents=True, exist_ok=True)
  sizes = dict(DEMO_SIZES, max_enc_steps=max_enc_steps)
  vocab_path = directory / "vocab"
  if not vocab_path.exists():
    tokens = text.tokenize(bbc_articles(FLAGS.bbc_path), "ptb", lowercase=True).to_list()
    counts = vocab_lib.count_words([t.decode("utf-8") for t in row] for row in tokens)
    vocab_lib.write_vocab(str(vocab_path), counts, sizes["vocab_size"])
  hps = config.HParams(vocab_path=str(vocab_path), log_root=str(directory), exp_name="run",
                       tokenizer="ptb", lowercase=True, **sizes)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  ckpt_path = checkpoints.newest(hps.train_dir)
  if not ckpt_path:
    keras.utils.set_random_seed(1)
    model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
    ckpt_path = tf.train.CheckpointManager(
        checkpoints.make_checkpoint(model), hps.train_dir, 1,
        checkpoint_name=checkpoints.CHECKPOINT_NAME).save()
  env = dict(os.environ, PYTHONPATH=str(pathlib.Path(repo).resolve()))
  done = subprocess.run([sys.executable, "-c", EXPORT, str(vocab_path), str(directory),
                         ckpt_path, str(directory / FLAGS.export_subdir), json.dumps(sizes)],
                        cwd=repo, env=env, capture_output=True, text=True, check=False)
  if done.returncode:
    sys.exit(f"the export with {repo}'s code failed:\n{done.stderr[-3000:]}")
  return done.stdout.strip().splitlines()[-1]


def run_case(path, case, loader, repeats):
  """One case in this process: {"median_s", "min_s", "peak_rss_gb", "peak_before_gb",
  "same_summaries"}."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  short, long = short_and_long(FLAGS.bbc_path, FLAGS.short_bytes, FLAGS.long_mb)
  batch = {"short": [short], "long": [long], "both": [short, long]}[case]
  if loader == "load":
    serve = tf.saved_model.load(path).signatures["serving_default"]

    def call(articles):
      return serve(article=tf.constant(articles))["summary"].numpy()
  else:
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph)
    with graph.as_default():
      signature = tf.compat.v1.saved_model.loader.load(
          session, [tf.saved_model.SERVING], path).signature_def["serving_default"]

    def call(articles):
      return session.run(signature.outputs["summary"].name,
                         {signature.inputs["article"].name: articles})
  expected = call([short] * len(batch))
  before = peak_rss_gb()
  times, same = [], True
  for _ in range(repeats):
    start = time.perf_counter()
    summaries = call(batch)
    times.append(time.perf_counter() - start)
    same = same and summaries.tolist() == expected.tolist()
  return {"median_s": float(np.median(times)), "min_s": min(times), "peak_rss_gb": peak_rss_gb(),
          "peak_before_gb": before, "same_summaries": same}


def main(argv):
  del argv
  if FLAGS.make_export:
    print(make_export(FLAGS.make_export, FLAGS.repo, FLAGS.max_enc_steps))
    return
  if not FLAGS.saved_model:
    sys.exit("give --saved_model (an export's version directory) or --make_export")
  if FLAGS.case:
    print(json.dumps(run_case(FLAGS.saved_model, FLAGS.case, FLAGS.loader, FLAGS.repeats)))
    return
  short, long = short_and_long(FLAGS.bbc_path, FLAGS.short_bytes, FLAGS.long_mb)
  print(f"{FLAGS.saved_model}: short article {len(short.encode('utf-8'))} bytes, long "
        f"{len(long.encode('utf-8'))} bytes, {FLAGS.repeats} calls each")
  print(f"{'loader':8} {'request':14} {'median s':>9} {'min s':>8} {'peak GB':>8} "
        f"{'before GB':>9}  same summary")
  results = {}
  for loader in FLAGS.loaders:
    for case in CASES:
      done = subprocess.run(
          [sys.executable, __file__, f"--saved_model={FLAGS.saved_model}", f"--case={case}",
           f"--loader={loader}", f"--repeats={FLAGS.repeats}", f"--long_mb={FLAGS.long_mb}",
           f"--short_bytes={FLAGS.short_bytes}", f"--bbc_path={FLAGS.bbc_path}"],
          capture_output=True, text=True, check=False)
      if done.returncode:
        sys.exit(f"{loader} {case} failed:\n{done.stderr[-3000:]}")
      row = results.setdefault(loader, {})[case] = json.loads(done.stdout.splitlines()[-1])
      request = {"short": "short alone", "long": "long alone", "both": "both, one call"}[case]
      print(f"{loader:8} {request:14} {row['median_s']:9.3f} {row['min_s']:8.3f} "
            f"{row['peak_rss_gb']:8.2f} {row['peak_before_gb']:9.2f}  {row['same_summaries']}",
            flush=True)
  if FLAGS.json_out:
    with open(FLAGS.json_out, "w", encoding="utf-8") as f:
      json.dump({"saved_model": FLAGS.saved_model, "results": results}, f, indent=1)


if __name__ == "__main__":
  usage.run_tool(main)
