"""Writes the TF1 references of test files in one process, which pays TensorFlow's import once:
`python tf1_references.py OUT tests/test_a.py tests/test_b.py` runs each file as the script it
is (`python tests/test_a.py OUT/test_a` writes its reference into that new directory) in a
fresh default graph.
The caller sets TF_USE_LEGACY_KERAS=1 (TF1's RNN cells are tf_keras's)."""

import os
import runpy
import sys

import tensorflow as tf

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
  out_dir, scripts = sys.argv[1], sys.argv[2:]
  for script in scripts:
    tf.compat.v1.reset_default_graph()
    name = os.path.splitext(os.path.basename(script))[0]
    os.makedirs(os.path.join(out_dir, name))
    sys.argv = [script, os.path.join(out_dir, name)]
    # As for `python script`, and tests/ for the `helpers` the test files import.
    sys.path[0:1] = [os.path.dirname(os.path.abspath(script)), TESTS]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
  main()
