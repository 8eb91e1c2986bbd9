"""The process settings the command line makes (environment.choose_cpu_settings): XLA's CPU
vector width unless the user set one (the allocator's choice is os.environ.setdefault); and
that importing the package makes none."""

import json
import os
import subprocess
import sys

import pytest

import pointer_gen
from pointer_gen.base import environment


@pytest.mark.parametrize("given,want", [
    (None, "--xla_cpu_prefer_vector_width=512"),
    ("--xla_dump_to=/tmp/x", "--xla_dump_to=/tmp/x --xla_cpu_prefer_vector_width=512"),
    ("--xla_cpu_prefer_vector_width=256", "--xla_cpu_prefer_vector_width=256")])
def test_xla_vector_width_is_added_unless_given(given, want, monkeypatch):
  if given is None:
    monkeypatch.delenv("XLA_FLAGS", raising=False)
  else:
    monkeypatch.setenv("XLA_FLAGS", given)
  environment.choose_xla_vector_width()
  assert os.environ["XLA_FLAGS"] == want


@pytest.mark.slow
def test_importing_the_package_and_its_api_names_leaves_the_environment_alone():
  program = ("import json, os, sys\n"
             "before = dict(os.environ)\n"
             "import pointer_gen\n"
             "names = [pointer_gen.__version__, *pointer_gen.__all__]\n"
             "json.dump({'same': dict(os.environ) == before, 'tensorflow': 'tensorflow' in "
             "sys.modules, 'names': names}, sys.stdout)")
  env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "TF_CPU_ALLOCATOR_USE_BFC")}
  done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True,
                        check=True)
  result = json.loads(done.stdout)
  assert result == {"same": True, "tensorflow": False,
                    "names": [pointer_gen.__version__, *pointer_gen.__all__]}
  assert {"fit", "load", "Summarizer", "Summary"} <= set(result["names"])


def test_the_command_line_makes_both_choices(monkeypatch):
  monkeypatch.delenv("XLA_FLAGS", raising=False)
  monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
  environment.choose_cpu_settings()
  assert os.environ["TF_CPU_ALLOCATOR_USE_BFC"] == "true"
  assert os.environ["XLA_FLAGS"] == "--xla_cpu_prefer_vector_width=512"
