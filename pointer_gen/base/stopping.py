"""Ctrl-C (SIGINT) and SIGTERM as one clean stop for the modes that run until told: train, eval
and decode.

A signal never raises into the code it lands in: it sets a flag that the loops check between
steps, checkpoints and examples (`requested`, `wait`). An exception raised at an arbitrary
bytecode could cut a checkpoint or file write in half, and could be lost on its way up (in a
`__del__`, which Python only reports, or in an `except` that wraps or retries).

Python runs signal handlers only in the main thread, between bytecodes, so while that thread is
inside a long TensorFlow call (a tf.data GetNext filling a shuffle buffer, the first trace and
compile of a step, a restore, an iterator's teardown) even setting a flag would wait for the
call to return. So the C-level handler's wakeup fd (written at once, on whatever thread the
signal lands) wakes a watchdog thread: it logs the one `Stopping on SIGINT.` line and sets the
flag; if the process has not ended GRACE_SECS later, it ends it with exit status 0, after any
write inside `critical()` has finished. A second signal ends it at once (writes still finish).
Every file the modes write is written atomically (temporary name, then rename) or inside
`critical()`, so a stop leaves each complete or absent. Such an exit (os._exit) skips atexit
handlers; none of the modes needs one (autograph, which deletes its generated source files at
exit, converts nothing: every tf.function and tf.data function is built with it off).

SIGINT is handled even when the process started with it ignored: a non-interactive shell starts
background jobs that way, and an explicit `kill -INT` (a job runner, tools/dev/soak.py) must still
stop the run.
"""

import contextlib
import os
import select
import signal
import sys
import threading
import time

from absl import logging

GRACE_SECS = 5.0
# How long a forced exit waits for a write in progress (a checkpoint of a big model on a slow
# disk) before it exits anyway.
CRITICAL_WAIT_SECS = 60.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_QUIT = 0  # written to the wakeup pipe by `uninstall`; no signal has number 0


def _ignore(signum, frame):
  """The Python-level handler: the watchdog has already acted on the signal."""
  del signum, frame


def _in_background(function, *args):
  """Runs `function` in a daemon thread and waits at most a second: logging or flushing blocks
  while the main thread holds the stream (a write to a full pipe), and must not hold up a stop."""
  thread = threading.Thread(target=function, args=args, daemon=True)
  thread.start()
  thread.join(timeout=1.0)


def _log(message, *args):
  """Logs from this module (absl names the calling file in the line) at INFO, or at WARNING
  before app.run has parsed the flags (absl shows only warnings until then): a stop while
  TensorFlow is being imported must say so too."""
  logging.log(logging.INFO if logging.level_info() else logging.WARNING, message, *args)


def _flush_outputs():
  logging.flush()
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (OSError, ValueError):  # closed or broken: nothing more to save
      pass


def _hard_exit():
  """Ends the process with status 0 at once: no atexit handlers, no waiting for threads."""
  _in_background(_flush_outputs)
  os._exit(0)  # pylint: disable=protected-access


class _Stopper:
  """The installed handlers, the wakeup pipe and the watchdog thread."""

  def __init__(self):
    self.requested = threading.Event()
    self.critical = threading.RLock()
    self._read_fd, self._write_fd = os.pipe()
    os.set_blocking(self._write_fd, False)  # set_wakeup_fd requires it
    self._previous_handlers = {s: signal.signal(s, _ignore) for s in _SIGNALS}
    self._previous_wakeup_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
    self._watchdog = threading.Thread(target=self._watch, name="stop-watchdog", daemon=True)
    self._watchdog.start()

  def uninstall(self):
    signal.set_wakeup_fd(self._previous_wakeup_fd)
    for signum, handler in self._previous_handlers.items():
      # None: a handler set outside Python, which cannot be put back; the default is closest.
      signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    os.write(self._write_fd, bytes([_QUIT]))
    self._watchdog.join()
    os.close(self._read_fd)
    os.close(self._write_fd)

  def _watch(self):
    deadline = None
    while True:
      timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
      if not select.select([self._read_fd], [], [], timeout)[0]:
        self._exit()  # the grace period is over
      for signum in os.read(self._read_fd, 64):
        if signum == _QUIT:
          return
        if signum not in _SIGNALS:
          continue
        name = signal.Signals(signum).name
        if deadline is not None:
          _in_background(_log, "Second %s: exiting now.", name)
          self._exit()
        deadline = time.monotonic() + GRACE_SECS
        _in_background(_log, "Stopping on %s.", name)
        self.requested.set()

  def _exit(self):
    """Ends the process with status 0 once no write is in progress."""
    self.critical.acquire(timeout=CRITICAL_WAIT_SECS)  # pylint: disable=consider-using-with
    _hard_exit()


_stopper = None


def install():
  """Handles SIGINT and SIGTERM from now on (main thread only); True if it was not yet."""
  global _stopper
  if _stopper is not None:
    return False
  _stopper = _Stopper()
  return True


def uninstall():
  """Gives SIGINT and SIGTERM back their previous handlers; a pending forced exit is cancelled."""
  global _stopper
  if _stopper is not None:
    _stopper.uninstall()
    _stopper = None


@contextlib.contextmanager
def until_stopped():
  """Handles SIGINT and SIGTERM in the body, unless already installed for the whole process
  (`python -m pointer_gen.run` does so before importing TensorFlow)."""
  installed = install()
  try:
    yield
  finally:
    if installed:
      uninstall()


def requested():
  """Whether SIGINT or SIGTERM asked the process to stop."""
  return _stopper is not None and _stopper.requested.is_set()


def wait(seconds):
  """Sleeps `seconds` or until a stop is requested; returns `requested()`."""
  if _stopper is None:
    time.sleep(seconds)
    return False
  return _stopper.requested.wait(seconds)


@contextlib.contextmanager
def critical():
  """A write that a stop must not cut short: a forced exit waits for the body to finish."""
  if _stopper is None:
    yield
    return
  with _stopper.critical:
    yield


def exit_if_requested():
  """Ends the process (status 0) if a stop was requested: called by the entry point when the
  mode has stopped and written what it writes. Python's own teardown would then wait seconds
  for tf.data's threads to wind down."""
  if requested():
    _hard_exit()
