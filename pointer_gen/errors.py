"""Errors raised for bad user input: each message names the file, record or flag at fault."""


class DataError(ValueError):
  """A data, vocab or flag value that cannot be used, with the place it came from."""


class OutputError(OSError):
  """An output file or directory that cannot be written (disk full, not writable), with its
  path."""
