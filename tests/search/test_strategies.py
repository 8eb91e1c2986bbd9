"""Every registered search strategy (search.registry.STRATEGIES) held to the contract, with no
edit here for a new one: its own settings are flags with their declared defaults and help,
HParams fields and lines of --help's decode group; --search's help describes it; its settings
are written out under their names and refused with another strategy; and single-pass decode
(continuous batching, files, metrics.json) gives each article the strategy's search of it in
one batch."""

import dataclasses
import json
import os

from absl import flags
import numpy as np
import pytest

from pointer_gen import config
from pointer_gen import run  # noqa: F401  (defines the flags)  pylint: disable=unused-import
from pointer_gen import usage
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.inference import decode
from pointer_gen.inference import summaries
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.search.controls import registry as controls
from pointer_gen.text import vocab as vocab_lib

from helpers import flag_help
from test_search import WORDS
from test_search import _corpus
from test_search import _model

NAMES = list(strategies.STRATEGIES)


def assert_decode_flags(options):
  """Each field of `options` (a settings.Settings class) is a flag with its default and help, an
  HParams field and a line of --help's decode group."""
  project = {flag.name: flag for flag in usage.project_flags(flags.FLAGS)}
  fields = {field.name: field for field in dataclasses.fields(config.HParams)}
  decode_group = dict(usage.MODE_GROUPS)["Decode (--mode=decode)"]
  text = usage.help_text(flags.FLAGS)
  for field in dataclasses.fields(options):
    flag = project[field.name]
    assert flag.default == field.default == fields[field.name].default, field.name
    assert flag.help == flag_help(field) and field.name in decode_group
    shown = f"[no]{field.name}" if field.type is bool else field.name
    assert f"\n  --{shown} (default: " in text
  return project


@pytest.mark.parametrize("name", NAMES)
def test_settings_are_flags_hparams_fields_and_decode_help(name):
  strategy = strategies.STRATEGIES[name]
  project = assert_decode_flags(strategy.Options)
  # --search's help: the strategy's name, its docstring's first line and its own flags.
  line = strategy.__doc__.strip().splitlines()[0].rstrip(".")
  assert f"{name}: {line}" in project["search"].help
  for flag in strategy.Options.flags():
    assert f"--{flag}" in project["search"].help
  assert config.HParams(search=name).validated().search == name


@pytest.mark.parametrize("name", NAMES)
def test_settings_written_out_name_the_strategy_and_its_settings(name):
  hps = config.HParams(search=name, min_dec_steps=3, max_dec_steps=20)
  options = strategies.STRATEGIES[name].Options.from_hparams(hps)
  own = list(options.written())
  named = [] if name == strategies.DEFAULT else ["search"]
  others = [flag for flag in controls.flags() if flag != "min_dec_steps"]
  assert list(strategies.written(hps)) == (
      named + ["min_dec_steps", "max_dec_steps"] + own + ["first_step_context"] + others)
  constants = strategies.written(hps, constants=True)
  assert constants["search"] == name and list(constants)[0] == "search"
  # Every value fits a tf.constant of the export's `settings` signature.
  assert all(isinstance(value, (str, int, float, bool)) for value in constants.values())
  assert json.loads(json.dumps(strategies.written(hps))) == strategies.written(hps)
  assert strategies.dir_name(hps).startswith(f"{options.dir_name(name)}_3mindec_20maxdec")
  # Each setting declares an example off its default; with them the strategy's settings are
  # written as given, and the directory's name says they are not the defaults.
  examples = strategies.STRATEGIES[name].Options.examples()
  assert list(examples) == list(options.flags())
  assert all(examples[field] != default for field, _, default, _ in options.declared())
  on = hps.replace(**examples).validated()
  assert {k: strategies.written(on)[k] for k in examples} == examples
  assert (strategies.dir_name(on) != strategies.dir_name(hps)) == bool(examples)


@pytest.mark.parametrize("name,other", [(a, b) for a in NAMES for b in NAMES if a != b])
def test_another_strategys_setting_is_refused(name, other):
  hps = config.HParams(search=name)
  own = set(strategies.STRATEGIES[name].Options.flags())
  for flag in set(strategies.STRATEGIES[other].Options.flags()) - own:
    owner = next(n for n in NAMES if flag in strategies.STRATEGIES[n].Options.flags())
    with pytest.raises(DataError, match=f"--{flag} is a setting of --search={owner}, not of "
                                        f"--search={name}"):
      strategies.check_flags(hps, {"mode", flag})
  strategies.check_flags(hps, {"min_dec_steps", "max_dec_steps", "first_step_context", *own})


def test_an_unknown_strategy_names_every_registered_one():
  with pytest.raises(DataError, match=f"--search=nosuch: expected one of {', '.join(NAMES)}$"):
    config.HParams(search="nosuch").validated()


def test_a_settings_check_names_the_flag():
  @dataclasses.dataclass(frozen=True)
  class Checked(contract.StrategySettings):
    width: int = settings.setting(2, "A width.", settings.positive)
    floor: int = settings.setting(0, "A floor.", settings.at_least(-1))

  assert Checked().written() == {"width": 2, "floor": 0}
  assert Checked.declared() == (("width", int, 2, "A width."), ("floor", int, 0, "A floor."))
  with pytest.raises(DataError, match=r"^--width=0: must be positive$"):
    Checked(width=0)
  with pytest.raises(DataError, match=r"^--floor=-2: must be >= -1$"):
    Checked(floor=-2)


def per_example(directory):
  with open(os.path.join(directory, "per_example.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f]


@pytest.mark.parametrize("name", NAMES)
def test_single_pass_decode_gives_each_articles_search(tmp_path, name):
  """Single-pass decode (continuous batching in 3 slots) against the strategy's search of all 7
  articles in one batch: the same summaries, in data order; its directory and metrics.json name
  the strategy's settings."""
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(tmp_path), 7, seed=0),
      log_root=str(tmp_path), exp_name="run", hidden_dim=5, emb_dim=6, search=name,
      vocab_size=len(vocab), batch_size=3, max_enc_steps=10, max_dec_steps=6, min_dec_steps=2,
      coverage=True, compiled_attention=False)
  model = _model(hps, vocab)
  result = decode.SinglePassDecoder(hps, vocab, model, "model.ckpt-0").run()
  directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "model.ckpt-0"))
  assert os.path.basename(directory) == (f"decode_val_jsonl_10maxenc_{strategies.dir_name(hps)}"
                                         "_ckpt-0")
  with open(os.path.join(directory, "metrics.json"), encoding="utf-8") as f:
    flags_written = json.load(f)["flags"]
  assert {k: flags_written[k] for k in strategies.written(hps)} == strategies.written(hps)
  decoded = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                  encoding="utf-8").read().split() for i in range(result["num_examples"])]

  _, dataset = data.input_pipeline(hps.replace(batch_size=7), vocab, single_pass=True)
  (batch,) = list(dataset)
  search = summaries.make_search(model, strategies.make(hps, contract.Settings.from_hparams(hps)))
  alone = [summaries.DecodedSummary(vocab, found, example, hps.reads).words
           for found, example in zip(summaries.run_search(search, batch),
                                     summaries.examples([batch]))]
  assert result["num_examples"] == 7 and decoded == alone
  assert len({len(words) for words in alone}) > 1
  assert result["num_examples"] == len(per_example(directory))
