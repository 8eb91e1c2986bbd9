"""A run remembers how it was made (run_config.json), and the mistakes users make around a run
are caught: flags that conflict with the run, a vocab made with another tokenisation, two
trainers on one directory, a glob that matches nothing, an eval without a trainer, a checkpoint
that does not fit.

One tiny run is trained in-process on a Hugging Face-style JSONL file (`document`/`summary`,
made here from BBC News) and shared by the tests.
"""

import gc
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unicodedata

import pytest

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base import run_lock
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.data import run_record
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

from helpers import reference
from helpers import REPO
from helpers import project_error_lines
from helpers import run_main
from helpers import settle

TINY = ("--vocab_size=0", "--hidden_dim=8", "--emb_dim=8", "--batch_size=2",
        "--max_enc_steps=30", "--max_dec_steps=6", "--seed=1")
# The run's text settings: a user who leaves them out of eval/decode gets them from the run.
TEXT = ("--tokenizer=punct", "--lowercase", "--article_key=document", "--abstract_key=summary")
DECODE = ("--mode=decode", "--single_pass", "--beam_size=2", "--min_dec_steps=1",
          "--max_dec_steps=4", "--batch_size=2", "--max_decode_examples=2")
NUM_EXAMPLES = 40


@pytest.fixture(scope="module")
def hf_data(bbc, tmp_path_factory):
  """BBC articles as XSum-style JSONL (`document`, `summary`) and a punct, lower-cased vocab
  made from it, with its tokenization sidecar."""
  root = tmp_path_factory.mktemp("hf")
  rows = []
  with open(bbc / "val.jsonl", encoding="utf-8") as f:
    for line in f:
      obj = json.loads(line)
      rows.append({"id": obj["id"], "document": obj["article"],
                   "summary": " ".join(obj["abstract_sentences"][:2])})
      if len(rows) == NUM_EXAMPLES:
        break
  path = root / "val.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
  # As tools/make_vocab.py --tokenizer=punct --lowercase (tested in test_records.py), which
  # cannot share a process with the run's flags.
  vocab = root / "vocab"
  recs = list(data_formats.read_records([str(path)], "auto", skips_lib.SkipCounter(),
                                        article_key="document", abstract_key="summary"))
  counts = vocab_lib.count_words(reference.tokens_of(t, "punct", True) for r in recs
                                 for t in [r.article, *r.abstract_sentences])
  vocab_lib.write_vocab(str(vocab), counts)
  vocab_lib.write_tokenization(str(vocab), "punct", True)
  return {"jsonl": str(path), "vocab": str(vocab), "rows": rows, "root": root}


def _args(hf_data, log_root, *extra, exp="hf"):
  return (f"--log_root={log_root}", f"--exp_name={exp}", f"--data_path={hf_data['jsonl']}",
          *extra)


@pytest.fixture(scope="module")
def trained(hf_data, tmp_path_factory):
  """The run <log_root>/hf, trained 2 steps with TEXT, its run_config.json written."""
  log_root = tmp_path_factory.mktemp("runs")
  capsys = _NoCapture()
  code, _, err = run_main(capsys, "--mode=train", *_args(hf_data, log_root), *TINY, *TEXT,
                          f"--vocab_path={hf_data['vocab']}", "--num_train_steps=2",
                          "--checkpoint_secs=1000")
  assert code == 0, err
  return log_root


class _NoCapture:
  """run_main's capsys for a module fixture (output is not checked there)."""

  @staticmethod
  def readouterr():
    return "", ""


def test_first_train_writes_run_config(hf_data, trained):
  with open(trained / "hf" / "run_config.json", encoding="utf-8") as f:
    recorded = json.load(f)
  with open(hf_data["vocab"], "rb") as f:
    checksum = hashlib.sha256(f.read()).hexdigest()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import pointer_gen  # pylint: disable=g-import-not-at-top
  # Every recorded setting (fixed, the data's layout, every format's own settings, the phase's)
  # at its declared default, but those the run was trained with.
  defaults = config.HParams()
  declared = {name: getattr(defaults, name)
              for name in (*run_record.fixed(defaults), *run_record.data_layout(defaults),
                           *run_record.phase(defaults))}
  assert recorded == {
      **declared,
      "vocab_path": os.path.abspath(hf_data["vocab"]), "vocab_sha256": checksum,
      "vocab_size": 0, "hidden_dim": 8, "emb_dim": 8, "pointer_gen": True, "coverage": False,
      "max_enc_steps": 30, "tokenizer": "punct", "lowercase": True, "data_format": "auto",
      # JSONL read with punct: raw text becomes the model's tokens so.
      "raw_tokenizer": "punct", "raw_lowercase": True,
      "article_key": "document", "abstract_key": "summary", "num_train_steps": 2,
      "phases": [{"coverage": False, "from_step": 0, "by": "train"}],
      "pointer_gen_version": pointer_gen.__version__, "tensorflow_version": tf.__version__}
  assert not [p for p in os.listdir(trained / "hf") if ".tmp" in p]


