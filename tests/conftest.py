"""The fixtures: real data from ../shared (skipped without it, failing under CI=true), the demo
corpus and a tiny trained run made once for the session (by one of xdist's workers, read by the
other), the TF1 references made once, and a temporary directory of each test's own; and the
order in which xdist's workers take the test files. Shared functions are in `helpers`."""

import collections
import fcntl
import gc
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

from pointer_gen.base import environment

# The tests run the library as the command line runs it (importing the package chooses nothing).
environment.choose_cpu_settings()

from helpers import REPO, run_entry_point, run_tf1_references, tiny_flags

SHARED_DATA = REPO.parent / "shared" / "data"
VIETNEWS = SHARED_DATA / "vietnews_bin"
BBC = SHARED_DATA / "bbc_news_summary"
CSL_TITLES = SHARED_DATA / "csl_titles"
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


# The test files xdist's two workers take first, longest first: each worker takes a test file
# (or TF1_REFERENCE_FILES together) at a time, in the order collected, and a long one taken last
# would keep one worker busy while the other has nothing left.
LONGEST_FIRST = ("test_reliability.py", "test_stopping.py", "test_serving_loaders.py",
                 "test_recipe.py", "test_precision.py", "test_export.py", "test_tf1_checkpoint.py",
                 "test_clip_norm.py", "test_distribute.py", "test_raw_text.py", "test_ptb.py",
                 "test_run_record.py", "test_evaluate.py")

# The test files that, run as a script, write a reference computed by TF1's graph code; they
# share the session fixture tf1_references, so one worker runs them all.
TF1_REFERENCE_FILES = ("test_clip_norm.py", "test_tf1_checkpoint.py")


def worker_unit(nodeid):
  """The unit of tests one xdist worker takes at a time: the test's file, whose module fixtures
  are then made once, or "tf1_reference" for TF1_REFERENCE_FILES."""
  name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
  return "tf1_reference" if name in TF1_REFERENCE_FILES else name


def pytest_xdist_make_scheduler(config, log):
  """xdist's scheduling by scope, with worker_unit as the scope. Not xdist's own `loadgroup`:
  it marks a group by renaming each test's node id, which pytest 9 no longer lets it do, and
  then sends the tests one by one, each module fixture made on both workers and a long file
  split between them."""
  from xdist.scheduler import LoadScopeScheduling  # pylint: disable=g-import-not-at-top

  class FileScheduling(LoadScopeScheduling):

    def _split_scope(self, nodeid):
      return worker_unit(nodeid)

  return FileScheduling(config, log)


# The marker of the costly tests: those that start real processes (the command line signalled,
# killed or side by side, workers, exports loaded in fresh interpreters, tools run as scripts),
# those that export (build the export's serving module, whose signatures trace the whole
# tokenise-search-detokenise graph, or write a SavedModel), those that run the modes end to end
# (a second mode run to its end in one test or fixture: trained then decoded, resumed, decoded
# twice to compare) and those that train a model until it learns (over MAX_QUICK_STEPS training
# steps in one test or fixture). `-m "not slow"` is the quick tier run between edits: one mode
# at a time and the parts beneath it, on models trained a few steps. A test that does any of these without the marker fails, naming
# what it did, so the quick tier never does. Only the main thread's are the running test's: a
# module fixture's threads (test_reliability's `background`) run the processes of the slow tests
# selected beside it while other tests run.
SLOW = "slow"
MAX_QUICK_STEPS = 100
_RUNNING = {"item": None, "modes_run": 0, "steps": 0}
# Not a test's process: the standard library's platform module runs `uname -p` on first use.
_NOT_TESTS_PROCESSES = frozenset({"uname"})


class SlowInQuickTest(Exception):
  """A test not marked slow started a process, exported, ran a second mode to its end or
  trained over MAX_QUICK_STEPS steps."""


def _refuse_unless_slow(what):
  item = _RUNNING["item"]
  if (item is not None and item.get_closest_marker(SLOW) is None
      and threading.current_thread() is threading.main_thread()):
    raise SlowInQuickTest(f"{item.nodeid} {what} but is not marked @pytest.mark.{SLOW}")


