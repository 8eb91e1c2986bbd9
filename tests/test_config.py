"""The flags, `HParams` and `--help` groups are written out separately (absl needs the flags
defined, the library reads only `HParams`, the usage text groups them by mode): these tests keep
the three in agreement."""

import collections
import dataclasses

from absl import flags

from pointer_gen import config
from pointer_gen import run  # noqa: F401  (defines the flags)  pylint: disable=unused-import
from pointer_gen import usage


def _project_flags():
  return {flag.name: flag for flag in usage.project_flags(flags.FLAGS)}


def test_every_hparams_field_is_a_flag_with_the_same_default():
  project = _project_flags()
  mismatched = {}
  for field in dataclasses.fields(config.HParams):
    if field.name in config.SETTLED:
      assert field.name not in project, field.name
    elif field.name not in project:
      mismatched[field.name] = "no flag"
    elif project[field.name].default != field.default:
      mismatched[field.name] = (project[field.name].default, field.default)
  assert mismatched == {}


def test_every_flag_reaches_the_library_through_hparams():
  fields = {field.name for field in dataclasses.fields(config.HParams)}
  assert sorted(set(_project_flags()) - fields) == []


def test_every_flag_has_exactly_one_help_group():
  listed = collections.Counter(name for _, names in usage.MODE_GROUPS for name in names)
  assert sorted(name for name, count in listed.items() if count > 1) == []
  # A name in a group that is no flag would silently drop out of --help.
  assert sorted(set(listed) - set(_project_flags())) == []
  text = usage.help_text(flags.FLAGS)
  for name, flag in _project_flags().items():
    entry = f"\n  --[no]{name} (default: " if flag.boolean else f"\n  --{name} (default: "
    assert text.count(entry) == 1, name
