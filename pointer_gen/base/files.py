"""Writing a file so that a reader, or a run stopped halfway, sees either the old file or the
complete new one: every file the project writes (records, vocab, decoded summaries, metrics,
run records, the checkpoint state) goes through `atomic_file`.

The data is written to a temporary sibling, `<path>.tmp-<pid>`, and renamed over `path` only
once it is complete; on any error the temporary file is removed and `path` is untouched.
"""

import contextlib
import os

import tensorflow as tf

# What readers that list a directory skip: a file still being written.
TEMPORARY_MARK = ".tmp-"


def _is_local(path):
  # A path with a scheme (gs://, s3://, hdfs://) goes through TensorFlow's file systems.
  return "://" not in str(path)


@contextlib.contextmanager
def atomic_file(path, mode="w"):
  """Opens a temporary sibling of `path` for writing (`mode` "w" is UTF-8 text, "wb" bytes) and
  moves it over `path` when the block ends without an error.

  Local files are flushed to disk before the rename, so the renamed file survives a crash whole.
  A plain open (not mkstemp, which creates mode 0600) gives the file the usual permissions.
  """
  if mode not in ("w", "wb"):
    raise ValueError(f"mode={mode!r}: expected 'w' or 'wb'")
  path = os.fspath(path)
  tmp_path = f"{path}{TEMPORARY_MARK}{os.getpid()}"
  local = _is_local(path)
  try:
    if local:
      with open(tmp_path, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
        yield f
        f.flush()
        os.fsync(f.fileno())
      os.replace(tmp_path, path)
    else:
      with tf.io.gfile.GFile(tmp_path, mode) as f:
        yield f
      tf.io.gfile.rename(tmp_path, path, overwrite=True)
  except BaseException:
    _remove_temporary(tmp_path, local)
    raise


def _remove_temporary(tmp_path, local):
  """Removes what a failed atomic write left, if anything."""
  with contextlib.suppress(FileNotFoundError, tf.errors.NotFoundError):
    if local:
      os.remove(tmp_path)
    else:
      tf.io.gfile.remove(tmp_path)


@contextlib.contextmanager
def atomic_path(path):
  """A temporary sibling of `path` for a writer that opens a path itself (tf.io.TFRecordWriter),
  moved over `path` when the block ends without an error, as `atomic_file` does; the writer
  must be closed inside the block."""
  path = os.fspath(path)
  tmp_path = f"{path}{TEMPORARY_MARK}{os.getpid()}"
  local = _is_local(path)
  try:
    yield tmp_path
    if local:
      fd = os.open(tmp_path, os.O_RDONLY)
      try:
        os.fsync(fd)
      finally:
        os.close(fd)
      os.replace(tmp_path, path)
    else:
      tf.io.gfile.rename(tmp_path, path, overwrite=True)
  except BaseException:
    _remove_temporary(tmp_path, local)
    raise


def write_text_atomic(path, text):
  """Writes `text` (UTF-8) to `path` through `atomic_file`."""
  with atomic_file(path, "w") as f:
    f.write(text)
