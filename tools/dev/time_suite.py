"""How long the README's test command takes: times it in two checkouts in interleaved rounds, the
order of the two alternated each round (tools/dev/interleaved.py), and compares their results.

    python tools/dev/time_suite.py --base=../old_checkout [--new=.] [--rounds=2] [--census]

Each round runs `python -m pytest -q tests` in each checkout (its working directory, so that it
imports its own pointer_gen and reads its own pytest.ini) and records the wall seconds and the
CPU seconds (user + system) of the pytest process and of every process it and its children
waited for, and the counts of the summary line (passed, failed, skipped, errors). Prints each
figure's median, min and max per tree, the new/base ratio of each round, and whether every round
of both trees passed the same number of tests.

With --census, one more run of each tree, after the timed rounds, counts what its time goes to
(tools/dev/suite_census.py): the CPU seconds of each test file and session fixture, the Python
processes started (those that imported TensorFlow, by program), the PointerGenerator models
built and the tf.function traces made. Run it alone: nothing else should use the CPU.
"""

import collections
import json
import os
import pathlib
import re
import resource
import subprocess
import sys
import tempfile
import time

from absl import flags

import interleaved
import suite_census
from pointer_gen import usage

TOOLS = pathlib.Path(__file__).resolve().parent
REPO = TOOLS.parents[1]
COMMAND = ("-m", "pytest", "-q", "tests")  # the README's test command, after `python`
TOP_TESTS = 40
COUNTS = ("passed", "failed", "skipped", "errors")

FLAGS = flags.FLAGS
flags.DEFINE_string("base", None, "The checkout to compare against.", required=True)
flags.DEFINE_string("new", str(REPO), "The checkout with the change.")
flags.DEFINE_integer("rounds", 2, "Rounds; each runs both trees, in alternating order.")
flags.DEFINE_string("python", sys.executable, "The interpreter both trees run with.")
flags.DEFINE_boolean("census", False, "After the rounds, one run of each tree that counts where "
                     "its time goes (CPU seconds per test file, processes, models, traces).")
flags.DEFINE_string("output_dir", "", "Where each run's output goes (default: a temporary "
                    "directory).")


def _children_cpu():
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def _counts(output):
  """{passed, failed, skipped, errors: n} of pytest's summary line in `output`."""
  lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
  found = dict.fromkeys(COUNTS, 0)
  for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", lines[-1] if lines
                                 else ""):
    found["errors" if word.startswith("error") else word] = int(number)
  return found


def run_suite(tree, log_path, extra_args=(), env=None):
  """{wall seconds, CPU seconds, the summary's counts} of the test command in `tree`, its output
  in `log_path`."""
  cpu, start = _children_cpu(), time.monotonic()
  with open(log_path, "w", encoding="utf-8") as log:
    subprocess.run([FLAGS.python, *COMMAND[:3], *extra_args, *COMMAND[3:]], cwd=tree,
                   env=env or os.environ, stdout=log, stderr=subprocess.STDOUT, check=False)
  wall, cpu = time.monotonic() - start, _children_cpu() - cpu
  return {"wall seconds": wall, "CPU seconds": cpu,
          **_counts(pathlib.Path(log_path).read_text(encoding="utf-8"))}


def _census(tree, log_dir, name):
  """One run of the test command in `tree` with tools/dev/suite_census.py in every process: its
  figures, per file and per process kind."""
  census_dir = pathlib.Path(log_dir) / f"census_{name}"
  user_site = pathlib.Path(log_dir) / f"user_base_{name}"
  site_packages = pathlib.Path(
      subprocess.run([FLAGS.python, "-c", "import site; print(site.getusersitepackages())"],
                     env=dict(os.environ, PYTHONUSERBASE=str(user_site)), capture_output=True,
                     text=True, check=True).stdout.strip())
  site_packages.mkdir(parents=True, exist_ok=True)
  census_dir.mkdir(parents=True, exist_ok=True)
  # Every Python process of the suite, whatever PYTHONPATH its parent gives it, runs the
  # usercustomize of PYTHONUSERBASE.
  (site_packages / "usercustomize.py").write_text(
      "import importlib.util\n"
      "_spec = importlib.util.spec_from_file_location(\n"
      f"    'suite_census', {str(TOOLS / 'suite_census.py')!r})\n"
      "_census = importlib.util.module_from_spec(_spec)\n"
      "_spec.loader.exec_module(_census)\n"
      "_census.watch_process()\n")
  env = dict(os.environ, PYTHONUSERBASE=str(user_site), SUITE_CENSUS_DIR=str(census_dir),
             PYTHONPATH=os.pathsep.join(filter(None, [str(TOOLS), os.environ.get("PYTHONPATH")])))
  figures = run_suite(tree, pathlib.Path(log_dir) / f"census_{name}.log",
                      ("-p", "suite_census"), env)
  return {"run": figures, "pytest": suite_census.read_pytest(census_dir),
          "processes": suite_census.read_processes(census_dir)}


