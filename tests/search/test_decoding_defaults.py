"""A run remembers how it decodes (search/decoding_defaults.py): the decoding settings given to
its training become its decoding defaults, which decode, export, eval's samples and the Python
API take where not given (a given one wins), which a user may store later, and without which a
run decodes with the declared defaults, as before."""

import glob
import json
import re
import shutil
import textwrap

import pytest

from pointer_gen import api
from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.formats import bin_format
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import export
from pointer_gen.search import decoding_defaults
import pointer_gen

from helpers import REPO
from helpers import run_entry_point
from helpers import run_main
from helpers import settle
from helpers import tiny_flags

STEPS = 2
# The decoding settings the run is trained with (the demo's flagfile gives two of them too).
TRAINED_WITH = {"min_dec_steps": 2, "max_dec_steps": 8, "beam_size": 3}
NUM_ARTICLES = 3
DEFAULTS_LINE = "The run's decoding defaults ("


@pytest.fixture(scope="module")
def trained(demo_corpus, tmp_path_factory):
  """A tiny run trained STEPS steps with TRAINED_WITH given: its run directory. Read only."""
  root = tmp_path_factory.mktemp("decoding_defaults")
  code = run_entry_point(f"--data_path={demo_corpus['train']}",
                         f"--vocab_path={demo_corpus['vocab']}", f"--log_root={root}",
                         *tiny_flags(num_train_steps=STEPS, checkpoint_secs=1000, **TRAINED_WITH))
  assert code == 0
  return root / "run"


@pytest.fixture
def run_dir(trained, tmp_path):
  """A copy of the trained run, to decode and change."""
  copy = tmp_path / "run"
  shutil.copytree(trained, copy, ignore=shutil.ignore_patterns("trainer.lock"))
  return copy


def _stored(run_dir):
  return json.loads((run_dir / decoding_defaults.FILE_NAME).read_text(encoding="utf-8"))


def _run_flags(run_dir):
  # absl's INFO lines: the level app.run gives the command line (in-process, the flags' -1).
  return (f"--log_root={run_dir.parent}", f"--exp_name={run_dir.name}", "--verbosity=0")


def _settle(run_dir, data_path, *args):
  """The HParams of the command line on the run with `args` (settle)."""
  return settle(*_run_flags(run_dir), f"--data_path={data_path}", *args)


def _decode(capsys, run_dir, data_path, *args):
  code, out, err = run_main(capsys, *_run_flags(run_dir), "--mode=decode", "--single_pass",
                            f"--data_path={data_path}", f"--max_decode_examples={NUM_ARTICLES}",
                            *args)
  assert code == 0, err
  return out, err


def _files(directory):
  """{path under `directory`: its bytes} of every file there."""
  return {str(path.relative_to(directory)): path.read_bytes()
          for path in sorted(directory.rglob("*")) if path.is_file()}


def test_the_settings_given_to_training_are_the_runs_decoding_defaults(trained):
  assert _stored(trained) == TRAINED_WITH
  # Not a setting of the run's model: run_config.json does not hold them.
  record = json.loads((trained / "run_config.json").read_text(encoding="utf-8"))
  assert "min_dec_steps" not in record and "beam_size" not in record


@pytest.mark.slow
def test_a_decode_without_them_is_the_decode_with_them_and_load_summarizes_the_same(
    run_dir, demo_corpus, capsys, caplog):
  given = [f"--{name}={value}" for name, value in TRAINED_WITH.items()]
  _decode(capsys, run_dir, demo_corpus["val"], "--decode_dir=given", *given)
  with caplog.at_level("INFO", logger="absl"):
    _decode(capsys, run_dir, demo_corpus["val"], "--decode_dir=defaults")
  for part in ("decoded", "reference"):
    assert _files(run_dir / "defaults" / part) == _files(run_dir / "given" / part)
  assert len(_files(run_dir / "defaults" / "decoded")) == NUM_ARTICLES
  flags_used = [json.loads((run_dir / name / "metrics.json").read_text(encoding="utf-8"))["flags"]
                for name in ("given", "defaults")]
  assert flags_used[0] == flags_used[1]
  path = run_dir / decoding_defaults.FILE_NAME
  assert [m for m in caplog.messages if m.startswith(DEFAULTS_LINE)] == [
      f"{DEFAULTS_LINE}{path}): none used; given instead: max_dec_steps=8, beam_size=3, "
      "min_dec_steps=2",
      f"{DEFAULTS_LINE}{path}): max_dec_steps=8, beam_size=3, min_dec_steps=2"]
  # The original's directory name, as with the flags given.
  hps = _settle(run_dir, demo_corpus["val"], "--mode=decode", "--single_pass")
  assert "_3beam_2mindec_8maxdec_" in decode_dir_name(hps)

  records = bin_format.BIN.read(sorted(glob.glob(demo_corpus["val"]))[0],
                                skips_lib.SkipCounter())
  articles = [next(records).article for _ in range(NUM_ARTICLES)]
  summarizer = pointer_gen.load(run_dir)
  assert summarizer.decoding_defaults == {"max_dec_steps": 8, "beam_size": 3, "min_dec_steps": 2}
  decoded = [(run_dir / "defaults" / "decoded" / f"{i:06d}_decoded.txt").read_text(
      encoding="utf-8").split() for i in range(NUM_ARTICLES)]
  assert [list(s.tokens) for s in summarizer.summarize(articles)] == decoded


