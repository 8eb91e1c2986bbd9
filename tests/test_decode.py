"""Decode mode end to end on a tiny trained model: files, metrics, resume, refusal, attention JSON."""

import glob
import json
import os
import re
import shutil

import pytest

from pointer_gen import config
from pointer_gen import data
from pointer_gen import decode
from pointer_gen import demo_data
from pointer_gen import metrics
from pointer_gen import records
from pointer_gen import train
from pointer_gen import vocab as vocab_lib
from pointer_gen.errors import DataError

from conftest import load_tool

NUM_EXAMPLES = 12


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  root = tmp_path_factory.mktemp("decode")
  corpus = demo_data.ensure_demo_corpus(str(root / "demo_data"))
  hps = config.HParams(
      data_path=corpus["train"], vocab_path=corpus["vocab"], log_root=str(root), exp_name="run",
      hidden_dim=16, emb_dim=8, vocab_size=519, batch_size=8, max_enc_steps=60,
      max_dec_steps=12, min_dec_steps=3, beam_size=3, num_train_steps=30, coverage=True,
      seed=3, checkpoint_secs=1000)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  trainer = train.Trainer(hps, vocab)
  source = data.RecordSource(hps.data_path, seed=hps.seed)
  trainer.train(data.make_dataset(source, vocab.lookup_table(), len(vocab), hps))
  hps = hps.replace(mode="decode", data_path=corpus["val"], single_pass=True,
                    max_decode_examples=NUM_EXAMPLES, batch_size=5)
  return hps, vocab


def _decode_files(directory):
  return {name: open(os.path.join(directory, sub, name), encoding="utf-8").read()
          for sub in ("decoded", "reference")
          for name in sorted(os.listdir(os.path.join(directory, sub)))}


def test_single_pass_writes_files_and_agreeing_metrics(trained):
  hps, vocab = trained
  result = decode.run(hps, vocab)
  directory = os.path.join(hps.run_dir, "decode_val_60maxenc_3beam_3mindec_12maxdec_ckpt-30")
  files = _decode_files(directory)
  assert sorted(files) == sorted([f"{i:06d}_decoded.txt" for i in range(NUM_EXAMPLES)]
                                 + [f"{i:06d}_reference.txt" for i in range(NUM_EXAMPLES)])
  # References are the data's abstracts, one sentence a line.
  first_ref = files["000000_reference.txt"].splitlines()
  first = next(records.read_bin(sorted(glob.glob(hps.data_path))[0], records.SkipCounter()))
  assert first_ref == first.abstract_sentences
  # ROUGE_results.txt and metrics.json agree, and both agree with a recomputation.
  with open(os.path.join(directory, "metrics.json"), encoding="utf-8") as f:
    saved = json.load(f)
  assert saved["num_examples"] == NUM_EXAMPLES == result["num_examples"]
  text = open(os.path.join(directory, "ROUGE_results.txt"), encoding="utf-8").read()
  for key, x in (("rouge_1", "1"), ("rouge_2", "2"), ("rouge_l", "l")):
    found = re.search(rf"rouge_{x}_f_score: ([0-9.]+) with confidence interval "
                      rf"\(([0-9.]+), ([0-9.]+)\)", text)
    assert float(found.group(1)) == pytest.approx(saved["rouge"][key]["f_score"]["mid"], abs=1e-4)
  decoded = [files[f"{i:06d}_decoded.txt"].splitlines() for i in range(NUM_EXAMPLES)]
  references = [files[f"{i:06d}_reference.txt"].splitlines() for i in range(NUM_EXAMPLES)]
  again = metrics.rouge(decoded, references)
  assert again["rouge_1"]["f_score"]["mid"] == pytest.approx(
      saved["rouge"]["rouge_1"]["f_score"]["mid"])
  assert saved["ngrams"]["decoded"]["mean_length"] == pytest.approx(
      sum(len(" ".join(d).split()) for d in decoded) / NUM_EXAMPLES)
  assert 0.0 < saved["p_gen_mean"] < 1.0
  assert saved["flags"]["first_step_context"] == "original"
  # A finished directory is never overwritten.
  with pytest.raises(DataError, match="already holds a finished decode"):
    decode.run(hps, vocab)


def test_interrupted_single_pass_resumes_to_the_same_files(trained, tmp_path):
  hps, vocab = trained
  hps = hps.replace(log_root=str(tmp_path))
  shutil.copytree(os.path.join(trained[0].run_dir, "train"), os.path.join(hps.run_dir, "train"))
  decode.run(hps, vocab)
  directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "x-30"))
  complete = _decode_files(directory)
  # Simulate a kill after 7 examples: later files and the final metrics are missing.
  for i in range(7, NUM_EXAMPLES):
    os.remove(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"))
  os.remove(os.path.join(directory, "metrics.json"))
  os.remove(os.path.join(directory, "ROUGE_results.txt"))
  # Resumed with other slots: continuous batching's summaries do not depend on the batch.
  result = decode.run(hps.replace(batch_size=2), vocab)
  assert _decode_files(directory) == complete
  assert result["num_examples"] == NUM_EXAMPLES


def test_continuous_decode_writes_valid_attention_json(trained, tmp_path):
  hps, vocab = trained
  hps = hps.replace(single_pass=False, max_decode_examples=2, log_root=str(tmp_path), seed=1)
  shutil.copytree(os.path.join(trained[0].run_dir, "train"), os.path.join(hps.run_dir, "train"))
  decode.run(hps, vocab)
  attention_html = load_tool("attention_html")
  for name in ("attn_vis/000000.json", "attn_vis/000001.json", "attn_vis_data.json"):
    with open(os.path.join(hps.run_dir, "decode", name), encoding="utf-8") as f:
      payload = json.load(f)
    attention_html.validate(payload, name)
    assert len(payload["attn_dists"]) == len(payload["decoded_lst"]) == len(payload["p_gens"])
    for row in payload["attn_dists"]:
      assert sum(row) == pytest.approx(1.0, abs=1e-4)
    assert "<html" in attention_html.render(payload).lower()


def test_decode_dir_name_follows_the_original():
  hps = config.HParams(data_path="/data/finished_files/chunked/test_*", max_enc_steps=400,
                       beam_size=4, min_dec_steps=35, max_dec_steps=120)
  assert (decode.decode_dir_name(hps, "/logs/run/train/model.ckpt-238410")
          == "decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-238410")


def test_decode_without_checkpoint_is_a_clear_error(tmp_path):
  hps = config.HParams(log_root=str(tmp_path), exp_name="empty", vocab_size=519)
  vocab = vocab_lib.Vocab(["a"])
  with pytest.raises(DataError, match="no checkpoint in .*empty/train"):
    decode.run(hps, vocab)
