"""Export mode: the SavedModel, loaded in a fresh process without pointer_gen, summarises raw text
exactly as decode mode does, survives awkward input, lists its signatures, and a failed export
(or one TF Serving's session loader could not run) leaves nothing behind. The other loaders are
in test_serving_loaders.py."""

import glob
import json
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import demo as demo_data
from pointer_gen.data import pipeline as data
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import decode
from pointer_gen.inference import export
from pointer_gen.inference import summaries
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.text import vocab as vocab_lib

from helpers import REPO
from helpers import load_tool
from helpers import serving

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

NUM_EXAMPLES = 15
DECODE_BATCH = 5
STEP = 7
SIZES = dict(vocab_size=519, hidden_dim=16, emb_dim=8, max_enc_steps=60, max_dec_steps=12,
             min_dec_steps=3, beam_size=3, coverage=True)
NON_ASCII = "Zoë Ångström visitó São Paulo — 東京 😀 the police said « merci » ."

# Runs in a fresh interpreter: loads the export with TensorFlow alone and prints what it returns,
# and what `saved_model_cli show --all` prints of it (helpers/session_client.py runs it here).
CLIENT = r"""
import json
import sys

import numpy as np
import tensorflow as tf

path, request = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
sys.path.insert(0, sys.argv[3])
from session_client import run_cli

awkward = request["awkward"]
awkward["invalid_utf8"] = awkward["invalid_utf8"].encode("latin-1")
loaded = tf.saved_model.load(path)


def call(signature, articles):
  batch = tf.constant([a.encode("utf-8") if isinstance(a, str) else a for a in articles],
                      tf.string, shape=[len(articles)])
  # Strict decoding: every output string must be valid UTF-8.
  as_text = np.vectorize(lambda s: s.decode("utf-8"), otypes=[object])
  return {k: (as_text(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist()
          for k, v in loaded.signatures[signature](article=batch).items()}


def error_of(article):
  try:
    loaded.signatures["serving_default"](article=article)
  except Exception as e:  # pylint: disable=broad-except
    return f"{type(e).__name__}: {e}"
  return None


settings = {k: v.numpy() for k, v in loaded.signatures["settings"]().items()}
print(json.dumps({
    "batches": [call("serving_default", b) for b in request["batches"]],
    "single": {name: call("serving_default", [a]) for name, a in awkward.items()},
    "mixed": call("serving_default", list(awkward.values())),
    "empty_batch": call("serving_default", []),
    "attention": call("attention", list(awkward.values())),
    "settings": {k: v.decode("utf-8") if isinstance(v, bytes) else v.item()
                 for k, v in settings.items()},
    "scalar_error": error_of(tf.constant(awkward["plain"])),
    "matrix_error": error_of(tf.constant([[awkward["plain"]]])),
    "shown": run_cli(["show", "--all", "--dir", path], first=True),
    "imported_pointer_gen": "pointer_gen" in sys.modules,
}))
"""


