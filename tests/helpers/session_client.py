"""Runs SavedModels as TF Serving's loader does, in a fresh process without pointer_gen:
`python session_client.py < REQUEST.json` loads each export with
tf.compat.v1.saved_model.loader.load into a fresh graph and session (the MetaGraph's own restore
and init ops) and runs each signature asked for on the articles; then runs TensorFlow's
`saved_model_cli` on each command line asked for, in this process (one TensorFlow import for
all): the first as its command line does (its main, absl's app.run), each later one through its
argument parser and the command's function, as that main does.

REQUEST, read once TensorFlow is imported: {"articles": [str], "exports": [{"dir": str,
"signatures": [name]}], "saved_model_cli": [[arg, ...]]}. Prints {"exports": [{name: {key:
nested lists}}], "saved_model_cli": [stdout], "imported_pointer_gen": bool}: strings decoded as
UTF-8, floats as Python floats.
"""

import contextlib
import io
import json
import sys

from absl import flags
import numpy as np
import tensorflow as tf
from tensorflow.python.tools import saved_model_cli


def _lists(value):
  if value.dtype == object:
    return np.vectorize(lambda s: s.decode("utf-8"), otypes=[object])(value).tolist()
  return value.tolist()


def run(export_dir, signatures, articles):
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    results = {}
    for name in signatures:
      signature = meta_graph.signature_def[name]
      out = session.run({key: info.name for key, info in signature.outputs.items()},
                        {signature.inputs["article"].name: articles})
      results[name] = {key: _lists(value) for key, value in out.items()}
  return results


def run_cli(argv, first):
  """What `saved_model_cli *argv` prints to standard output."""
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    if first:
      sys.argv = ["saved_model_cli", *argv]
      try:
        saved_model_cli.main()
      except SystemExit as e:
        assert not e.code, f"saved_model_cli {argv} exited with {e.code}"
    else:
      flags.FLAGS.unparse_flags()
      saved_model_cli.create_parser().parse_args(argv).func()
  return out.getvalue()


def main():
  request = json.load(sys.stdin)
  results = [run(e["dir"], e["signatures"], request["articles"]) for e in request["exports"]]
  cli = [run_cli(argv, first=i == 0) for i, argv in enumerate(request["saved_model_cli"])]
  print(json.dumps({"exports": results, "saved_model_cli": cli,
                    "imported_pointer_gen": "pointer_gen" in sys.modules}))


if __name__ == "__main__":
  main()