def decode_dir_name(hps):
  from pointer_gen.inference import decode  # pylint: disable=g-import-not-at-top
  return decode.decode_dir_name(hps, "model.ckpt-2")


def test_a_run_without_them_decodes_with_the_declared_defaults(run_dir, demo_corpus, caplog):
  (run_dir / decoding_defaults.FILE_NAME).unlink()
  before = _files(run_dir)
  with caplog.at_level("INFO", logger="absl"):
    hps = _settle(run_dir, demo_corpus["val"], "--mode=decode", "--single_pass")
  declared = config.HParams()
  assert ((hps.min_dec_steps, hps.max_dec_steps, hps.beam_size, hps.search)
          == (declared.min_dec_steps, declared.max_dec_steps, declared.beam_size, "beam")
          == (35, 100, 4, "beam"))
  assert hps.decoding_defaults == decoding_defaults.DecodingDefaults()
  assert not [m for m in caplog.messages if m.startswith(DEFAULTS_LINE)]
  assert pointer_gen.load(run_dir).decoding_defaults == {}
  assert _files(run_dir) == before  # nothing written: the record as it was, no defaults file
  # A run trained without decoding settings has none either.
  shutil.rmtree(run_dir / "train")
  code = run_entry_point(f"--data_path={demo_corpus['train']}",
                         f"--vocab_path={demo_corpus['vocab']}", *_run_flags(run_dir),
                         "--vocab_size=519", "--hidden_dim=8", "--emb_dim=8", "--batch_size=4",
                         "--max_enc_steps=40", "--num_train_steps=1", "--checkpoint_secs=1000")
  assert code == 0
  assert not (run_dir / decoding_defaults.FILE_NAME).exists()


def test_a_setting_given_at_decode_wins(run_dir, demo_corpus, caplog):
  with caplog.at_level("INFO", logger="absl"):
    hps = _settle(run_dir, demo_corpus["val"], "--mode=decode", "--max_dec_steps=6")
  assert (hps.min_dec_steps, hps.max_dec_steps, hps.beam_size) == (2, 6, 3)
  assert hps.decoding_defaults.as_dict() == {"beam_size": 3, "min_dec_steps": 2}
  [line] = [m for m in caplog.messages if m.startswith(DEFAULTS_LINE)]
  assert line.endswith("beam_size=3, min_dec_steps=2; given instead: max_dec_steps=6")
  # Another strategy: the beam search's own default does not apply to it.
  hps = _settle(run_dir, demo_corpus["val"], "--mode=decode", "--search=greedy")
  assert (hps.search, hps.decoding_defaults.as_dict()) == (
      "greedy", {"max_dec_steps": 8, "min_dec_steps": 2})
  assert pointer_gen.load(run_dir, min_dec_steps=0).hparams.min_dec_steps == 0
  # A given length the defaults' other length cannot decode with names the file.
  with pytest.raises(DataError, match=r"^--min_dec_steps=2: must be between 0 and "
                     r"--max_dec_steps=1 \(with the run's decoding defaults beam_size=3, "
                     r"min_dec_steps=2 from .*decoding_defaults.json: a setting given here "
                     r"replaces its default\)$"):
    _settle(run_dir, demo_corpus["val"], "--mode=decode", "--max_dec_steps=1")


def test_a_strategy_stored_as_default_refuses_another_strategys_setting(run_dir, demo_corpus):
  (run_dir / decoding_defaults.FILE_NAME).write_text(json.dumps(
      {"search": "sample", "top_k": 5, "max_dec_steps": 8, "min_dec_steps": 2}),
      encoding="utf-8")
  hps = _settle(run_dir, demo_corpus["val"], "--mode=decode")
  assert (hps.search, hps.top_k) == ("sample", 5)
  with pytest.raises(DataError, match=r"^--beam_size is a setting of --search=beam, not of "
                     r"--search=sample: .* \(with the run's decoding defaults max_dec_steps=8, "
                     r"search=sample, top_k=5, min_dec_steps=2 from "):
    _settle(run_dir, demo_corpus["val"], "--mode=decode", "--beam_size=2")
  assert _settle(run_dir, demo_corpus["val"], "--mode=decode", "--search=beam",
                "--beam_size=2").top_k == config.HParams().top_k