def test_hf_field_names_end_to_end_and_decode_inherits_the_run_settings(hf_data, trained,
                                                                        capsys):
  # No --vocab_path, --tokenizer, --lowercase, field names or model sizes: all from the run.
  code, _, err = run_main(capsys, *DECODE, *_args(hf_data, trained))
  assert code == 0, err
  [decode_dir] = [d for d in os.listdir(trained / "hf") if d.startswith("decode_")]
  with open(trained / "hf" / decode_dir / "metrics.json", encoding="utf-8") as f:
    used = json.load(f)["flags"]
  assert {k: used[k] for k in ("tokenizer", "lowercase", "article_key", "abstract_key",
                               "hidden_dim", "vocab_path")} == {
      "tokenizer": "punct", "lowercase": True, "article_key": "document",
      "abstract_key": "summary", "hidden_dim": 8, "vocab_path": hf_data["vocab"]}
  # The reference is the `summary` field of the first record, as the model's tokens (punct,
  # lower-cased) like the article's.
  with open(trained / "hf" / decode_dir / "reference" / "000000_reference.txt",
            encoding="utf-8") as f:
    assert f.read() == " ".join(_punct_tokens(hf_data["rows"][0]["summary"].lower())) + "\n"


def test_eval_and_export_inherit_and_data_layout_flags_stay_free(hf_data, trained):
  hps = settle("--mode=export", f"--log_root={trained}", "--exp_name=hf", "--export_dir=x")
  assert (hps.tokenizer, hps.lowercase, hps.hidden_dim, hps.vocab_size, hps.max_enc_steps,
          hps.vocab_path) == ("punct", True, 8, 0, 30, hf_data["vocab"])
  # A copy of the vocab elsewhere is the same vocab (same bytes); the field names describe the
  # files read, so another layout (e.g. a .bin test set) is taken as given.
  copy = hf_data["root"] / "vocab_copy"
  copy.write_bytes(open(hf_data["vocab"], "rb").read())
  text_file = hf_data["root"] / "text.jsonl"
  text_file.write_text("".join(json.dumps({"text": r["document"], "summary": r["summary"]}) + "\n"
                               for r in hf_data["rows"]), encoding="utf-8")
  hps = settle("--mode=eval", *_args(hf_data, trained), f"--vocab_path={copy}",
               f"--data_path={text_file}", "--article_key=text")
  assert (hps.vocab_path, hps.article_key, hps.abstract_key, hps.tokenizer) == (
      str(copy), "text", "summary", "punct")


def test_a_resumed_train_inherits_and_may_raise_max_enc_steps(hf_data, trained):
  hps = settle("--mode=train", *_args(hf_data, trained), "--max_enc_steps=60")
  assert (hps.max_enc_steps, hps.tokenizer, hps.lowercase, hps.article_key, hps.hidden_dim) == (
      60, "punct", True, "document", 8)


@pytest.mark.parametrize("flag, recorded", [
    ("--hidden_dim=16", "hidden_dim=8"),  # int
    ("--nolowercase", "lowercase=true"),  # bool
    ("--tokenizer=whitespace", "tokenizer=punct"),  # enum
    ("--max_enc_steps=31", "max_enc_steps=30"),  # truncation, fixed outside training
])
def test_a_flag_that_conflicts_with_the_run_is_an_error(hf_data, trained, capsys, flag, recorded):
  before = sorted(os.listdir(trained / "hf"))
  code, _, err = run_main(capsys, *DECODE, *_args(hf_data, trained), flag)
  assert code == 1
  given = flag.replace("--nolowercase", "--lowercase=false")
  path = trained / "hf" / "run_config.json"
  assert project_error_lines(err)[-1] == (
      f"error: {given} conflicts with {recorded} recorded in {path}, with which this run's "
      f"model was trained: leave --{given[2:].split('=')[0]} out to use the recorded value, or "
      "start a new run (another --exp_name)")
  assert sorted(os.listdir(trained / "hf")) == before