def _guarded_process(execute_child):
  def execute(self, args, *rest, **kwargs):
    argv = [args] if isinstance(args, (str, bytes)) else list(args)
    if os.path.basename(os.fsdecode(argv[0])) not in _NOT_TESTS_PROCESSES:
      _refuse_unless_slow(f"starts a process ({' '.join(map(str, argv[:2]))})")
    return execute_child(self, args, *rest, **kwargs)
  return execute


def _guarded(function, what):
  def guarded(*args, **kwargs):
    _refuse_unless_slow(what)
    return function(*args, **kwargs)
  guarded.guarded = True
  return guarded


def _count(counter, most, what):
  """One more of `counter` in the running test's call or fixture: over `most`, `what` is refused
  unless the test is slow."""
  if threading.current_thread() is threading.main_thread():
    _RUNNING[counter] += 1
    if _RUNNING[counter] > most:
      _refuse_unless_slow(what)


def _counting_modes(run_settled):
  """api.run_settled, every mode's run under the command line and the API, counting the runs
  that end in the running test's call or fixture; the second is the end-to-end run."""
  def counted(hps, *args, **kwargs):
    result = run_settled(hps, *args, **kwargs)
    _count("modes_run", 1, f"runs a second mode to its end (--mode={hps.mode})")
    return result
  counted.guarded = True
  return counted


def _counting_steps(make_train_step):
  """train.make_train_step, whose steps are counted in the running test's call or fixture."""
  def make(*args, **kwargs):
    train_step = make_train_step(*args, **kwargs)
    def counted(*step_args, **step_kwargs):
      _count("steps", MAX_QUICK_STEPS, f"trains over {MAX_QUICK_STEPS} steps")
      return train_step(*step_args, **step_kwargs)
    return counted
  make.guarded = True
  return make


# pylint: disable-next=protected-access
subprocess.Popen._execute_child = _guarded_process(subprocess.Popen._execute_child)


def _guard_tensorflow_and_the_library():
  """Guards tf.saved_model.save, the export's serving module, the modes' runs and the training
  steps, once
  TensorFlow is imported (not at import: the controller process of xdist imports no
  TensorFlow, and the test modules import the library after it)."""
  tf = sys.modules.get("tensorflow")
  if tf is None or hasattr(tf.saved_model.save, "guarded"):
    return
  from pointer_gen import api  # pylint: disable=g-import-not-at-top
  from pointer_gen.inference import export  # pylint: disable=g-import-not-at-top
  from pointer_gen.training import train  # pylint: disable=g-import-not-at-top
  tf.saved_model.save = _guarded(tf.saved_model.save, "writes a SavedModel")
  export.ServingModule.__init__ = _guarded(export.ServingModule.__init__,
                                           "builds the export's serving module")
  api.run_settled = _counting_modes(api.run_settled)
  train.make_train_step = _counting_steps(train.make_train_step)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
  """The test whose setup, call or teardown runs now (fixtures it makes included), for the
  guards."""
  del nextitem
  _guard_tensorflow_and_the_library()
  _RUNNING["item"] = item
  try:
    return (yield)
  finally:
    _RUNNING["item"] = None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
  """A fixture's mode runs and steps are counted apart from the test's and from the fixtures it
  uses."""
  del fixturedef, request
  outer = _RUNNING["modes_run"], _RUNNING["steps"]
  _RUNNING["modes_run"] = _RUNNING["steps"] = 0
  try:
    return (yield)
  finally:
    _RUNNING["modes_run"], _RUNNING["steps"] = outer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
  del item
  _RUNNING["modes_run"] = _RUNNING["steps"] = 0
  return (yield)


def pytest_collection_finish(session):
  """What collection imported (TensorFlow, Keras, the tests: some 390,000 objects) lives as
  long as the process. Frozen, it is left out of the full garbage collections that tracing's
  garbage sets off, which otherwise walk it every time."""
  del session
  gc.freeze()


