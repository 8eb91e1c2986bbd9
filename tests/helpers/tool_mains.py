"""Runs a tool once per argument list in one fresh process, which pays TensorFlow's import once:
`python tool_mains.py tools/<tool>.py '[[arg, ...], ...]'` prints a JSON list of [exit code,
stdout, stderr], one per list, as `python tools/<tool>.py arg ...` would end.

The first list runs the tool as the command line does (its `__main__` block: absl's app.run);
each later one parses its flags afresh and calls the tool's main. A SystemExit message goes to
stderr with exit code 1, as the interpreter writes it. stdout and stderr are what Python code
wrote to sys.stdout and sys.stderr (TensorFlow's C++ log lines are not)."""

import io
import json
import os
import sys

from absl import flags


class _Output(io.TextIOBase):
  """sys.stdout or sys.stderr, the text of each run kept apart; a stream taken in an earlier run
  (a default argument bound when the tool was defined) writes into the current run's too."""

  def __init__(self):
    super().__init__()
    self.runs = []

  def write(self, text):
    return self.runs[-1].write(text)


def _exit_code(exit_error):
  code = exit_error.code
  if code is None or isinstance(code, int):
    return code or 0
  print(code, file=sys.stderr)
  return 1


def _run_all(path, argv_lists, out, err):
  name = os.path.basename(path)
  with open(path, encoding="utf-8") as f:
    source = compile(f.read(), path, "exec")
  tool = {"__name__": "__main__", "__file__": path}
  codes = []
  for index, argv in enumerate(argv_lists):
    out.runs.append(io.StringIO())
    err.runs.append(io.StringIO())
    try:
      if index == 0:
        sys.argv = [path, *argv]
        exec(source, tool)  # pylint: disable=exec-used
      else:
        flags.FLAGS.unparse_flags()
        flags.FLAGS([name, *argv])
        tool["main"]([name])
      codes.append(0)
    except SystemExit as e:
      codes.append(_exit_code(e))
  return codes


def main():
  path, argv_lists = sys.argv[1], json.loads(sys.argv[2])
  out, err = _Output(), _Output()
  sys.stdout, sys.stderr = out, err
  try:
    codes = _run_all(path, argv_lists, out, err)
  finally:
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
  print(json.dumps([[code, o.getvalue(), e.getvalue()]
                    for code, o, e in zip(codes, out.runs, err.runs)]))


if __name__ == "__main__":
  main()
