"""The SavedModel runs where SavedModels are served. TF Serving's C++ server loads an export with
the MetaGraph's own restore and init ops and runs its signatures in a session; so do
`tf.compat.v1.saved_model.loader.load`, `saved_model_cli run` and the C API
(TF_LoadSessionFromSavedModel, TF_SessionRun). Each is run here, in fresh processes (the
session loader and saved_model_cli in one, the C API in another), on four exports: the demo's
model (flags/demo.cfg), the same with --export_compiled_attention, a converted checkpoint of the
original TF1 code (exported with --search=greedy) and a mixed_bfloat16 run; each must give what
tf.saved_model.load gives, and the compiled export what the demo's gives."""

import ast
import glob
import json
import re
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from pointer_gen.data import demo as demo_data
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import export
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint

from helpers import REPO
from helpers import serving
from helpers import settle

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

STEP = 11
SIGNATURES = ("serving_default", "attention")
HELPERS = REPO / "tests" / "helpers"


def _articles(corpus):
  real = [r.article for r in data_formats.read_records(sorted(glob.glob(corpus["val"])),
                                                       "auto", skips_lib.SkipCounter())][:3]
  articles = real + ["", "Zoë Ångström visitó São Paulo — 東京 , the police said ."]
  # saved_model_cli splits --input_exprs at semicolons.
  assert not any(";" in a for a in articles)
  return articles


def _meta_graph(saved):
  with open(f"{saved}/saved_model.pb", "rb") as f:
    return saved_model_pb2.SavedModel.FromString(f.read()).meta_graphs[0]


def _tensor_names(saved, signature):
  signature_def = _meta_graph(saved).signature_def[signature]
  return {"input": signature_def.inputs["article"].name,
          "outputs": {key: info.name for key, info in signature_def.outputs.items()}}


def _object_loader_outputs(saved, articles):
  loaded = tf.saved_model.load(saved)
  return {name: {k: v.numpy() for k, v in
                 loaded.signatures[name](article=tf.constant(articles)).items()}
          for name in SIGNATURES}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  root = tmp_path_factory.mktemp("serving")
  # Outside the repository: nothing of pointer_gen is on the clients' path. The two clients
  # start first, to import TensorFlow (load its library) while the exports are made, and read
  # their request from standard input; the session client runs saved_model_cli too.
  outside = root / "clients"
  outside.mkdir()
  processes = {name: serving.start([sys.executable, str(HELPERS / f"{name}_client.py")],
                                   cwd=outside) for name in ("session", "c_api")}
  try:
    demo = settle(f"--flagfile={REPO / 'flags' / 'demo.cfg'}", "--mode=train",
                  f"--log_root={root}")
    vocab = vocab_lib.Vocab.from_file(demo.vocab_path, demo.vocab_size)
    articles = _articles(demo_data.ensure_demo_corpus(str(root / "demo_data")))
    demo_checkpoint = serving.write_random_checkpoint(demo, len(vocab), STEP)
    saved = {"demo": export.export(demo, vocab, demo_checkpoint, str(root / "exports" / "demo"))}
    saved["compiled"] = export.export(demo.replace(export_compiled_attention=True), vocab,
                                      demo_checkpoint, str(root / "exports" / "compiled"))
    # Greedy decoding's graph, served as the beam search's is.
    converted = demo.replace(exp_name="converted", search="greedy")
    tf1_prefix = serving.write_tf1_checkpoint(str(root / "tf1" / "bestmodel"), demo, len(vocab),
                                              STEP)
    converted_path, _ = tf1_checkpoint.convert_to_run(converted, vocab, tf1_prefix,
                                                      drop_optimizer_state=True)
    saved["converted"] = export.export(converted, vocab, converted_path,
                                       str(root / "exports" / "converted"))
    bf16 = demo.replace(exp_name="bf16", precision="mixed_bfloat16")
    saved["bf16"] = export.export(bf16, vocab,
                                  serving.write_random_checkpoint(bf16, len(vocab), STEP),
                                  str(root / "exports" / "bf16"))

    requests = {
        "session": {"articles": articles, "exports": [
            {"dir": path, "signatures": list(SIGNATURES)} for path in saved.values()],
            "saved_model_cli": [_cli_run(path, articles) for path in saved.values()]},
        "c_api": {"articles": articles, "exports": [
            {"dir": path, "signatures": {"serving_default": _tensor_names(path,
                                                                          "serving_default")}}
            for path in saved.values()]},
    }
    for name, request in requests.items():  # finish() closes standard input
      processes[name].stdin.write(json.dumps(request))
      processes[name].stdin.flush()
    expected = {name: _object_loader_outputs(path, articles) for name, path in saved.items()}
    stdout = {name: serving.finish(process) for name, process in processes.items()}
  finally:
    for process in processes.values():
      if process.poll() is None:  # the test failed before the process finished
        process.kill()
  return {"names": list(saved), "saved": saved, "expected": expected,
          "session": json.loads(stdout["session"]), "c_api": json.loads(stdout["c_api"]),
          "cli": dict(zip(saved, json.loads(stdout["session"])["saved_model_cli"]))}