def _flags(hps):
  return [f"--log_root={hps.log_root}", f"--exp_name={hps.exp_name}", "--coverage"] + [
      f"--{k}={v}" for k, v in SIZES.items() if k != "coverage"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("export")
  corpus = demo_data.ensure_demo_corpus(str(root / "demo_data"))
  hps = config.HParams(vocab_path=corpus["vocab"], log_root=str(root), exp_name="run", **SIZES)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  ckpt_path = serving.write_random_checkpoint(hps, len(vocab), STEP)

  # The command line, as a user runs it (no --data_path: the demo corpus's vocab). Processes
  # run beside the in-process decode to keep the test short on 2 cores.
  export_dir = root / "models" / "pgen"
  exporting = serving.start([sys.executable, "-m", "pointer_gen.run", "--mode=export",
                             f"--export_dir={export_dir}"] + _flags(hps), cwd=REPO)
  saved = export_dir / str(STEP)

  try:
    decode_hps = hps.replace(mode="decode", data_path=corpus["val"], single_pass=True,
                             max_decode_examples=NUM_EXAMPLES, batch_size=DECODE_BATCH)
    decode.run(decode_hps, vocab)
    decoded_dir = os.path.join(decode_hps.run_dir, decode.decode_dir_name(decode_hps, ckpt_path),
                               "decoded")
    decoded = [" ".join(open(path, encoding="utf-8").read().split("\n")).strip()
               for path in sorted(glob.glob(os.path.join(decoded_dir, "*_decoded.txt")))]
    with open(os.path.join(os.path.dirname(decoded_dir), "per_example.jsonl"),
              encoding="utf-8") as f:
      p_gen_means = [json.loads(line)["p_gen_mean"] for line in f]

    articles = [r.article for r in data_formats.read_records(
        sorted(glob.glob(corpus["val"])), "auto", skips_lib.SkipCounter())][:NUM_EXAMPLES]
    long_article = " ".join((articles[0].split() * 100_000)[:100_000])
    awkward = {
        "plain": articles[0],
        "empty": "",
        "whitespace": " \t\n  \r\n ",
        "long": long_article,
        "non_ascii": NON_ASCII,
        # Bytes 0x80-0xff spelled as latin-1 characters in the JSON; the client sends the bytes.
        "invalid_utf8": "caf\xc3 \xff\xfe the police said",
    }
    request = {"batches": [articles[i:i + DECODE_BATCH]
                           for i in range(0, NUM_EXAMPLES, DECODE_BATCH)], "awkward": awkward}
    request_path = root / "request.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    serving.finish(exporting)
  finally:
    if exporting.poll() is None:  # the test failed before the export finished
      exporting.kill()

  # A directory without the repository, so nothing of pointer_gen is even on the path there.
  outside = root / "client"
  outside.mkdir()
  client = serving.start([sys.executable, "-c", CLIENT, str(saved), str(request_path),
                          str(REPO / "tests" / "helpers")], cwd=outside)
  client = json.loads(serving.finish(client))
  return {"root": root, "hps": hps, "vocab": vocab, "ckpt_path": ckpt_path, "saved": saved,
          "val": corpus["val"],
          "export_dir": export_dir, "decoded": decoded, "p_gen_means": p_gen_means,
          "articles": articles, "client": client, "shown": client["shown"]}


def test_fresh_process_gives_decode_modes_summaries(exported):
  client = exported["client"]
  assert client["imported_pointer_gen"] is False
  summaries = [s for batch in client["batches"] for s in batch["summary"]]
  assert len(exported["decoded"]) == NUM_EXAMPLES
  assert summaries == exported["decoded"]
  np.testing.assert_allclose([p for batch in client["batches"] for p in batch["p_gen_mean"]],
                             exported["p_gen_means"], rtol=1e-5)
  # The comparison means something: lengths vary and article OOVs are copied.
  vocab_words = set(exported["vocab"].words)
  assert len({len(s.split()) for s in summaries}) > 2
  assert any(w not in vocab_words for s in summaries for w in s.split())


def test_awkward_inputs_get_defined_outputs(exported):
  client, vocab = exported["client"], exported["vocab"]
  single, mixed = client["single"], client["mixed"]
  names = list(single)
  for name in ("empty", "whitespace"):
    out = single[name]
    assert out["summary"] == [""] and out["log_prob"] == [0.0] and out["p_gen_mean"] == [0.0]
    assert out["tokens"] == [[""] * SIZES["max_dec_steps"]]
  # The long article is cut to max_enc_steps tokens: those of the plain article it repeats.
  assert single["long"]["summary"] == single["plain"]["summary"]
  assert single["long"]["log_prob"] == single["plain"]["log_prob"]
  for name in ("plain", "non_ascii", "invalid_utf8"):
    out = single[name]
    assert out["summary"][0], name
    assert np.isfinite(out["log_prob"][0]) and out["log_prob"][0] < 0
    assert 0 < out["p_gen_mean"][0] < 1
    words = [t for t in out["tokens"][0] if t]
    assert " ".join(words) == out["summary"][0]
  assert "\ufffd" in client["attention"]["article_tokens"][names.index("invalid_utf8")][0]
  # Mixed in one batch, every input gets what it gets alone.
  for i, name in enumerate(names):
    assert mixed["summary"][i] == single[name]["summary"][0], name
    assert mixed["tokens"][i] == single[name]["tokens"][0], name
    np.testing.assert_allclose(mixed["log_prob"][i], single[name]["log_prob"][0], rtol=1e-5)
  # Every summary word is a vocab word or a word of its own article (copied).
  for i, tokens in enumerate(client["attention"]["tokens"]):
    allowed = set(vocab.words) | set(client["attention"]["article_tokens"][i])
    assert all(t in allowed for t in tokens if t)
  assert client["empty_batch"]["summary"] == []
  assert client["empty_batch"]["tokens"] == []


def test_attention_signature(exported):
  attention = exported["client"]["attention"]
  names = list(exported["client"]["single"])
  steps = SIZES["max_dec_steps"]
  attn = np.array(attention["attn_dists"])
  p_gens = np.array(attention["p_gens"])
  width = SIZES["max_enc_steps"]  # the long article fills it
  assert attn.shape == (len(names), steps, width) and p_gens.shape == (len(names), steps)
  assert attention["summary"] == exported["client"]["mixed"]["summary"]
  for i, name in enumerate(names):
    num_words = sum(1 for t in attention["tokens"][i] if t)
    article = [t for t in attention["article_tokens"][i] if t]
    if name in ("empty", "whitespace"):
      assert num_words == 0 and article == []
    np.testing.assert_allclose(attn[i, :num_words].sum(axis=1), 1.0, rtol=1e-5)
    assert not attn[i, num_words:].any() and not attn[i, :, len(article):].any()
    assert ((p_gens[i, :num_words] > 0) & (p_gens[i, :num_words] < 1)).all()
    assert not p_gens[i, num_words:].any()
  assert attention["article_tokens"][names.index("long")] == (
      exported["articles"][0].split()[:width])


@pytest.mark.parametrize("name", list(strategies.STRATEGIES))
def test_the_export_serves_every_strategys_summaries(exported, name):
  """Each registered strategy, with its default settings, in the serving graph: the first
  articles' summaries and log-probabilities are decode's search of them, and the `settings`
  signature names the strategy and its own settings (as strategies.written). In process, without
  a SavedModel written: the fresh-process client above serves the default."""
  hps = exported["hps"].replace(search=name)
  vocab = exported["vocab"]
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  checkpoints.restore_weights(model, exported["ckpt_path"])
  settings = export.recorded_settings(hps, len(vocab), exported["ckpt_path"], STEP)
  summarizer = export.ServingModule(model, str(exported["saved"] / "assets" / export.VOCAB_ASSET),
                                 hps, settings)
  served = {k: v.numpy() for k, v in summarizer.summarize(
      tf.constant(exported["articles"][:DECODE_BATCH])).items()}

  decode_hps = hps.replace(mode="decode", data_path=exported["val"], single_pass=True,
                           batch_size=DECODE_BATCH)
  _, dataset = data.input_pipeline(decode_hps, vocab, single_pass=True)
  batch = next(iter(dataset))
  search = summaries.make_search(model, strategies.make(hps, contract.Settings.from_hparams(hps)))
  found = summaries.run_search(search, batch)
  want = [" ".join(summaries.DecodedSummary(vocab, result, example, hps.reads).words)
          for result, example in zip(found, summaries.examples([batch]))]
  assert [s.decode("utf-8") for s in served["summary"]] == want
  np.testing.assert_allclose(served["log_prob"], [r.log_prob for r in found], rtol=1e-5)
  assert len(set(want)) > 1
  signature = {k: v.numpy() for k, v in summarizer.settings().items()}
  for key, value in strategies.written(hps, constants=True).items():
    got = signature[key].decode("utf-8") if isinstance(value, str) else signature[key].item()
    assert got == pytest.approx(value) if isinstance(value, float) else got == value, key


def test_greedy_export_serves_beam_size_ones_summaries(exported):
  """--search=greedy in the serving graph: both signatures give --beam_size=1's outputs, and
  its settings name the strategy, without the beam search's. The functions run in process,
  without a SavedModel written (test_serving_loaders serves a greedy export)."""
  hps, vocab = exported["hps"], exported["vocab"]
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  checkpoints.restore_weights(model, exported["ckpt_path"])
  vocab_file = str(exported["saved"] / "assets" / export.VOCAB_ASSET)
  articles = tf.constant(exported["articles"][:4] + [""])
  served = {}
  for name, search_hps in (("greedy", hps.replace(search="greedy")),
                           ("beam", hps.replace(beam_size=1))):
    settings = export.recorded_settings(search_hps, len(vocab), exported["ckpt_path"], STEP)
    summarizer = export.ServingModule(model, vocab_file, search_hps, settings)
    served[name] = ({k: v.numpy() for k, v in summarizer.attention(articles).items()},
                    {k: v.numpy() for k, v in summarizer.settings().items()})
  (greedy, greedy_settings), (beam, beam_settings) = served["greedy"], served["beam"]
  assert sorted(greedy) == sorted(beam)
  for key, value in beam.items():
    if value.dtype == object:
      assert greedy[key].tolist() == value.tolist(), key
    else:
      np.testing.assert_allclose(greedy[key], value, rtol=1e-6, atol=1e-6, err_msg=key)
  assert all(greedy["summary"][:4]) and len(set(greedy["summary"][:4])) > 1
  assert greedy_settings["search"] == b"greedy" and beam_settings["search"] == b"beam"
  beam_only = {"beam_size", "ranking", "length_penalty_alpha", "coverage_penalty",
               "coverage_penalty_beta", "n_best"}
  assert beam_only <= set(beam_settings) and not beam_only & set(greedy_settings)
  assert set(greedy_settings) == set(beam_settings) - beam_only


def test_settings_and_layout(exported):
  saved = exported["saved"]
  expected = {"search": "beam", "beam_size": 3, "min_dec_steps": 3, "max_dec_steps": 12,
              "max_enc_steps": 60,
              "vocab_size": 519, "tokenizer": "whitespace", "lowercase": False,
              # The demo corpus's raw text is its tokens: its vocab's .tokenization.json.
              "raw_tokenizer": "whitespace", "raw_lowercase": False,
              "pointer_gen": True, "coverage": True, "ranking": "average_log_prob",
              "precision": "float32", "first_step_context": "original", "step": STEP,
              "compiled_attention": False}
  settings = exported["client"]["settings"]
  assert {k: settings[k] for k in expected} == expected
  with open(saved / "assets.extra" / export.SETTINGS_FILE, encoding="utf-8") as f:
    recorded = json.load(f)
  assert recorded == settings
  assert os.listdir(exported["export_dir"]) == [str(STEP)]
  with open(saved / "assets" / export.VOCAB_ASSET, encoding="utf-8") as f:
    assert f.read().split("\n")[:-1] == exported["vocab"].words
  # Nothing was left beside the export directory.
  assert os.listdir(exported["export_dir"].parent) == ["pgen"]


def test_export_needs_no_xla(exported):
  """No function of the SavedModel must be compiled with XLA (training's attention kernels and
  decode's compiled attention stay out of the default export), so that any TensorFlow runtime
  serves it; the check is not vacuous: the graph has functions and the attribute is read from
  each (test_serving_loaders finds it in an --export_compiled_attention export)."""
  saved_model = saved_model_pb2.SavedModel()
  with open(exported["saved"] / "saved_model.pb", "rb") as f:
    saved_model.ParseFromString(f.read())
  functions = saved_model.meta_graphs[0].graph_def.library.function
  assert len(functions) > 10
  compiled = [f.signature.name for f in functions if f.attr["_XlaMustCompile"].b]
  assert not compiled


def test_saved_model_cli_lists_the_signatures(exported):
  shown = exported["shown"]
  for name in ("serving_default", "attention", "settings"):
    assert f"signature_def['{name}']" in shown
  for output in ("summary", "tokens", "log_prob", "p_gen_mean", "attn_dists", "p_gens",
                 "article_tokens"):
    assert f"outputs['{output}']" in shown
  # The article input is a batch of strings: `shape: (-1)`, not `unknown_rank`.
  declared = re.findall(r"inputs\['article'\] tensor_info:\n +dtype: (\S+)\n +shape: (\S+)\n",
                        shown)
  assert declared == [("DT_STRING", "(-1)")] * 2  # attention, serving_default


def test_failed_export_leaves_nothing(exported, monkeypatch, tmp_path):
  def broken_save(module, path, signatures):
    os.makedirs(os.path.join(path, "variables"))
    with open(os.path.join(path, "saved_model.pb"), "wb") as f:
      f.write(b"half")
    raise OSError("disk full")

  monkeypatch.setattr(tf.saved_model, "save", broken_save)
  # What fails here is the save, not what it saves: the root is not traced first.
  monkeypatch.setattr(export, "serving_root", lambda module: module)
  export_dir = tmp_path / "models" / "pgen"
  with pytest.raises(OSError, match="disk full"):
    export.export(exported["hps"], exported["vocab"], exported["ckpt_path"], str(export_dir))
  assert os.listdir(tmp_path / "models") == []


def test_export_the_session_loader_cannot_run_is_refused(exported, monkeypatch, tmp_path):
  """Written from the ServingModule itself, as exports were before, the SavedModel runs under
  tf.saved_model.load but not under the session loader TF Serving uses (the restore op fills
  copies of the Keras variables the graph does not read): the export is refused, saying so,
  and nothing is moved into place."""
  monkeypatch.setattr(export, "serving_root", lambda module: module)
  export_dir = tmp_path / "models" / "pgen"
  with pytest.raises(DataError, match="does not run under TensorFlow's session loader, as TF "
                     "Serving loads it: FailedPreconditionError: ") as refused:
    export.export(exported["hps"], exported["vocab"], exported["ckpt_path"], str(export_dir))
  assert "Could not find variable " in str(refused.value)
  assert os.listdir(tmp_path / "models") == []


def test_checkpoint_choice_and_refusals(exported):
  hps, vocab = exported["hps"], exported["vocab"]
  with pytest.raises(DataError, match="no best model"):
    checkpoints.to_export(hps.replace(export_source="best"))
  # A best model as eval saves it.
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  checkpoints.restore_weights(model, exported["ckpt_path"])
  best = tf.train.CheckpointManager(checkpoints.make_checkpoint(model), hps.eval_dir,
                                    checkpoints.MAX_TO_KEEP,
                                    checkpoint_name=checkpoints.BEST_MODEL_NAME).save(9)
  assert checkpoints.to_export(hps.replace(export_source="best")) == best
  assert checkpoints.to_export(hps) == exported["ckpt_path"]
  with pytest.raises(DataError, match="give one"):
    checkpoints.to_export(hps.replace(export_source="best", ckpt_path=exported["ckpt_path"]))
  with pytest.raises(DataError, match="already exists"):
    export.export(hps, vocab, exported["ckpt_path"], str(exported["export_dir"]))
  with pytest.raises(DataError, match="SavedModel itself"):
    export.export(hps, vocab, exported["ckpt_path"], str(exported["saved"]))
  with pytest.raises(DataError, match="--export_dir"):
    export.run(hps.replace(mode="export"), vocab)


def test_article_other_than_a_batch_is_a_clear_error(exported):
  # A signature does not check the shape it is given, though it declares [batch]: without the
  # check a scalar failed deep inside the graph with "slice index 0 of dimension 0 out of
  # bounds".
  for name, shape in (("scalar_error", "[]"), ("matrix_error", "[1 1]")):
    error = exported["client"][name]
    assert error.startswith("InvalidArgumentError: ")
    assert f"assertion failed: [{export.ARTICLE_SHAPE_ERROR}] [Received shape:] {shape}" in error


def test_serve_example_uses_the_newest_version_of_a_base_directory(exported, tmp_path):
  serve_example = load_tool("serve_example")
  # As TF Serving: the highest number wins (12 over 9, not "9" over "12" as text); files and
  # names that are not numbers are ignored.
  for name in ("3", "9", "12", "tmp-99", ".pgen.export-20-x"):
    (tmp_path / name).mkdir()
    (tmp_path / name / "saved_model.pb").write_bytes(b"")
  (tmp_path / "30").write_text("a file")
  assert serve_example.version_dir(str(tmp_path)) == str(tmp_path / "12")
  assert serve_example.version_dir(str(tmp_path / "9")) == str(tmp_path / "9")
  (tmp_path / "12" / "saved_model.pb").unlink()
  with pytest.raises(ValueError, match="newest version .*12 holds no saved_model.pb"):
    serve_example.version_dir(str(tmp_path))
  empty = tmp_path / "empty"
  empty.mkdir()
  with pytest.raises(ValueError, match=f"--saved_model={empty}: neither a SavedModel"):
    serve_example.version_dir(str(empty))
  with pytest.raises(ValueError, match="no such directory"):
    serve_example.version_dir(str(tmp_path / "missing"))

  # The real export's base directory summarises as the export itself does.
  export_dir = str(exported["export_dir"])
  assert serve_example.version_dir(export_dir) == str(exported["saved"])
  results = serve_example.summarize_local(serve_example.version_dir(export_dir),
                                          exported["articles"][:2], batch_size=2)
  assert [r["summary"] for r in results] == exported["client"]["batches"][0]["summary"][:2]
