import os
import pathlib

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