@pytest.mark.parametrize("content,message", [
    ({"min_dec_steps": "2"}, r"min_dec_steps=\"2\": expected a int$"),
    ({"hidden_dim": 8}, r"hidden_dim is not a decoding setting \(expected some of "
                        r"max_dec_steps, search, "),
    ([1], "expected a JSON object of decoding settings$")])
def test_a_bad_file_is_an_error_naming_it(run_dir, demo_corpus, content, message):
  path = run_dir / decoding_defaults.FILE_NAME
  path.write_text(json.dumps(content), encoding="utf-8")
  with pytest.raises(DataError, match=f"^{path}: {message}"):
    _settle(run_dir, demo_corpus["val"], "--mode=decode")


@pytest.mark.slow
def test_the_exports_settings_say_which_are_the_runs(run_dir, demo_corpus, tmp_path, capsys):
  code, _, err = run_main(capsys, *_run_flags(run_dir), "--mode=export", "--beam_size=2",
                          f"--export_dir={tmp_path / 'export'}")
  assert code == 0, err
  with open(tmp_path / "export" / str(STEPS) / "assets.extra" / export.SETTINGS_FILE,
            encoding="utf-8") as f:
    settings = json.load(f)
  assert {k: settings[k] for k in ("beam_size", "min_dec_steps", "max_dec_steps",
                                   "decoding_defaults")} == {
      "beam_size": 2, "min_dec_steps": 2, "max_dec_steps": 8,
      "decoding_defaults": "max_dec_steps,min_dec_steps"}
  hps = _settle(run_dir, demo_corpus["val"], "--mode=export", "--export_dir=unused")
  assert export.recorded_settings(hps, 519, "ckpt", STEPS)["decoding_defaults"] == (
      "max_dec_steps,beam_size,min_dec_steps")
  (run_dir / decoding_defaults.FILE_NAME).unlink()
  hps = _settle(run_dir, demo_corpus["val"], "--mode=export", "--export_dir=unused")
  assert export.recorded_settings(hps, 519, "ckpt", STEPS)["decoding_defaults"] == ""


def test_eval_samples_decode_with_them_and_its_losses_keep_the_settings_given(
    run_dir, demo_corpus):
  made = []

  class Samples:

    def __init__(self, hps, vocab, model):
      del vocab, model
      made.append(hps)

    def write(self, step, writer):
      del step, writer

  hps = config.HParams(mode="eval", log_root=str(run_dir.parent), exp_name=run_dir.name,
                       data_path=demo_corpus["val"], eval_samples=1, eval_max_checkpoints=1,
                       eval_poll_secs=0.1)
  given = {"mode", "log_root", "exp_name", "data_path", "eval_samples", "eval_max_checkpoints",
           "eval_poll_secs"}
  api.run_settled(hps, given, samples=Samples)
  [sampled] = made
  assert (sampled.min_dec_steps, sampled.max_dec_steps, sampled.beam_size) == (2, 8, 3)


def test_settings_stored_after_training(run_dir, demo_corpus, capsys):
  _decode(capsys, run_dir, demo_corpus["val"], "--save_decoding_defaults", "--search=greedy",
          "--min_dec_steps=1", "--decode_dir=greedy")
  # Over those stored; the beam search's own left out with another strategy.
  assert _stored(run_dir) == {"search": "greedy", "min_dec_steps": 1, "max_dec_steps": 8}
  summarizer = pointer_gen.load(run_dir)
  assert summarizer.decoding_defaults == {"max_dec_steps": 8, "search": "greedy",
                                          "min_dec_steps": 1}
  assert summarizer.save_decoding_defaults(max_dec_steps=5, repetition_penalty=1.5) == {
      "max_dec_steps": 5, "repetition_penalty": 1.5}
  assert _stored(run_dir) == {"search": "greedy", "min_dec_steps": 1, "max_dec_steps": 5,
                              "repetition_penalty": 1.5}
  assert (summarizer.hparams.max_dec_steps, summarizer.hparams.repetition_penalty) == (5, 1.5)
  assert summarizer.decoding_defaults == pointer_gen.load(run_dir).decoding_defaults
  # Bad values are refused with the declared checks, and nothing is stored.
  with pytest.raises(DataError, match=r"^repetition_penalty=0.5: must be >= 1.0$"):
    summarizer.save_decoding_defaults(repetition_penalty=0.5)
  with pytest.raises(DataError, match=r"^min_dec_steps=9: must be between 0 and "
                     r"max_dec_steps=5$"):
    summarizer.save_decoding_defaults(min_dec_steps=9)
  with pytest.raises(TypeError, match=r"save_decoding_defaults\(\): 'beam' is not a decoding "
                     r"setting .*did you mean"):
    summarizer.save_decoding_defaults(beam=2)
  with pytest.raises(TypeError, match=r"save_decoding_defaults\(\): 'batch_size' is not a "
                     "decoding setting"):
    summarizer.save_decoding_defaults(batch_size=2)
  with pytest.raises(DataError, match=r"^save_decoding_defaults\(\): no decoding setting given "
                     "to store"):
    summarizer.save_decoding_defaults()
  assert _stored(run_dir)["max_dec_steps"] == 5
  code, _, err = run_main(capsys, *_run_flags(run_dir), "--mode=train",
                          "--save_decoding_defaults", "--min_dec_steps=3")
  assert code == 1
  assert "error: --save_decoding_defaults: applies only with --mode=decode or --mode=export" in err
  assert _stored(run_dir)["min_dec_steps"] == 1


