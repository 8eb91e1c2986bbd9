"""What the test suite spends, counted from inside its processes (tools/dev/time_suite.py --census
puts this in place; it changes nothing the tests see).

As a pytest plugin (`-p suite_census`, this folder on the path) it charges each test file the CPU
seconds of its tests, their fixtures and the processes they waited for (getrusage of the process
and of its reaped children), session fixtures apart (charged once, to their own line), and leaves
one JSON file per pytest process in $SUITE_CENSUS_DIR. Started by the usercustomize that
time_suite writes (`watch_process`), it logs every Python process of the suite to the same
folder: its command line, whether it imported TensorFlow and the CPU seconds that took, the
PointerGenerator models it built, the tf.function traces it made and the CPU seconds they took.
"""

import atexit
import collections
import importlib.abc
import importlib.util
import json
import os
import resource
import sys
import threading
import time

CENSUS_DIR = "SUITE_CENSUS_DIR"


def process_cpu():
  """User + system CPU seconds of this process alone."""
  own = resource.getrusage(resource.RUSAGE_SELF)
  return own.ru_utime + own.ru_stime


def cpu_seconds():
  """User + system CPU seconds of this process and of the children it has waited for."""
  children = resource.getrusage(resource.RUSAGE_CHILDREN)
  return process_cpu() + children.ru_utime + children.ru_stime


# ----------------------------------------------------------------- every process: what it did


class _Log:
  """Appends `event` lines to this process's file: a process killed or ended by os._exit keeps
  what it logged until then."""

  def __init__(self, directory):
    self.path = os.path.join(directory, f"process-{os.getpid()}.log")

  def __call__(self, event):
    with open(self.path, "a", encoding="utf-8") as f:
      f.write(event + "\n")


class _AfterImport(importlib.abc.MetaPathFinder):
  """Calls patch(module) once `name` has been imported (run once, then out of the way)."""

  def __init__(self, patches):
    self.patches = dict(patches)

  def find_spec(self, name, path, target=None):
    if name not in self.patches:
      return None
    patch = self.patches.pop(name)
    sys.meta_path.remove(self)
    try:
      spec = importlib.util.find_spec(name)
    finally:
      if self.patches:
        sys.meta_path.insert(0, self)
    exec_module = spec.loader.exec_module

    def exec_and_patch(module):
      exec_module(module)
      patch(module)

    spec.loader.exec_module = exec_and_patch
    return spec


def watch_process():
  """Logs this process (when $SUITE_CENSUS_DIR is set): `start <argv>`; `tensorflow <CPU s>` and
  `imported <CPU s>` (its CPU seconds so far) when its import of TensorFlow starts and ends;
  `model` for each PointerGenerator built; `trace <name> <CPU s>` for each tf.function trace
  (0 for one inside another); `cpu <CPU s>` at exit."""
  directory = os.environ.get(CENSUS_DIR)
  if not directory:
    return
  log = _Log(directory)
  try:  # sys.argv is not yet set (`-m` for `-m module`) when this runs
    with open("/proc/self/cmdline", "rb") as f:
      argv = [a.decode(errors="replace") for a in f.read().split(b"\0")[1:-1]]
  except OSError:
    argv = list(getattr(sys, "argv", []))
  log("start " + json.dumps(argv))
  imported = []

  def on_import(event, args):
    if event == "import" and args[0] == "tensorflow" and not imported:
      imported.append(True)
      log(f"tensorflow {process_cpu():.3f}")

  sys.addaudithook(on_import)

  def at_exit():
    log(f"cpu {process_cpu():.3f}")

  atexit.register(at_exit)

  def imported_tensorflow(module):
    del module
    log(f"imported {process_cpu():.3f}")

  depth = threading.local()

  def count_traces(module):
    create = module._create_concrete_function  # pylint: disable=protected-access

    def counted(function_type, type_context, func_graph, tracing_options):
      # The CPU seconds of the outermost trace on this thread: those of the traces it makes
      # inside it are already in them.
      outer = not getattr(depth, "n", 0)
      depth.n = getattr(depth, "n", 0) + 1
      start = time.thread_time()
      try:
        return create(function_type, type_context, func_graph, tracing_options)
      finally:
        depth.n -= 1
        log(f"trace {tracing_options.name} {time.thread_time() - start if outer else 0.0:.4f}")

    module._create_concrete_function = counted  # pylint: disable=protected-access

  def count_models(module):
    init = module.PointerGenerator.__init__

    def counted(self, *args, **kwargs):
      log("model")
      init(self, *args, **kwargs)

    module.PointerGenerator.__init__ = counted

  sys.meta_path.insert(0, _AfterImport({
      "tensorflow": imported_tensorflow,
      "tensorflow.python.eager.polymorphic_function.tracing_compilation": count_traces,
      "pointer_gen.model.pointer_generator": count_models}))


