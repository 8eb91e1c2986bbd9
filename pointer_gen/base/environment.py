"""The process's TensorFlow settings: the CPU allocator and XLA's CPU vector width, which the
command line chooses at its start (`choose_cpu_settings`; importing the package changes no
process-wide setting, and a Python caller makes the same choice by calling it), and the graph
optimiser's and debugging options and what of TensorFlow's own logging the run's log leaves
out, which every mode sets before building anything."""

import logging
import os


def choose_cpu_settings():
  """The command line's choices for the whole process, made through its environment: the BFC
  CPU allocator and XLA's widest CPU vectors (each: unless the environment already says
  otherwise). Their measured effect is in docs/performance.md; a notebook calls this once,
  before its first training step, for the command line's speed."""
  choose_allocator()
  choose_xla_vector_width()


def choose_allocator():
  """TensorFlow's default CPU allocator maps fresh pages for every large temporary; its BFC
  allocator reuses them, which makes a training step much faster (docs/performance.md).
  TensorFlow reads this when it first allocates, so setting it works even after
  `import tensorflow`; an explicit setting in the environment wins."""
  os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")


# XLA's CPU code generator's preferred vector width, in bits, unless XLA_FLAGS names one.
XLA_VECTOR_WIDTH_FLAG = "--xla_cpu_prefer_vector_width"
XLA_VECTOR_WIDTH = 512


def choose_xla_vector_width():
  """XLA's CPU code generator uses 256-bit vectors by default, also where the CPU has 512-bit
  ones; the compiled attention scores (tanh over every article position, beam and unit) run
  faster with 512 (docs/performance.md), and a CPU without them gets its own widest. XLA reads
  XLA_FLAGS when it first compiles, so setting it works even after `import tensorflow`; a
  width already in XLA_FLAGS wins. It changes only how XLA's CPU kernels are vectorised, not a
  GPU's or TPU's code."""
  flags = os.environ.get("XLA_FLAGS", "")
  if XLA_VECTOR_WIDTH_FLAG not in flags:
    os.environ["XLA_FLAGS"] = f"{flags} {XLA_VECTOR_WIDTH_FLAG}={XLA_VECTOR_WIDTH}".strip()


class TensorFlowChatter(logging.Filter):
  """Leaves out the INFO lines TensorFlow's Python code logs through absl, as the run's own
  are: "Sharding callback duration" at every checkpoint save, "Function `summarize` contains
  input name(s) ..." at every export. The run's log holds its own lines; TensorFlow's warnings
  and errors still pass."""

  def __init__(self, package_dir):
    super().__init__()
    self.package_dir = os.path.join(package_dir, "")

  def filter(self, record):
    return record.levelno > logging.INFO or not record.pathname.startswith(self.package_dir)


def configure_tensorflow(debug=False):
  """Process-wide settings every mode needs; call before building anything. `debug`
  (--debug): functions run eagerly and every op's output is checked for NaN and infinity."""
  # Imported here, not with the module: importing the package (which chooses the allocator)
  # must not import TensorFlow, which takes seconds; the entry point installs its signal
  # handlers before that import.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  # Grappler's memory optimiser crashes on the first full-size gradient step of a model whose
  # decoder is a tf.while_loop (AlreadyExistsError on a TemporaryVariableOp); a tiny model does
  # not show it.
  # Turning off only that optimiser keeps the others, which is faster and uses less memory than
  # disabling Grappler (docs/performance.md).
  tf.config.optimizer.set_experimental_options({"memory_optimization": False})
  absl_logger = logging.getLogger("absl")
  if not any(isinstance(f, TensorFlowChatter) for f in absl_logger.filters):
    absl_logger.addFilter(TensorFlowChatter(os.path.dirname(tf.__file__)))
  if debug:
    tf.config.run_functions_eagerly(True)
    tf.debugging.enable_check_numerics()
