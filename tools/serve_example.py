"""Summarises articles with an exported model, in-process or through TF Serving's REST API.

  python tools/serve_example.py --saved_model=exports/pgen "text of one article" ...
  python tools/serve_example.py --saved_model=exports/pgen/12345 < articles.txt
  python tools/serve_example.py --url=http://localhost:8501/v1/models/pgen:predict < articles.txt

--saved_model is an export version directory or, as TF Serving's base path, the --export_dir
that holds the versions: its newest (highest numbered) version is used, as TF Serving does.
Articles come from the arguments or, with none, one per line of standard input. Needs only
TensorFlow (for --saved_model) or nothing beyond Python (for --url), not pointer_gen.
"""

import json
import os
import sys
import urllib.request

from absl import app
from absl import flags
from pointer_gen import usage

FLAGS = flags.FLAGS


def define_flags():
  """Called only when run as a script, so that tests can import the functions beside
  pointer_gen's own flags (which include another --batch_size)."""
  flags.DEFINE_string("saved_model", "", "An export version directory (<export_dir>/<version>) "
                      "or the --export_dir holding the versions (the newest is used).")
  flags.DEFINE_string("url", "", "TF Serving's REST predict URL, "
                      "http://HOST:8501/v1/models/NAME[/versions/V]:predict.")
  flags.DEFINE_integer("batch_size", 16, "Articles per call: beam search over a batch is "
                       "several times faster per article than one at a time.")


def _is_saved_model(path):
  return any(os.path.isfile(os.path.join(path, name))
             for name in ("saved_model.pb", "saved_model.pbtxt"))


def version_dir(path):
  """`path` if it is a SavedModel; else, for a TF Serving base directory, its version
  subdirectory with the highest number (TF Serving ignores names that are not numbers)."""
  if _is_saved_model(path):
    return path
  if not os.path.isdir(path):
    raise ValueError(f"--saved_model={path}: no such directory")
  versions = {int(name): name for name in os.listdir(path)
              if name.isascii() and name.isdecimal() and os.path.isdir(os.path.join(path, name))}
  if not versions:
    raise ValueError(f"--saved_model={path}: neither a SavedModel (no saved_model.pb) nor a "
                     "base directory of numbered versions (as --mode=export writes)")
  newest = os.path.join(path, versions[max(versions)])
  if not _is_saved_model(newest):
    raise ValueError(f"--saved_model={path}: its newest version {newest} holds no "
                     "saved_model.pb")
  return newest


def summarize_local(path, articles, batch_size):
  import tensorflow as tf  # here, so that --url works without TensorFlow installed
  serve = tf.saved_model.load(path).signatures["serving_default"]
  results = []
  for start in range(0, len(articles), batch_size):
    out = serve(article=tf.constant(articles[start:start + batch_size], tf.string))
    results += [{"summary": s.decode("utf-8"), "log_prob": float(lp), "p_gen_mean": float(pg)}
                for s, lp, pg in zip(out["summary"].numpy(), out["log_prob"].numpy(),
                                     out["p_gen_mean"].numpy())]
  return results


def summarize_rest(url, articles, batch_size):
  results = []
  for start in range(0, len(articles), batch_size):
    # The columnar format: one named input, a list with one string per article.
    body = json.dumps({"signature_name": "serving_default",
                       "inputs": {"article": articles[start:start + batch_size]}})
    request = urllib.request.Request(url, body.encode("utf-8"),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
      outputs = json.load(response)["outputs"]
    results += [{"summary": s, "log_prob": lp, "p_gen_mean": pg}
                for s, lp, pg in zip(outputs["summary"], outputs["log_prob"],
                                     outputs["p_gen_mean"])]
  return results


def main(argv):
  if bool(FLAGS.saved_model) == bool(FLAGS.url):
    raise app.UsageError("give one of --saved_model and --url")
  articles = argv[1:] or [line.rstrip("\n") for line in sys.stdin]
  if FLAGS.saved_model:
    try:
      path = version_dir(FLAGS.saved_model)
    except ValueError as e:
      sys.exit(f"serve_example: error: {e}")
    if path != FLAGS.saved_model:
      print(f"Using {path}, the newest version in {FLAGS.saved_model}", file=sys.stderr)
    results = summarize_local(path, articles, FLAGS.batch_size)
  else:
    results = summarize_rest(FLAGS.url, articles, FLAGS.batch_size)
  for result in results:
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
  define_flags()
  usage.run_tool(main)