def _program(argv):
  """What a process ran, briefly: `-m module`, a script's name, or `-c` (an inline program)."""
  i = 0
  while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-c", "-m"):
    i += 2 if argv[i] in ("-X", "-W") else 1  # the interpreter's own options
  if i == len(argv):
    return "?"
  if argv[i] == "-c":
    return "-c (an xdist worker or a test's inline program)"
  if argv[i] == "-m":
    return "-m " + (argv[i + 1] if i + 1 < len(argv) else "")
  return os.path.basename(argv[i])


def _print_census(census):
  for name, result in census.items():
    pytest_costs, processes = result["pytest"], result["processes"]
    print(f"\n{name}: census run, {result['run']['wall seconds']:.0f} s wall, "
          f"{result['run']['CPU seconds']:.0f} CPU s; CPU seconds per test file (its tests, "
          "module fixtures and the processes they waited for):")
    for file_name, seconds in pytest_costs["files"].most_common():
      outcomes = ", ".join(f"{n} {o}" for o, n in sorted(pytest_costs["outcomes"][file_name]
                                                        .items()))
      print(f"  {file_name}: {seconds:.1f} ({outcomes})")
    print(f"  the {TOP_TESTS} costliest tests (with the module fixtures made for them):")
    for node_id, seconds in pytest_costs["tests"].most_common(TOP_TESTS):
      print(f"    {node_id}: {seconds:.1f}")
    for fixture, seconds in pytest_costs["session_fixtures"].most_common():
      print(f"  session fixture {fixture}: {seconds:.1f}")
    print(f"  outside tests (start-up, collection, xdist): {pytest_costs['outside_tests']:.1f}")
    last = max((w["wall"] for w in pytest_costs["workers"]), default=0.0)
    for worker in pytest_costs["workers"]:
      print(f"  a worker: {worker['files']} files, {worker['cpu']:.1f} CPU-s in them, done "
            f"{last - worker['wall']:.0f} s before the last")
    kinds = collections.defaultdict(lambda: collections.Counter())
    for process in processes:
      kind = kinds[_program(process["argv"])]
      kind["processes"] += 1
      kind["with TensorFlow"] += process["tensorflow"]
      kind["models"] += process["models"]
      kind["traces"] += process["traces"]
      kind["CPU-s importing TensorFlow"] += process["import_cpu"]
      kind["CPU-s tracing"] += process["trace_cpu"]
      kind["own CPU-s (of those that exited)"] += process["cpu"] or 0.0
    total = collections.Counter()
    for kind in kinds.values():
      total.update(kind)
    print(f"  {total['processes']} Python processes, {total['with TensorFlow']} importing "
          f"TensorFlow ({total['CPU-s importing TensorFlow']:.1f} CPU-s); {total['models']} "
          f"PointerGenerator models built, {total['traces']} tf.function traces "
          f"({total['CPU-s tracing']:.1f} CPU-s); by program:")
    for program, kind in sorted(kinds.items(), key=lambda item: -item[1]["processes"]):
      print(f"    {program}: " + ", ".join(
          f"{v:.1f} {k}" if isinstance(v, float) else f"{v} {k}" for k, v in kind.items()))


def main(argv):
  del argv
  log_dir = FLAGS.output_dir or tempfile.mkdtemp(prefix="time_suite_")
  os.makedirs(log_dir, exist_ok=True)
  trees = {"base": os.path.abspath(FLAGS.base), "new": os.path.abspath(FLAGS.new)}
  figures = {name: collections.defaultdict(list) for name in trees}
  for round_index in range(FLAGS.rounds):
    for name in interleaved.order(round_index):
      result = run_suite(trees[name], os.path.join(log_dir, f"round{round_index + 1}_{name}.log"))
      print(f"round {round_index + 1} {name}: " + json.dumps(
          {k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}),
            flush=True)
      for key, value in result.items():
        figures[name][key].append(value)
  print(f"CPU: {interleaved.cpu()}; {FLAGS.rounds} rounds, order alternated; logs in {log_dir}")
  timed = {name: {k: figures[name][k] for k in ("wall seconds", "CPU seconds")} for name in trees}
  print("\n".join(interleaved.summary(timed, digits=1)))
  outcomes = {name: {tuple(figures[name][k][i] for k in COUNTS) for i in range(FLAGS.rounds)}
              for name in trees}
  for name in trees:
    print(f"{name}: " + "; ".join(", ".join(f"{n} {k}" for n, k in zip(counts, COUNTS))
                                  for counts in sorted(outcomes[name])))
  print("same outcome in every run of both trees" if len(outcomes["base"] | outcomes["new"]) == 1
        else "the outcomes differ between runs or trees (see above)")
  if FLAGS.census:
    _print_census({name: _census(tree, log_dir, name) for name, tree in trees.items()})


if __name__ == "__main__":
  usage.run_tool(main)
