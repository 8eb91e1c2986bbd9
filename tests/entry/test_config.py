"""The flags, `HParams`, the `--help` groups and the run record's lists are made from the
settings' declarations (config.py, model_config.py, the registries'): these tests keep them in
agreement, and the declared checks naming the flag."""

import collections
import dataclasses
import re

from absl import flags
import pytest

from pointer_gen import config
from pointer_gen import run  # noqa: F401  (defines the flags)  pylint: disable=unused-import
from pointer_gen import usage
from pointer_gen.base.errors import DataError
from pointer_gen.formats import registry as formats_registry
from pointer_gen.search import registry as search_registry
from pointer_gen.search.controls import registry as controls_registry


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


def _declared():
  """{name: its dataclass field} of every declared setting: the core groups' and each
  registered format's, strategy's and control's."""
  from pointer_gen.base import settings  # pylint: disable=g-import-not-at-top
  owners = (*config.GROUPS, *(f.Options for f in formats_registry.FORMATS),
            *(s.Options for s in search_registry.STRATEGIES.values()),
            *(c.Options for c in controls_registry.CONTROLS.values()))
  return {field.name: field for owner in owners for field in settings.declarations(owner)}


def test_the_run_records_lists_are_the_declared_treatments():
  from pointer_gen.base import settings  # pylint: disable=g-import-not-at-top
  from pointer_gen.data import run_record  # pylint: disable=g-import-not-at-top
  hps = config.HParams()

  def treated(record):
    return [name for name, field in _declared().items() if field.metadata["record"] == record]

  assert sorted(run_record.fixed(hps)) == sorted(treated(settings.FIXED))
  # The original's model shape and text-to-ids settings are among them.
  assert {"vocab_size", "hidden_dim", "emb_dim", "pointer_gen", "tokenizer", "lowercase",
          "max_enc_steps"} <= set(run_record.fixed(hps))
  assert run_record.phase(hps) == tuple(treated(settings.PHASE))
  assert "coverage" in run_record.phase(hps)
  # The data's layout: the settings declared so, then every format's own, in registry order.
  assert run_record.data_layout(hps) == (*treated(settings.DATA),
                                         *formats_registry.setting_names())
  assert run_record.data_layout(hps)[:3] == ("data_format", "article_key", "abstract_key")
  declared = {field.name: field.metadata["help"] for field in settings.declarations(config.HParams)}
  for registry in (formats_registry, search_registry, controls_registry):
    declared.update({name: help_text for name, _, _, help_text in registry.settings()})
  # Every flag is a declaration, with its help.
  assert sorted(declared) == sorted(_project_flags())
  for name, flag in _project_flags().items():
    assert declared[name] in flag.help, name


@pytest.mark.parametrize("changes,message", [
    ({"eval_poll_secs": 0.0}, "--eval_poll_secs=0.0: must be positive"),
    ({"clip_norm": "l2"}, "--clip_norm=l2: expected one of original, true"),
    ({"precision": "float16"}, "--precision=float16: expected one of float32, mixed_bfloat16"),
    ({"export_version": -1}, "--export_version=-1: must be >= 0"),
    ({"vocab_size": 3}, "--vocab_size=3: must be 0 (whole file) or more than the 4 special "
                        "tokens"),
    ({"hidden_dim": 0}, "--hidden_dim=0: must be positive")])
def test_a_declared_check_names_the_flag(changes, message):
  hps = config.HParams(**changes)  # made unchecked: validated() checks
  with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
    hps.validated()