def _cli_run(saved, articles):
  """The arguments of `saved_model_cli run` on the export `saved`."""
  return ["run", "--dir", saved, "--tag_set", "serve", "--signature_def", "serving_default",
          "--input_exprs", f"article={articles!r}"]


def _text(array):
  return np.vectorize(lambda s: s.decode("utf-8"), otypes=[object])(array).tolist()


def _assert_same(got, want, where):
  """`got` (nested lists, strings decoded) holds what `want` (numpy arrays) holds: strings
  equal, floats within 1e-5."""
  assert sorted(got) == sorted(want), where
  for key, value in want.items():
    if value.dtype == object:
      assert got[key] == _text(value), f"{where}: {key}"
    else:
      np.testing.assert_allclose(np.asarray(got[key], np.float32), value, rtol=0, atol=1e-5,
                                 err_msg=f"{where}: {key}")


def _settings(served):
  settings = {}
  for name, path in served["saved"].items():
    with open(f"{path}/assets.extra/{export.SETTINGS_FILE}", encoding="utf-8") as f:
      settings[name] = json.load(f)
  return settings


def test_exports_are_the_three_models(served):
  """The comparisons below mean something: three different models at the demo's sizes (the
  compiled export is the demo's model), whose summaries differ and are empty only for the empty
  article; each weight is written once (no Keras copies beside the tf.Variables the graph
  reads)."""
  settings = _settings(served)
  assert [settings[n]["precision"] for n in served["names"]] == [
      "float32", "float32", "float32", "mixed_bfloat16"]
  assert "/converted/train/" in settings["converted"]["checkpoint"]
  assert [settings[n]["search"] for n in served["names"]] == ["beam", "beam", "greedy", "beam"]
  assert "beam_size" not in settings["converted"] and settings["demo"]["beam_size"] == 4
  assert {s["hidden_dim"] for s in settings.values()} == {64}
  summaries = [tuple(served["expected"][n]["serving_default"]["summary"]) for n in served["names"]]
  assert len(set(summaries)) == 3
  for summary in summaries:
    assert summary[3] == b"" and all(summary[:3]) and summary[4]
  for path in served["saved"].values():
    stored = [n for n, _ in tf.train.list_variables(f"{path}/variables/variables")
              if n != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert len(stored) == sum(len(entry.targets) for entry in tf1_checkpoint.MAPPING)


def test_compiled_export_serves_what_the_default_export_serves(served):
  """--export_compiled_attention: the demo's model with the attention scores from decode's XLA
  kernel, said in its settings, gives the default export's outputs (and each loader gives its
  own: the tests below): the same words; the numbers within XLA's last-bit differences from
  TensorFlow's tanh, carried from step to step by the decoder's state (attention 1e-3 apart by
  the twentieth step of the demo's random weights with AVX-512, 2e-3 on a Zen 3 with AVX2
  only)."""
  settings = _settings(served)
  assert settings["compiled"]["compiled_attention"] is True
  assert settings["demo"]["compiled_attention"] is False
  assert settings["compiled"]["checkpoint"] == settings["demo"]["checkpoint"]
  for signature in SIGNATURES:
    got, want = (served["expected"][name][signature] for name in ("compiled", "demo"))
    assert sorted(got) == sorted(want)
    for key, value in want.items():
      if value.dtype == object:
        assert got[key].tolist() == value.tolist(), f"{signature}: {key}"
      else:
        np.testing.assert_allclose(got[key], value, rtol=5e-3, atol=5e-3,
                                   err_msg=f"{signature}: {key}")
  for name, compiled in (("compiled", True), ("demo", False)):
    functions = _meta_graph(served["saved"][name]).graph_def.library.function
    assert any(f.attr["_XlaMustCompile"].b for f in functions) is compiled, name


def test_session_loader_in_a_fresh_process(served):
  session = served["session"]
  assert session["imported_pointer_gen"] is False
  for name, got in zip(served["names"], session["exports"]):
    for signature in SIGNATURES:
      _assert_same(got[signature], served["expected"][name][signature], f"{name} {signature}")


def _printed(stdout, key):
  """The array saved_model_cli printed for output `key`."""
  return stdout.split(f"Result for output key {key}:\n", 1)[1].split("Result for output key")[0]


@pytest.mark.parametrize("name", ["demo", "compiled", "converted", "bf16"])
def test_saved_model_cli_run(served, name):
  stdout, want = served["cli"][name], served["expected"][name]["serving_default"]
  # numpy prints a string array as the reprs of its bytes, a float32 one exactly.
  summaries = [ast.literal_eval(s) for s in
               re.findall(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""",
                          _printed(stdout, "summary"))]
  assert summaries == want["summary"].tolist()
  log_probs = [float(x) for x in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?",
                                            _printed(stdout, "log_prob"))]
  np.testing.assert_allclose(log_probs, want["log_prob"], rtol=0, atol=1e-5)


def test_c_api_without_tensorflows_python_package(served):
  c_api = served["c_api"]
  assert c_api["imported_tensorflow"] is False
  for name, got in zip(served["names"], c_api["exports"]):
    _assert_same(got["serving_default"], served["expected"][name]["serving_default"], name)
