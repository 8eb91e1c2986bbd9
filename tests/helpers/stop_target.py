"""Run by tests/base/test_stopping.py in a fresh process (without TensorFlow, so it starts at once):
installs pointer_gen.base.stopping with a grace period of argv[2] seconds, prints `ready` and then

- `loop`: checks `stopping.requested()` every 10 ms and prints `loop ended` when it is set;
- `blocked`: sleeps 60 s, like a main thread inside a long TensorFlow call (Python restarts the
  sleep after a signal, whose handler does not raise);
- `critical`: inside `stopping.critical()`, sleeps argv[3] seconds and writes the file argv[4],
  then sleeps 60 s outside it.
"""

import sys
import time

from absl import logging

from pointer_gen.base import stopping


def main():
  scenario, stopping.GRACE_SECS = sys.argv[1], float(sys.argv[2])
  logging.set_verbosity(logging.INFO)  # as app.run does for the entry point
  stopping.install()
  if scenario == "loop":
    print("ready", flush=True)
    while not stopping.requested():
      time.sleep(0.01)
    print("loop ended", flush=True)
  elif scenario == "blocked":
    print("ready", flush=True)
    time.sleep(60)
  elif scenario == "critical":
    with stopping.critical():
      print("ready", flush=True)
      time.sleep(float(sys.argv[3]))
      with open(sys.argv[4], "w", encoding="utf-8") as f:
        f.write("complete\n")
    time.sleep(60)
  else:
    raise ValueError(scenario)


if __name__ == "__main__":
  main()
