"""One trainer per run directory: an exclusive lock on `<run>/trainer.lock`.

The lock is an flock(2) on the open file, which the operating system releases when the process
ends in any way (SIGKILL and crashes included), so it is never left stuck; the file stays and only
says who held it last. Only processes that write the train directory take it: the trainer (its
chief, under a multi-worker strategy) and the train-mode utilities. Eval, decode and export only
read checkpoints and never take it.
"""

import contextlib
import fcntl
import os
import socket
import time

from absl import logging

from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import make_output_dir

LOCK_NAME = "trainer.lock"


@contextlib.contextmanager
def held(run_dir, what="trainer"):
  """Holds the run directory's lock for the body; raises DataError if another process has it."""
  make_output_dir(run_dir)
  path = os.path.join(run_dir, LOCK_NAME)
  # Opened without truncating: the holder's line is read below if the lock is taken.
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = os.pread(fd, 1000, 0).decode("utf-8", "replace").strip() or "another process"
      raise DataError(f"{run_dir} is in use by another trainer ({holder}; lock {path}): two "
                      "trainers on one run directory would overwrite each other's checkpoints. "
                      "Stop it first, or train into another --exp_name") from None
    except OSError as e:  # a file system without locks (ENOLCK, EOPNOTSUPP)
      logging.warning("Cannot lock %s (%s): a second trainer on this run directory would not "
                      "be refused.", path, e.strerror)
    os.ftruncate(fd, 0)
    os.pwrite(fd, (f"{what} pid {os.getpid()} on {socket.gethostname()} since "
                   f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n").encode("utf-8"), 0)
    yield path
  finally:
    os.close(fd)  # releases the lock
