"""The fixtures: real data from ../shared (skipped without it, failing under CI=true) and a
temporary directory of each test's own. Shared functions are in `helpers`."""

import collections
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

from helpers import REPO

SHARED_DATA = REPO.parent / "shared" / "data"
VIETNEWS = SHARED_DATA / "vietnews_bin"
BBC = SHARED_DATA / "bbc_news_summary"
PTB_ORACLE = SHARED_DATA / "ptb_oracle"


_NO_REAL_DATA = "real data expected at"


def _real_data(path):
  """`path` if it exists. Otherwise the test is skipped, naming what is missing (the whole
  shared/data folder if it is absent, one message for every such test), or fails under CI=true,
  where the data must be there."""
  if path.is_dir():
    return path
  missing = SHARED_DATA if not SHARED_DATA.is_dir() else path
  message = f"{_NO_REAL_DATA} {missing} (the shared/ folder beside the repository)"
  if os.environ.get("CI", "").lower() == "true":
    pytest.fail(message)
  pytest.skip(f"{message}; not found, skipped (CI=true fails instead)")


def pytest_terminal_summary(terminalreporter):
  """One line per missing data folder with the number of tests skipped for it: `pytest -q`
  alone does not say why tests were skipped."""
  reasons = collections.Counter(
      report.longrepr[2].removeprefix("Skipped: ")
      for report in terminalreporter.stats.get("skipped", [])
      if isinstance(report.longrepr, tuple) and _NO_REAL_DATA in report.longrepr[2])
  for reason, count in reasons.items():
    terminalreporter.write_line(f"{count} tests skipped: {reason}")


@pytest.fixture(scope="session")
def vietnews():
  return _real_data(VIETNEWS)


@pytest.fixture(scope="session")
def bbc():
  return _real_data(BBC)


@pytest.fixture(scope="session")
def ptb_oracle():
  return _real_data(PTB_ORACLE)


@pytest.fixture(scope="session", autouse=True)
def _session_tmpdir(tmp_path_factory):
  """Processes started by module- and session-scoped fixtures get a temporary directory (TMPDIR)
  inside the session's: one that is killed leaves its files there (TensorFlow's autograph writes
  one per converted function), not in the machine's /tmp."""
  tempfile.gettempdir()  # cached before TMPDIR changes: this process keeps its own
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmpdir")))
    yield


@pytest.fixture(autouse=True)
def _test_tmpdir(_session_tmpdir, tmp_path_factory, monkeypatch):
  """Each test's processes get a temporary directory of their own (as _session_tmpdir)."""
  monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmpdir")))