def test_a_fixed_setting_an_older_record_lacks_is_its_default(hf_data, trained, tmp_path):
  """A record written before a setting was declared: the run was made with its default, so the
  default is taken, given or left out, and another value is refused as a recorded one is."""
  log_root = tmp_path / "runs"
  shutil.copytree(trained / "hf", log_root / "hf", ignore=shutil.ignore_patterns("trainer.lock"))
  path = log_root / "hf" / "run_config.json"
  older = json.loads(path.read_text(encoding="utf-8"))
  del older["pointer_gen"]
  path.write_text(json.dumps(older), encoding="utf-8")
  run = ("--mode=eval", "--single_pass", *_args(hf_data, log_root))
  assert "pointer_gen" not in run_record.read(log_root / "hf").settings
  assert config.HParams().pointer_gen is True
  assert settle(*run).pointer_gen is True
  assert settle(*run, "--pointer_gen").pointer_gen is True
  with pytest.raises(DataError) as raised:
    settle(*run, "--nopointer_gen")
  assert str(raised.value) == (
      f"--pointer_gen=false conflicts with pointer_gen=true, the default ({path} predates "
      "--pointer_gen), with which this run's model was trained: leave --pointer_gen out to use "
      "the default, or start a new run (another --exp_name)")


@pytest.mark.parametrize("phases", [5, [{"coverage": True}], ["train"]])
def test_a_record_whose_phases_are_not_phases_is_named(tmp_path, phases):
  (tmp_path / "run_config.json").write_text(json.dumps({"phases": phases}), encoding="utf-8")
  with pytest.raises(DataError, match=rf"^{re.escape(str(tmp_path))}/run_config\.json: expected "
                     r"phases to be a list of objects of coverage, from_step, by \("):
    run_record.read(tmp_path)


def test_vocab_path_alone_stands_in_only_for_the_demo_corpus(hf_data, trained, tmp_path):
  """Without --data_path, a --vocab_path given for a run trained on other data than the demo
  corpus is refused, even with the run's own vocab: the demo articles would be read."""
  log_root = tmp_path / "runs"
  shutil.copytree(trained / "hf", log_root / "hf")
  with pytest.raises(DataError) as raised:
    settle("--mode=decode", f"--log_root={log_root}", "--exp_name=hf",
           f"--vocab_path={hf_data['vocab']}")
  recorded = run_record.read(log_root / "hf")
  demo_vocab = log_root / "demo_data" / "vocab"
  assert str(raised.value) == (
      f"--data_path is required: {log_root}/hf/run_config.json says this run was trained with "
      f"the vocab {hf_data['vocab']} (sha256 {recorded.vocab_sha256}), not on the demo "
      f"corpus (vocab {demo_vocab})")


def test_another_vocab_or_a_changed_one_is_an_error(hf_data, trained, capsys, tmp_path):
  other = tmp_path / "vocab"
  other.write_text("".join(f"w{i} 1\n" for i in range(400)), encoding="utf-8")
  code, _, err = run_main(capsys, *DECODE, *_args(hf_data, trained), f"--vocab_path={other}")
  assert code == 1
  assert re.search(rf"^error: --vocab_path={re.escape(str(other))} \(sha256 [0-9a-f]{{64}}\) is "
                   rf"not the vocab recorded in {re.escape(str(trained))}/hf/run_config\.json "
                   rf"\({re.escape(os.path.abspath(hf_data['vocab']))}, sha256 [0-9a-f]{{64}}\)",
                   err, re.M), err
  # The recorded vocab file itself rebuilt with other contents: caught by its checksum.
  moved = json.loads((trained / "hf" / "run_config.json").read_text(encoding="utf-8"))
  moved["vocab_path"] = str(other)
  run_dir = tmp_path / "runs" / "hf"
  run_dir.mkdir(parents=True)
  (run_dir / "run_config.json").write_text(json.dumps(moved), encoding="utf-8")
  code, _, err = run_main(capsys, *DECODE, *_args(hf_data, tmp_path / "runs"))
  assert code == 1
  assert re.search(rf"^error: the vocab {re.escape(str(other))} \(sha256 \w+\) is not the vocab "
                   "recorded in", err, re.M), err


def test_vocab_sidecar_mismatch_is_refused_before_any_directory(hf_data, capsys, tmp_path):
  code, _, err = run_main(capsys, "--mode=train", *_args(hf_data, tmp_path / "runs"), *TINY,
                          f"--vocab_path={hf_data['vocab']}", "--lowercase",
                          "--article_key=document", "--abstract_key=summary")
  assert code == 1
  sidecar = hf_data["vocab"] + ".tokenization.json"
  assert project_error_lines(err)[-1] == (
      f"error: --tokenizer=whitespace (the default), but the vocab {hf_data['vocab']} was made "
      f"with --tokenizer=punct (recorded in {sidecar}): its words would not match the tokens. Pass "
      "--tokenizer=punct --lowercase=true, or remake the vocab.")
  assert not (tmp_path / "runs").exists()