def pytest_collection_modifyitems(items):
  """LONGEST_FIRST's files first, the others after them in the order they were collected."""
  rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_terminal_summary(terminalreporter):
  """One line per reason tests were skipped (a missing data folder, a program not installed)
  with the number of tests skipped for it: `pytest -q` alone does not say why."""
  reasons = collections.Counter(
      report.longrepr[2].removeprefix("Skipped: ")
      for report in terminalreporter.stats.get("skipped", [])
      if isinstance(report.longrepr, tuple))
  for reason, count in reasons.items():
    terminalreporter.write_line(f"{count} tests skipped: {reason}")


@pytest.fixture(scope="session")
def vietnews():
  return _real_data(VIETNEWS)


@pytest.fixture(scope="session")
def bbc():
  return _real_data(BBC)


@pytest.fixture(scope="session")
def csl_titles():
  return _real_data(CSL_TITLES)


@pytest.fixture(scope="session")
def ptb_oracle():
  return _real_data(PTB_ORACLE)


def _made_once(tmp_path_factory, name, make):
  """What `make(directory)` returned (a JSON value), made once for the whole session: xdist's
  workers share the folder above their base temporary directories, and the first to come makes
  it there while the others wait on a lock, then read what it wrote. Without xdist, in this
  process's own base temporary directory."""
  if not os.environ.get("PYTEST_XDIST_WORKER"):
    return make(tmp_path_factory.mktemp(name))
  root = tmp_path_factory.getbasetemp().parent
  with open(root / f"{name}.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    made = root / f"{name}.json"
    if not made.exists():
      directory = root / name
      shutil.rmtree(directory, ignore_errors=True)  # what a worker that failed left
      directory.mkdir()
      made.write_text(json.dumps(make(directory)), encoding="utf-8")
    return json.loads(made.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory):
  """The demo corpus (demo_data.ensure_demo_corpus), generated once for the session: {"dir",
  "train", "val", "test", "vocab"}. Read only: a test that writes beside it copies it first."""
  from pointer_gen.data import demo as demo_data  # pylint: disable=g-import-not-at-top

  def make(directory):
    directory = directory / "demo_data"
    return {"dir": str(directory), **demo_data.ensure_demo_corpus(str(directory))}

  corpus = _made_once(tmp_path_factory, "corpus", make)
  return {**corpus, "dir": pathlib.Path(corpus["dir"])}


TINY_RUN_STEPS = 4


@pytest.fixture(scope="session")
def tiny_run(demo_corpus, tmp_path_factory):
  """The run directory (`run`: run_config.json, train/model.ckpt-4) of a helpers.TINY_RUN
  trained TINY_RUN_STEPS steps on the demo corpus by the entry point, made once for the
  session. Read only: a test that trains, evaluates or decodes it works on a copy
  (shutil.copytree)."""

  def make(root):
    code = run_entry_point(f"--data_path={demo_corpus['train']}",
                           f"--vocab_path={demo_corpus['vocab']}", f"--log_root={root}",
                           *tiny_flags(num_train_steps=TINY_RUN_STEPS, checkpoint_secs=1000))
    assert code == 0
    return str(root / "run")

  return pathlib.Path(_made_once(tmp_path_factory, "tiny_run", make))


@pytest.fixture(scope="session")
def tf1_references(tmp_path_factory):
  """{file name without .py: (its directory, the arrays of its reference.npz)} of each of
  TF1_REFERENCE_FILES, written once in one process (helpers.run_tf1_references). Read only: a
  test may add files of its own names there. Its users run on one worker (worker_unit)."""
  return run_tf1_references([next((REPO / "tests").rglob(name)) for name in TF1_REFERENCE_FILES],
                            tmp_path_factory.mktemp("tf1"))


@pytest.fixture(scope="session", autouse=True)
def _session_tmpdir(tmp_path_factory):
  """Processes started by module- and session-scoped fixtures get a temporary directory (TMPDIR)
  inside the session's: one that is killed leaves its files there, not in the machine's /tmp."""
  tempfile.gettempdir()  # cached before TMPDIR changes: this process keeps its own
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmpdir")))
    yield


@pytest.fixture(autouse=True)
def _test_tmpdir(_session_tmpdir, tmp_path_factory, monkeypatch):
  """Each test's processes get a temporary directory of their own (as _session_tmpdir)."""
  monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("tmpdir")))