@pytest.mark.slow
def test_a_resumed_training_records_its_settings_over_those_stored(
    run_dir, demo_corpus, capsys, caplog):
  with caplog.at_level("WARNING", logger="absl"):
    code, _, err = run_main(capsys, f"--data_path={demo_corpus['train']}", *_run_flags(run_dir),
                            f"--num_train_steps={STEPS + 1}", "--max_dec_steps=30")
  assert code == 0, err
  assert _stored(run_dir) == {**TRAINED_WITH, "max_dec_steps": 30}
  assert not [m for m in caplog.messages if "decoding defaults" in m]
  # A new run in the same directory starts afresh; a length the declared other one crosses
  # is recorded with a warning.
  shutil.rmtree(run_dir / "train")
  with caplog.at_level("WARNING", logger="absl"):
    code, _, err = run_main(capsys, f"--data_path={demo_corpus['train']}", *_run_flags(run_dir),
                            f"--vocab_path={demo_corpus['vocab']}",
                            *tiny_flags(num_train_steps=1, checkpoint_secs=1000)[1:])
  assert code == 0, err
  assert _stored(run_dir) == {"max_dec_steps": 10}
  [warning] = [m for m in caplog.messages if "decoding defaults" in m]
  assert warning.endswith("have min_dec_steps=35 over max_dec_steps=10 (min_dec_steps the "
                          "declared default): decoding takes the declared lengths unless "
                          "--min_dec_steps is given, or stored with --save_decoding_defaults")
  # ... and decodes with the declared lengths, as before the run had defaults.
  hps = _settle(run_dir, demo_corpus["val"], "--mode=decode")
  assert (hps.min_dec_steps, hps.max_dec_steps, hps.decoding_defaults.as_dict()) == (35, 100, {})
  hps = _settle(run_dir, demo_corpus["val"], "--mode=decode", "--min_dec_steps=3")
  assert hps.max_dec_steps == 10


def test_the_readmes_python_example_summarizes_as_decode_does(trained, demo_corpus, tmp_path,
                                                             monkeypatch, capsys):
  """The README's "From Python" block, run where `runs/demo` is a trained run: it prints the
  summary a decode without settings (the run's decoding defaults) gives its article, a sentence
  of a demo validation article."""
  readme = (REPO / "README.md").read_text(encoding="utf-8")
  [block] = re.findall(r"## From Python\n\n((?:    .*\n)+)", readme)
  shutil.copytree(trained, tmp_path / "runs" / "demo",
                  ignore=shutil.ignore_patterns("trainer.lock"))
  monkeypatch.chdir(tmp_path)
  namespace = {}
  exec(compile(textwrap.dedent(block), "README.md", "exec"), namespace)  # pylint: disable=exec-used
  printed = capsys.readouterr().out.splitlines()[-1]
  article = namespace["article"]
  records = bin_format.BIN.read(sorted(glob.glob(demo_corpus["val"]))[0], skips_lib.SkipCounter())
  abstracts = {record.article.split(" . ")[0] + " .": " ".join(record.abstract_sentences)
               for record in records}
  assert article in abstracts
  data = tmp_path / "article.jsonl"
  data.write_text(json.dumps({"article": article, "abstract": abstracts[article]}) + "\n",
                  encoding="utf-8")
  _decode(capsys, tmp_path / "runs" / "demo", data, "--decode_dir=readme")
  decoded = (tmp_path / "runs" / "demo" / "readme" / "decoded" / "000000_decoded.txt").read_text(
      encoding="utf-8").split()
  assert printed.split() == decoded
