"""Entry point: `python -m pointer_gen.run --mode=train|eval|decode|export [flags]`."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pointer_gen.base import environment  # neither imports TensorFlow
from pointer_gen.base import stopping

if __name__ == "__main__":
  # Before TensorFlow's import, which takes seconds: Ctrl-C or SIGTERM stops cleanly from the
  # first moment (stopping.py).
  stopping.install()
  # The command line's process-wide choices (the Python API leaves them to its caller:
  # environment.choose_cpu_settings).
  environment.choose_cpu_settings()

from absl import app
from absl import flags

from pointer_gen import api
from pointer_gen import config
from pointer_gen import usage
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import OutputError
from pointer_gen.formats import skips
from pointer_gen.inference import eval_samples
from pointer_gen.training import train

FLAGS = flags.FLAGS
config.define_flags()


def main(argv):
  if len(argv) > 1:
    _exit_with_error(f"unexpected arguments {' '.join(argv[1:])}: flags are written "
                     "--name=value")
  stopping.exit_if_requested()  # a signal while TensorFlow was being imported
  try:
    with skips.one_count_per_record():
      _run_mode()
  except (DataError, OutputError, train.NonFiniteError) as e:
    _exit_with_error(e)


def _exit_with_error(message):
  print(f"error: {message}", file=sys.stderr)
  sys.exit(1)


def _run_mode():
  """The checks of the flags, the vocab and the data, then the mode's run (api.run_settled, as
  the Python API's fit runs it)."""
  api.run_settled(config.HParams.from_flags(FLAGS), config.given_flags(FLAGS),
                  samples=eval_samples.Samples)
  stopping.exit_if_requested()


def parse_flags(argv):
  """absl's parsing, except that --help prints the project's flags grouped by mode (exit 0)
  and a flag absl cannot parse (unknown, a bad value or choice, a --flagfile it cannot read) is
  the one `error:` line of every bad input, not absl's FATAL one."""
  before_end = argv[1:argv.index("--")] if "--" in argv else argv[1:]
  if any(arg in usage.HELP_ARGS for arg in before_end):
    print(usage.help_text(FLAGS))
    sys.exit(0)
  try:
    return FLAGS(argv)
  except flags.CantOpenFlagFileError as e:
    _exit_with_error(f"--flagfile: {str(e).removeprefix('ERROR:: ')}")
  except flags.Error as e:
    # absl's "flag --mode=trian: value should be ...", written as the project's other errors.
    _exit_with_error(f"{str(e).removeprefix('flag ')} (--help lists the flags)")


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
