"""`python -m pointer_gen.run --help` lists the project's flags grouped by mode, with defaults."""

import re

from absl import flags
import pytest

from pointer_gen import config
from pointer_gen import run
from pointer_gen import usage
from pointer_gen.base import settings
from pointer_gen.formats import registry as formats_registry
from pointer_gen.search import registry as search_registry
from pointer_gen.search.controls import registry as controls_registry


def _sections(text):
  """{heading: [flag name, ...]} from the help text's "Heading:" blocks."""
  sections, current = {}, None
  for line in text.splitlines():
    if line and not line.startswith(" ") and line.endswith(":"):
      current = sections.setdefault(line[:-1], [])
    elif current is not None and line.startswith("  --"):
      current.append(line.strip())
  return sections


def test_help_lists_flags_by_mode_with_defaults(capsys):
  with pytest.raises(SystemExit) as exit_info:
    run.parse_flags(["run", "--mode=decode", "--help"])
  assert exit_info.value.code == 0
  sections = _sections(capsys.readouterr().out)
  assert "--beam_size (default: 4)" in sections["Decode (--mode=decode)"]
  assert "--max_attn_vis_files (default: 100)" in sections["Decode (--mode=decode)"]
  assert "--num_train_steps (default: 0)" in sections["Train (--mode=train)"]
  assert "--log_every_n_steps (default: 100)" in sections["Train (--mode=train)"]
  assert "--[no]coverage (default: false)" in sections["Common and model (every mode)"]
  assert "--export_dir (default: '')" in sections["Export (--mode=export)"]
  assert "--eval_poll_secs (default: 5.0)" in sections["Eval (--mode=eval)"]
  assert "--eval_samples (default: 3)" in sections["Eval (--mode=eval)"]
  assert "--strategy (default: default)" in sections[
      "Distribute (--mode=train on several devices)"]
  # Every flag of the project exactly once (absl's own are left to --helpfull), and every
  # grouped name is a flag (a renamed flag would otherwise fall out of its group unnoticed).
  listed = [re.match(r"--(?:\[no\])?(\w+)", line).group(1)
            for lines in sections.values() for line in lines]
  defined = [flag.name for flag in usage.project_flags(flags.FLAGS)]
  assert sorted(listed) == sorted(defined) and "verbosity" not in listed
  assert {name for _, names in usage.MODE_GROUPS for name in names} <= set(defined)


def _entries(text):
  """{flag name: its --help entry (the heading line and its help)}."""
  return {re.match(r"  --(?:\[no\])?(\w+)", entry).group(1): entry
          for entry in re.split(r"\n(?=  --)", text) if entry.startswith("  --")}


def test_choices_and_unset_defaults_as_declared_core_or_by_a_variant(capsys):
  with pytest.raises(SystemExit):
    run.parse_flags(["run", "--help"])
  entries = _entries(capsys.readouterr().out)
  declared = {field.name: field for owner in (*config.GROUPS, *formats_registry.options(),
                                              *search_registry.options(),
                                              *controls_registry.options())
              for field in settings.declarations(owner)}
  for name, field in declared.items():
    choices = field.metadata["choices"]
    if choices is not None:
      # absl's enum help starts with the choices, a variant's (the registries') as the core's.
      assert "<" + "|".join(choices) + ">:" in " ".join(entries[name].split()), name
    if field.default is None:
      assert f"{name} (default: not set)" in entries[name], name
  # A None default is not the value "none", which a setting may take.
  assert "--coverage_penalty (default: none)\n      <none|summary|wu>:" in (
      entries["coverage_penalty"])
  assert "--length_penalty_alpha (default: not set)" in entries["length_penalty_alpha"]
  assert all("(default: none)" not in entries[name] for name, field in declared.items()
             if field.default is None)


def test_other_arguments_still_go_to_absl():
  # "--help" after "--" is an argument, not the flag; absl parses the rest as before.
  try:
    assert run.parse_flags(["run", "--beam_size=5", "--", "--help"]) == ["run", "--help"]
    assert flags.FLAGS.beam_size == 5
  finally:
    flags.FLAGS.unparse_flags()