def _punct_tokens(text_):
  """--tokenizer=punct, independently: Unicode punctuation and symbols split off."""
  return "".join(f" {c} " if unicodedata.category(c)[0] in "PS" else c for c in text_).split()


@pytest.mark.parametrize("tokenizer, split", [
    ("whitespace", str.split),  # over 15 % out of vocabulary
    ("punct", _punct_tokens),  # under 15 %, but lower-casing would leave none: still a warning
])
def test_many_oovs_warn_with_the_rate_vocab_and_tokenization(hf_data, caplog, tokenizer, split):
  vocab = vocab_lib.Vocab.from_file(hf_data["vocab"], 0)
  hps = config.HParams(data_path=hf_data["jsonl"], vocab_path=hf_data["vocab"],
                       article_key="document", abstract_key="summary", max_enc_steps=200,
                       tokenizer=tokenizer)
  # Independently: the case-kept tokens of the truncated articles against the vocab's words.
  words = set(vocab.words)
  tokens = [t for row in hf_data["rows"] for t in split(row["document"])[:200]]
  expected = sum(t not in words for t in tokens) / len(tokens)
  assert (expected > data.OOV_WARNING_RATE) == (tokenizer == "whitespace")
  with caplog.at_level("WARNING"):
    rate = data.check_unknown_words(hps, vocab)
  assert rate == pytest.approx(expected, abs=1e-12)
  [message] = [m for m in caplog.messages if "out of the vocabulary" in m]
  assert message.startswith(f"{100 * expected:.1f} % of the article tokens of the first "
                            f"examples (up to {data.OOV_CHECK_EXAMPLES}) of "
                            f"--data_path={hf_data['jsonl']} are out of the vocabulary "
                            f"{hf_data['vocab']} with --tokenizer={tokenizer} --lowercase=false")
  # The vocab was made from these very articles: with its tokenisation, nothing is unknown.
  assert message.endswith("the vocab seems made with another tokenisation (tools/make_vocab.py "
                          "--tokenizer, --lowercase): with --tokenizer=punct --lowercase=true it "
                          "would be 0.0 %.")
  caplog.clear()
  with caplog.at_level("WARNING"):
    rate = data.check_unknown_words(hps.replace(tokenizer="punct", lowercase=True), vocab)
  assert rate == 0 and not caplog.records


@pytest.mark.parametrize("vocab_size", [2000, 0])
def test_oov_warning_names_vocab_size_when_the_whole_file_would_leave_far_fewer(
    vietnews, caplog, vocab_size):
  """Vietnews with its own vocab cut to 2000 entries: about a quarter of the tokens are unknown
  because of the cut, not the tokenisation; with the whole file nothing is warned."""
  data_path = str(vietnews / "chunked" / "val_*")
  vocab_path = str(vietnews / "vocab")
  hps = config.HParams(data_path=data_path, vocab_path=vocab_path, vocab_size=vocab_size)
  vocab = vocab_lib.Vocab.from_file(vocab_path, vocab_size)
  # Independently: the vocab file's words (bytes split at ASCII whitespace, as TensorFlow and
  # the .bin data), the first 2000 - 4 specials or all, against the truncated articles' tokens.
  with open(vocab_path, "rb") as f:
    words = [line.split()[0] for line in f]
  examples = data_formats.read_records(data_files.expand_glob(data_path), "auto",
                                       skips_lib.SkipCounter())
  tokens = [t for _, r in zip(range(data.OOV_CHECK_EXAMPLES), examples)
            for t in r.article.encode("utf-8").split()[:hps.max_enc_steps]]

  def oov_rate(known):
    known = set(known)
    return sum(t not in known for t in tokens) / len(tokens)

  cut, whole = oov_rate(words[:2000 - 4]), oov_rate(words)
  assert cut > data.OOV_WARNING_RATE and whole < cut / 2  # the case: 24.5 % on train
  with caplog.at_level("WARNING"):
    rate = data.check_unknown_words(hps, vocab)
  warnings = [m for m in caplog.messages if "out of the vocabulary" in m]
  if vocab_size == 0:
    assert rate == pytest.approx(whole, abs=1e-12) and warnings == []
    return
  assert rate == pytest.approx(cut, abs=1e-12)
  assert warnings == [
      f"{100 * cut:.1f} % of the article tokens of the first examples (up to "
      f"{data.OOV_CHECK_EXAMPLES}) of --data_path={data_path} are out of the vocabulary "
      f"{vocab_path} with --tokenizer=whitespace --lowercase=false: --vocab_size=2000 keeps only "
      f"the file's first entries; the whole file ({len(words) + 4} entries, --vocab_size=0) "
      f"would leave {100 * whole:.1f} %: a larger --vocab_size makes fewer words unknown."]


