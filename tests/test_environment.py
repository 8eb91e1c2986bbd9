"""The process settings `import pointer_gen` makes: XLA's CPU vector width unless the user set
one (the allocator's choice is os.environ.setdefault)."""

import os

import pytest

from pointer_gen import environment


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
