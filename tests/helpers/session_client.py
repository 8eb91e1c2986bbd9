"""Runs SavedModels as TF Serving's loader does, in a fresh process without pointer_gen:
`python session_client.py < REQUEST.json` loads each export with
tf.compat.v1.saved_model.loader.load into a fresh graph and session (the MetaGraph's own restore
and init ops) and runs each signature asked for on the articles.

REQUEST, read once TensorFlow is imported: {"articles": [str], "exports": [{"dir": str,
"signatures": [name]}]}. Prints {"exports": [{name: {key: nested lists}}],
"imported_pointer_gen": bool}: strings decoded as UTF-8, floats as Python floats.
"""

import json
import sys

import numpy as np
import tensorflow as tf


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


def main():
  request = json.load(sys.stdin)
  results = [run(e["dir"], e["signatures"], request["articles"]) for e in request["exports"]]
  print(json.dumps({"exports": results, "imported_pointer_gen": "pointer_gen" in sys.modules}))


if __name__ == "__main__":
  main()
