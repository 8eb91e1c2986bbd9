"""Every tool in tools/ and tools/dev/ answers --help as `python -m pointer_gen.run --help` does:
its usage on stdout, exit 0 (absl's own --help exits 1, as a failure would)."""

import os
import subprocess
import sys

import pytest

from helpers import REPO

# The scripts: the modules of those folders that run as one (the others are modules the scripts
# import, with no command line).
TOOLS = sorted(path for folder in (REPO / "tools", REPO / "tools" / "dev")
               for path in folder.glob("*.py")
               if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_tool_answers_help_with_its_usage_and_exit_0():
  assert TOOLS
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  # Started together: each pays the imports of TensorFlow while the others do.
  started = {path: subprocess.Popen([sys.executable, str(path), "--help"], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for path in TOOLS}
  for path, process in started.items():
    out, err = process.communicate(timeout=600)
    name = path.relative_to(REPO)
    assert process.returncode == 0, f"{name}: exit {process.returncode}\n{err[-2000:]}"
    # Its usage: a flag's line, as absl's and argparse's help list them.
    assert any(line.lstrip().startswith(("--", "-h")) for line in out.splitlines()), (
        f"{name}: {out!r:.300}")
