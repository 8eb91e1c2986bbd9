"""`python -m pointer_gen.run FLAGS...` with a fault or a pause of injected.py put in first, run
by tests in a process of its own:

  python tests/helpers/patched_run.py nonfinite_loss_at STEP FLAGS...
  python tests/helpers/patched_run.py pause_eval_at MOMENT SECONDS FLAGS...

(with the repository on PYTHONPATH, which a script's directory does not put on sys.path)."""

import os
import runpy
import sys

# As pointer_gen.run sets it before TensorFlow's import, which injected.py's imports now come
# before: TensorFlow's C++ INFO lines stay out of the run's stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import injected  # pylint: disable=wrong-import-position


def main():
  what, *rest = sys.argv[1:]
  if what == "nonfinite_loss_at":
    step, *flags = rest
    injected.nonfinite_loss_at(int(step))
  elif what == "pause_eval_at":
    moment, seconds, *flags = rest
    injected.pause_eval_at(moment, float(seconds))
  else:
    raise ValueError(f"{what!r}: expected nonfinite_loss_at or pause_eval_at")
  # As `python -m pointer_gen.run FLAGS...` runs it (its `__main__` part included; argv[0]
  # becomes the module's file).
  sys.argv = [sys.argv[0], *flags]
  runpy.run_module("pointer_gen.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main()
