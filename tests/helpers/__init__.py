"""What the tests share besides fixtures (those are in conftest.py): the repository's path,
running the entry point and the tools in this process, and numpy forms of the model's
functions. The scripts beside this file run as subprocesses of the tests."""

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]

# The tiny model and run of the tests that train on the demo corpus: a run directory
# <log_root>/run, a step in tens of milliseconds.
TINY_RUN = {"exp_name": "run", "vocab_size": 519, "hidden_dim": 8, "emb_dim": 8, "batch_size": 4,
            "max_enc_steps": 40, "max_dec_steps": 10, "seed": 1}


# absl's Python log line: severity, date, time, thread id, then the source file's base name.
_ABSL_LINE = re.compile(r"^([DIWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ([^:\]]+):\d+\]")
_PROJECT_MODULES = frozenset(p.name for p in (REPO / "pointer_gen").rglob("*.py"))


def flag_help(field):
  """The help of a declared setting's flag (`field`, a settings.setting) as absl holds it: an
  enum flag's begins with its choices."""
  choices = field.metadata["choices"]
  return (f"<{'|'.join(choices)}>: " if choices else "") + field.metadata["help"]


def project_error_lines(stderr):
  """The lines of `stderr` that report an error of the project's own: tracebacks, the
  `error: ...` lines the entry point prints, and absl ERROR/FATAL lines logged from a
  `pointer_gen` module. TensorFlow's runtime prints its own notices (which differ between CPUs,
  builds and versions, and look like absl's lines but come from C++ files): they never count."""
  errors = []
  for line in stderr.splitlines():
    absl = _ABSL_LINE.match(line)
    if ("Traceback (most recent call last)" in line or line.startswith("error: ")
        or (absl and absl.group(1) in "EF" and absl.group(2) in _PROJECT_MODULES)):
      errors.append(line)
  return errors


def tool_path(name):
  """tools/<name>.py (the user's tools) or, failing that, tools/dev/<name>.py (the project's)."""
  path = REPO / "tools" / f"{name}.py"
  return path if path.exists() else REPO / "tools" / "dev" / f"{name}.py"


def load_tool(name):
  """Imports tool_path(name) once per test session (its absl flags can be defined only once)."""
  if name not in sys.modules:
    spec = importlib.util.spec_from_file_location(name, tool_path(name))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
  return sys.modules[name]


def run_main(capsys, *args):
  """(exit code, stdout, stderr) of `python -m pointer_gen.run *args`, run in this process:
  a subprocess would spend seconds importing TensorFlow."""
  code = run_entry_point(*args)
  out, err = capsys.readouterr()
  return code, out, err


def run_entry_point(*args):
  """The exit code of `python -m pointer_gen.run *args`, run in this process (run_main), its
  output left to pytest's capture."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from pointer_gen import run  # pylint: disable=g-import-not-at-top
  # run.main changes Grappler's options process-wide; the other tests keep theirs.
  options = tf.config.optimizer.get_experimental_options()
  flags.FLAGS.unparse_flags()
  flags.FLAGS(["run", *args])
  try:
    run.main(["run"])
    code = 0
  except SystemExit as e:
    code = e.code
  finally:
    flags.FLAGS.unparse_flags()
    tf.config.optimizer.set_experimental_options(options)
  return code


def tiny_hparams(corpus, log_root, **changes):
  """The HParams of a TINY_RUN (with `changes`) training on the demo corpus `corpus` (as
  demo_data.ensure_demo_corpus returns it) in `log_root`."""
  from pointer_gen import config  # pylint: disable=g-import-not-at-top
  return config.HParams(**{"data_path": corpus["train"], "vocab_path": corpus["vocab"],
                           "log_root": str(log_root), **TINY_RUN, **changes})


def tiny_flags(**changes):
  """The command-line flags of a TINY_RUN, with `changes`."""
  return [f"--{name}={value}" for name, value in {**TINY_RUN, **changes}.items()]


def settle(*args):
  """The HParams `python -m pointer_gen.run *args` would run with (settle.hparams), without
  running anything."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from pointer_gen import run  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from pointer_gen import settle as settle_lib  # pylint: disable=g-import-not-at-top
  flags.FLAGS.unparse_flags()
  flags.FLAGS(["run", *args])
  try:
    return settle_lib.hparams(flags.FLAGS)
  finally:
    flags.FLAGS.unparse_flags()


def run_tf1_references(scripts, out_dir):
  """Runs the test files `scripts` as the scripts that write TF1 references, all in one fresh
  process (helpers/tf1_references.py), each into a directory of its own under `out_dir`; returns
  {file name without .py: (that directory, the arrays of the reference.npz written there)}. The
  process has TF_USE_LEGACY_KERAS=1 (TF1's RNN cells live in tf_keras, which cannot share a
  process with Keras 3) and imports this checkout's pointer_gen."""
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
  result = subprocess.run(
      [sys.executable, str(REPO / "tests" / "helpers" / "tf1_references.py"), str(out_dir),
       *map(str, scripts)], env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-5000:]
  references = {}
  for script in scripts:
    directory = pathlib.Path(out_dir) / pathlib.Path(script).stem
    with np.load(directory / "reference.npz") as npz:
      references[directory.name] = directory, {k: npz[k] for k in npz.files}
  return references


def start_tool_runs(tool, argv_lists):
  """Starts `python tools/<tool> *argv` for each argv of argv_lists, all in one fresh process
  (helpers/tool_mains.py, which pays TensorFlow's import once); finish_tool_runs gives what
  each ended with."""
  return subprocess.Popen(
      [sys.executable, str(REPO / "tests" / "helpers" / "tool_mains.py"),
       str(REPO / "tools" / tool), json.dumps(argv_lists)],
      cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO)),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_tool_runs(process, timeout):
  """[(exit code, stdout, stderr)] of each run of a start_tool_runs process, once it exited 0."""
  out, err = process.communicate(timeout=timeout)
  assert process.returncode == 0, err[-3000:]
  return [tuple(result) for result in json.loads(out.splitlines()[-1])]


def np64(x):
  return np.asarray(x, np.float64)


def np_sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def np_softmax(x, axis=-1):
  x = x - x.max(axis=axis, keepdims=True)
  e = np.exp(x)
  return e / e.sum(axis=axis, keepdims=True)
