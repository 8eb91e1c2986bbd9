"""The suite's own scheduling (conftest.py, pytest.ini): xdist's two workers each take whole test
files, so a file's module fixtures are made once, and the files sharing the TF1 references run
on one worker. Run on a copy of the suite's configuration with test files whose fixtures log the
process that made them."""

import collections
import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

TEST_FILE = '''
import os

import pytest



def _log(event):
  with open(os.environ["SCHEDULING_LOG"], "a") as f:
    f.write(f"{event} {__name__} {os.getpid()}\\n")


@pytest.fixture(scope="module")
def made_once():
  _log("setup")


@pytest.mark.parametrize("case", range(4))
def test_case(made_once, case):
  _log("run")
'''
FILES = ("test_reliability", "test_clip_norm", "test_tf1_checkpoint", "test_one", "test_two",
         "test_three")


def test_each_file_is_one_workers_and_its_module_fixtures_are_made_once(tmp_path):
  shutil.copy(REPO / "pytest.ini", tmp_path)
  tests = tmp_path / "tests"
  shutil.copytree(REPO / "tests" / "helpers", tests / "helpers")
  shutil.copy(REPO / "tests" / "conftest.py", tests)
  for name in FILES:
    (tests / f"{name}.py").write_text(TEST_FILE)
  log = tmp_path / "log"
  env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
  result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=tmp_path, env={**env, "SCHEDULING_LOG": str(log)},
                          capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stdout + result.stderr
  assert f"{4 * len(FILES)} passed" in result.stdout
  events = [line.split() for line in log.read_text().splitlines()]
  setups = collections.Counter(module for event, module, _ in events if event == "setup")
  assert setups == {name: 1 for name in FILES}
  workers = collections.defaultdict(set)
  for _, module, pid in events:
    workers[module].add(pid)
  assert all(len(pids) == 1 for pids in workers.values()), workers
  assert workers["test_clip_norm"] == workers["test_tf1_checkpoint"]
  assert len(set.union(*workers.values())) == 2
