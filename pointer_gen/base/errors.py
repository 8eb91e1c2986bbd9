"""Errors raised for bad user input: each message names the file, record or flag at fault."""

import os


class DataError(ValueError):
  """A data, vocab or flag value that cannot be used, with the place it came from."""


class OutputError(OSError):
  """An output file or directory that cannot be written (disk full, not writable), with its
  path."""


def make_output_dir(directory):
  """os.makedirs, with a failure (a file in the way, no permission, a full disk) turned into an
  OutputError that names the directory."""
  try:
    os.makedirs(directory, exist_ok=True)
  except OSError as e:
    raise cannot_create(directory, e) from e


def cannot_create(directory, error):
  """The OutputError of an output directory that `error`, an OSError, kept from being made."""
  return OutputError(f"cannot create the output directory {directory} (check --log_root): "
                     f"{error.strerror}")


def flag_text(value):
  """A flag value as a message shows it, the way it is written on the command line: booleans
  as true/false."""
  return str(value).lower() if isinstance(value, bool) else str(value)