_HOLD_LOCK = """
import sys, time
from pointer_gen.base import run_lock
with run_lock.held(sys.argv[1]):
  print("held", flush=True)
  time.sleep(300)
"""


@pytest.mark.slow
def test_a_second_trainer_is_refused_and_a_killed_one_leaves_no_stuck_lock(hf_data, capsys,
                                                                          tmp_path):
  run_dir = tmp_path / "runs" / "hf"
  holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(run_dir)],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
  try:
    assert holder.stdout.readline() == "held\n"
    code, _, err = run_main(capsys, "--mode=train", *_args(hf_data, tmp_path / "runs"), *TINY,
                            *TEXT, f"--vocab_path={hf_data['vocab']}")
    assert code == 1
    assert re.search(rf"^error: {re.escape(str(run_dir))} is in use by another trainer \(trainer "
                     rf"pid {holder.pid} on \S+ since .*; lock {re.escape(str(run_dir))}/"
                     r"trainer\.lock\)", err, re.M), err
    assert not (run_dir / "train").exists() and not (run_dir / "run_config.json").exists()
  finally:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
  # The operating system released the killed holder's lock.
  with run_lock.held(str(run_dir)):
    with open(run_dir / "trainer.lock", encoding="utf-8") as f:
      assert f.read().startswith(f"trainer pid {os.getpid()} ")


@pytest.mark.parametrize("bad", ["--data_path=/nonexistent/train_*.jsonl", "--hidden_dim=0"])
def test_bad_data_path_or_flag_fails_before_any_directory(hf_data, capsys, tmp_path, bad):
  code, _, err = run_main(capsys, "--mode=train", f"--log_root={tmp_path}/runs", "--exp_name=x",
                          f"--data_path={hf_data['jsonl']}", f"--vocab_path={hf_data['vocab']}",
                          *TEXT, bad)
  assert code == 1
  flag = bad.split("=")[0]
  assert project_error_lines(err)[-1].startswith(f"error: {flag}="), err
  assert not (tmp_path / "runs").exists()


def test_eval_without_a_train_dir_says_so(hf_data, capsys, tmp_path, monkeypatch):
  monkeypatch.setattr(checkpoints, "TRAIN_DIR_WAIT_SECS", 0.3)
  code, _, err = run_main(capsys, "--mode=eval", *_args(hf_data, tmp_path, exp="typo"), *TEXT,
                          f"--vocab_path={hf_data['vocab']}", "--eval_poll_secs=0.1")
  assert code == 1
  assert project_error_lines(err)[-1].startswith(
      f"error: {tmp_path}/typo/train does not exist (waited 0.3 s): no trainer runs in this run "
      "directory; check --log_root and --exp_name")
  assert not (tmp_path / "typo").exists()


class _Hung(Exception):
  pass


def test_eval_ends_after_the_trainers_final_checkpoint(hf_data, trained, capsys):
  """The trainer recorded --num_train_steps=2: eval, not told it, stops after step 2's."""

  def hung(signum, frame):
    raise _Hung("eval did not stop after the trainer's final checkpoint")

  previous = signal.signal(signal.SIGALRM, hung)
  signal.alarm(120)
  try:
    code, out, err = run_main(capsys, "--mode=eval", *_args(hf_data, trained),
                              "--eval_poll_secs=0.1")
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
  assert code == 0, err
  # It returned by itself (today's eval waits for a newer checkpoint until the alarm).
  assert "Scored 1 checkpoint; best model: " in out


def test_a_checkpoint_that_does_not_fit_ends_with_the_error(hf_data, trained, caplog):
  """No TensorFlow warnings about unrestored values follow the error: they came when the failed
  restore's bookkeeping was freed, which the exception kept alive until the process exited."""
  vocab = vocab_lib.Vocab.from_file(hf_data["vocab"], 0)
  model = model_lib.PointerGenerator.from_hparams(
      config.HParams(hidden_dim=16, emb_dim=8, max_enc_steps=30, max_dec_steps=6), len(vocab))
  path = str(trained / "hf" / "train" / "model.ckpt-2")
  with caplog.at_level("WARNING"):
    with pytest.raises(DataError) as raised:
      checkpoints.restore_weights(model, path)
    assert str(raised.value).startswith(f"{path} does not fit the model built from the flags")
    del raised  # what exiting with the error frees
    gc.collect()
  assert not [m for m in caplog.messages if "could not be found" in m
              or "unrestored values" in m]
