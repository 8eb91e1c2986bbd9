import importlib.util
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
VIETNEWS = SHARED_DATA / "vietnews_bin"
BBC = SHARED_DATA / "bbc_news_summary"


@pytest.fixture(scope="session")
def vietnews():
  if not VIETNEWS.is_dir():
    pytest.fail(f"real data expected at {VIETNEWS} (the shared/ folder beside the repository)")
  return VIETNEWS


@pytest.fixture(scope="session")
def bbc():
  if not BBC.is_dir():
    pytest.fail(f"real data expected at {BBC} (the shared/ folder beside the repository)")
  return BBC


def load_tool(name):
  """Imports tools/<name>.py once per test session (its absl flags can be defined only once)."""
  if name not in sys.modules:
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
  return sys.modules[name]
