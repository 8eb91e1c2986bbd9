"""Every tool in tools/ and tools/dev/ answers --help as `python -m pointer_gen.run --help` does:
its usage on stdout, exit 0 (absl's own --help exits 1, as a failure would)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO

# The scripts: the modules of those folders that run as one (the others are modules the scripts
# import, with no command line).
TOOLS = sorted(str(path) for folder in (REPO / "tools", REPO / "tools" / "dev")
               for path in folder.glob("*.py")
               if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"))

# Runs each script as `python <script> --help` runs it (its folder first on the path, as
# __main__), one after another in one interpreter, which imports TensorFlow once: what one
# script defined (its flags, the modules of the tools' folders it imported) is taken away before
# the next. Prints each script's exit code and stdout as JSON.
_ANSWER_HELP = """
import contextlib, io, json, runpy, sys
from absl import flags
answers, paths, tools_folder = {}, json.loads(sys.argv[1]), sys.argv[2]
for path in paths:
  known_flags, known_modules, path_before = set(flags.FLAGS), set(sys.modules), list(sys.path)
  sys.argv, sys.path[0], out, code = [path, "--help"], path.rsplit("/", 1)[0], io.StringIO(), None
  try:
    with contextlib.redirect_stdout(out):
      runpy.run_path(path, run_name="__main__")
  except SystemExit as exit_:
    code = exit_.code
  for name in set(flags.FLAGS) - known_flags:
    delattr(flags.FLAGS, name)
  for name in set(sys.modules) - known_modules:
    if (getattr(sys.modules[name], "__file__", None) or "").startswith(tools_folder):
      del sys.modules[name]
  sys.path[:] = path_before
  answers[path] = [code, out.getvalue()]
print(json.dumps(answers))
"""


@pytest.mark.slow
def test_every_tool_answers_help_with_its_usage_and_exit_0():
  assert TOOLS
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  run = subprocess.run([sys.executable, "-c", _ANSWER_HELP, json.dumps(TOOLS), str(REPO / "tools")],
                       cwd=REPO, env=env, capture_output=True, text=True, check=True, timeout=600)
  answers = json.loads(run.stdout.splitlines()[-1])
  assert sorted(answers) == TOOLS
  for path, (code, out) in answers.items():
    name = os.path.relpath(path, REPO)
    assert code == 0, f"{name}: exit {code}\n{out[-2000:]}"
    # Its usage: a flag's line, as absl's and argparse's help list them.
    assert any(line.lstrip().startswith(("--", "-h")) for line in out.splitlines()), (
        f"{name}: {out!r:.300}")