def read_processes(directory):
  """[{"argv", "tensorflow", "import_cpu", "models", "traces", "trace_cpu", "cpu"}] of each
  process logged in `directory`: whether it imported TensorFlow and the CPU seconds that import
  took, the models it built, its traces and the CPU seconds of their outermost ones, and its
  own CPU seconds at exit (None if it never got there: killed, or ended by os._exit)."""
  processes = []
  for name in sorted(os.listdir(directory)):
    if not name.startswith("process-"):
      continue
    with open(os.path.join(directory, name), encoding="utf-8") as f:
      lines = f.read().splitlines()
    argv = json.loads(lines[0].removeprefix("start ")) if lines else []
    cpu = [float(line.split()[1]) for line in lines if line.startswith("cpu ")]
    started = [float(line.split()[1]) for line in lines if line.startswith("tensorflow ")]
    ended = [float(line.split()[1]) for line in lines if line.startswith("imported ")]
    traces = [line.split() for line in lines if line.startswith("trace ")]
    processes.append({"argv": argv, "tensorflow": bool(started),
                      "import_cpu": ended[0] - started[0] if started and ended else 0.0,
                      "models": lines.count("model"), "traces": len(traces),
                      "trace_cpu": sum((float(t[2]) for t in traces), 0.0),
                      "cpu": cpu[0] if cpu else None})
  return processes


# ---------------------------------------------------------- the pytest plugin: CPU per file


class _Costs:

  def __init__(self):
    self.files = collections.defaultdict(float)
    self.tests = collections.defaultdict(float)
    self.fixtures = collections.defaultdict(float)
    self.outcomes = collections.defaultdict(collections.Counter)
    self.session_fixture_cpu = 0.0
    self.controller = False
    self.start = time.monotonic()


_COSTS = _Costs()


def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
  before, fixtures_before = cpu_seconds(), _COSTS.session_fixture_cpu
  yield
  spent = cpu_seconds() - before - (_COSTS.session_fixture_cpu - fixtures_before)
  _COSTS.files[item.path.name] += spent
  _COSTS.tests[item.nodeid] += spent


pytest_runtest_protocol.hookwrapper = True


def pytest_fixture_setup(fixturedef, request):  # pylint: disable=unused-argument
  before = cpu_seconds()
  yield
  if fixturedef.scope == "session":
    spent = cpu_seconds() - before
    _COSTS.session_fixture_cpu += spent
    _COSTS.fixtures[fixturedef.argname] += spent


pytest_fixture_setup.hookwrapper = True


def pytest_configure(config):
  # xdist's controller: its workers are its children, and count as themselves.
  _COSTS.controller = bool(getattr(config.option, "numprocesses", 0)
                           and not hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):
  if not _COSTS.controller and (report.when == "call" or report.outcome != "passed"):
    _COSTS.outcomes[report.fspath.rsplit("/", 1)[-1]][report.outcome] += 1


def pytest_sessionfinish(session):  # pylint: disable=unused-argument
  directory = os.environ.get(CENSUS_DIR)
  if not directory:
    return
  attributed = sum(_COSTS.files.values()) + sum(_COSTS.fixtures.values())
  if _COSTS.controller:
    attributed = cpu_seconds() - process_cpu()
  with open(os.path.join(directory, f"pytest-{os.getpid()}.json"), "w", encoding="utf-8") as f:
    json.dump({"files": _COSTS.files, "tests": _COSTS.tests, "session_fixtures": _COSTS.fixtures,
               "outcomes": _COSTS.outcomes, "wall": time.monotonic() - _COSTS.start,
               "outside_tests": cpu_seconds() - attributed}, f)


def read_pytest(directory):
  """The per-file and per-test CPU seconds (a test's, its module fixtures' when it came first
  in its module), session fixtures' CPU seconds, outcomes and CPU seconds outside
  any test (start-up, collection) summed over the pytest processes logged in `directory`, and
  of each process that ran tests (an xdist worker) its wall seconds, files and CPU seconds."""
  files, tests, fixtures, outside = (collections.Counter(), collections.Counter(),
                                     collections.Counter(), 0.0)
  outcomes, workers = collections.defaultdict(collections.Counter), []
  for name in sorted(os.listdir(directory)):
    if name.startswith("pytest-"):
      with open(os.path.join(directory, name), encoding="utf-8") as f:
        data = json.load(f)
      files.update(data["files"])
      tests.update(data["tests"])
      fixtures.update(data["session_fixtures"])
      outside += data["outside_tests"]
      for file_name, counts in data["outcomes"].items():
        outcomes[file_name].update(counts)
      if data["files"]:
        workers.append({"wall": data["wall"], "files": len(data["files"]),
                        "cpu": sum(data["files"].values()) + sum(
                            data["session_fixtures"].values())})
  return {"files": files, "tests": tests, "session_fixtures": fixtures, "outside_tests": outside,
          "outcomes": outcomes, "workers": workers}

