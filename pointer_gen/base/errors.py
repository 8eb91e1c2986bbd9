"""Errors raised for bad user input: each message names the file, record or flag at fault."""

import os
import re


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


# A flag as messages write it: --name, --name=value, --noname (a boolean's false).
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_]*)(=(?:true|false)\b)?")


def in_keywords(message, names, booleans):
  """`message`, worded for the command line, worded for the Python API, whose settings are
  keywords named as their flags: each flag of `names` (the settings) written as its keyword,
  `--beam_size=4` as `beam_size=4`, `--vocab_path` as `vocab_path=`, and of `booleans` (those
  of them that are booleans) `--coverage=true` as `coverage=True`, `--nocoverage` as
  `coverage=False`. Other flags (--mode, --flagfile: no keyword) are left as they are."""

  def keyword(match):
    name, boolean = match.group(1), match.group(2)
    has_value = match.string.startswith("=", match.end())
    if name in names:
      if boolean and name in booleans:
        return f"{name}={boolean == '=true'}"
      return name + (boolean or ("" if has_value else "="))
    if name.startswith("no") and name[2:] in booleans and not boolean and not has_value:
      return f"{name[2:]}=False"
    return match.group(0)

  return _FLAG.sub(keyword, message)
