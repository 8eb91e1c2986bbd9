"""Summarises articles with an exported model, in-process or through TF Serving's REST API.

  python tools/serve_example.py --saved_model=exports/pgen/12345 "text of one article" ...
  python tools/serve_example.py --url=http://localhost:8501/v1/models/pgen:predict < articles.txt

Articles come from the arguments or, with none, one per line of standard input. Needs only
TensorFlow (for --saved_model) or nothing beyond Python (for --url), not pointer_gen.
"""

import json
import sys
import urllib.request

from absl import app
from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string("saved_model", "", "An export version directory (<export_dir>/<version>).")
flags.DEFINE_string("url", "", "TF Serving's REST predict URL, "
                    "http://HOST:8501/v1/models/NAME[/versions/V]:predict.")
flags.DEFINE_integer("batch_size", 16, "Articles per call: beam search over a batch is several "
                     "times faster per article than one at a time.")


def summarize_local(path, articles):
  import tensorflow as tf  # here, so that --url works without TensorFlow installed
  serve = tf.saved_model.load(path).signatures["serving_default"]
  results = []
  for start in range(0, len(articles), FLAGS.batch_size):
    out = serve(article=tf.constant(articles[start:start + FLAGS.batch_size], tf.string))
    results += [{"summary": s.decode("utf-8"), "log_prob": float(lp), "p_gen_mean": float(pg)}
                for s, lp, pg in zip(out["summary"].numpy(), out["log_prob"].numpy(),
                                     out["p_gen_mean"].numpy())]
  return results


def summarize_rest(url, articles):
  results = []
  for start in range(0, len(articles), FLAGS.batch_size):
    # The columnar format: one named input, a list with one string per article.
    body = json.dumps({"signature_name": "serving_default",
                       "inputs": {"article": articles[start:start + FLAGS.batch_size]}})
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
    results = summarize_local(FLAGS.saved_model, articles)
  else:
    results = summarize_rest(FLAGS.url, articles)
  for result in results:
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
  app.run(main)
