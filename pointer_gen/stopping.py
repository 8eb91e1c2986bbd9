"""Ctrl-C and SIGTERM as one clean stop for the modes that run until told (train, eval)."""

import contextlib
import signal

from absl import logging


class StopRequested(Exception):
  """SIGTERM arrived; raised in the main thread like KeyboardInterrupt for Ctrl-C."""


def _raise_stop(signum, frame):
  del frame
  raise StopRequested(signal.Signals(signum).name)


@contextlib.contextmanager
def until_stopped():
  """Runs the body until it ends or Ctrl-C / SIGTERM stops it; a stop is logged, not raised,
  so that the caller's final save or summary still runs."""
  previous_handler = signal.signal(signal.SIGTERM, _raise_stop)
  try:
    yield
  except (KeyboardInterrupt, StopRequested) as e:
    logging.info("Stopping on %s.", type(e).__name__ if isinstance(e, KeyboardInterrupt) else e)
  finally:
    signal.signal(signal.SIGTERM, previous_handler)
