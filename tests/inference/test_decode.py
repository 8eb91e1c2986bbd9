"""Decode mode end to end on a tiny trained model: files, metrics, resume, refusal, attention JSON."""

import glob
import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import demo as demo_data
from pointer_gen.data import pipeline as data
from pointer_gen.data import raw_text
from pointer_gen.formats import bin_format
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.formats import tfrecord_format
from pointer_gen.inference import decode
from pointer_gen.inference import metrics
from pointer_gen.inference import summaries
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train

from helpers import events
from helpers import load_tool
from helpers import run_main

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
  source = data.RecordSource(data_files.DataFiles.find(hps.data_path), seed=hps.seed)
  trainer.train(data.make_dataset(source, vocab.lookup_table(), len(vocab), hps))
  hps = hps.replace(mode="decode", data_path=corpus["val"], single_pass=True,
                    max_decode_examples=NUM_EXAMPLES, batch_size=5)
  return hps, vocab


def _decode_files(directory):
  return {name: open(os.path.join(directory, sub, name), encoding="utf-8").read()
          for sub in ("decoded", "reference")
          for name in sorted(os.listdir(os.path.join(directory, sub)))}


def test_single_pass_writes_files_and_agreeing_metrics(trained, capsys):
  hps, vocab = trained
  result = decode.run(hps, vocab)
  printed = capsys.readouterr().out
  directory = os.path.join(hps.run_dir, "decode_val_60maxenc_3beam_3mindec_12maxdec_ckpt-30")
  files = _decode_files(directory)
  assert sorted(files) == sorted([f"{i:06d}_decoded.txt" for i in range(NUM_EXAMPLES)]
                                 + [f"{i:06d}_reference.txt" for i in range(NUM_EXAMPLES)])
  # References are the data's abstracts, one sentence a line.
  first_ref = files["000000_reference.txt"].splitlines()
  first = next(bin_format.BIN.read(sorted(glob.glob(hps.data_path))[0], skips_lib.SkipCounter()))
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
  # The end of the decode prints the directory, ROUGE F with intervals and 3-gram repetition.
  assert (f"ROUGE and repetition figures for {NUM_EXAMPLES} examples in "
          f"{os.path.abspath(directory)} (metrics.json):") in printed
  for key, name in (("rouge_1", "ROUGE-1"), ("rouge_2", "ROUGE-2"), ("rouge_l", "ROUGE-L")):
    found = re.search(rf"^  {name} F ([0-9.]+) \(95% interval ([0-9.]+)-([0-9.]+)\)$", printed,
                      re.MULTILINE)
    f_score = saved["rouge"][key]["f_score"]
    assert found.groups() == tuple(f"{f_score[b]:.4f}" for b in ("mid", "low", "high")), name
  found = re.search(r"^  duplicate 3-grams: decoded ([0-9.]+)%, reference ([0-9.]+)%$", printed,
                    re.MULTILINE)
  assert found.groups() == tuple(f"{saved['ngrams'][side]['duplicate_ngrams_pct']['3']:.2f}"
                                 for side in ("decoded", "reference"))
  assert saved["flags"]["first_step_context"] == "original"
  # The printed figures also go to TensorBoard, in the directory, under the checkpoint's step.
  figures = {f"rouge/rouge_{x}_f": saved["rouge"][f"rouge_{x}"]["f_score"]["mid"]
             for x in ("1", "2", "l")}
  for side, prefix in (("decoded", ""), ("reference", "reference_")):
    figures[f"repetition/{prefix}duplicate_3grams_pct"] = (
        saved["ngrams"][side]["duplicate_ngrams_pct"]["3"])
  assert events.read_scalars(directory) == {
      tag: [(30, pytest.approx(value, rel=1e-6))] for tag, value in figures.items()}
  # A finished directory is never overwritten; --decode_dir names another.
  with pytest.raises(DataError, match="already holds a finished decode .* name another "
                     "directory with --decode_dir$"):
    decode.run(hps, vocab)
  decode.run(hps.replace(decode_dir="again", max_decode_examples=2), vocab)
  again_files = _decode_files(os.path.join(hps.run_dir, "again"))
  assert again_files == {name: files[name] for name in again_files}
  assert len(again_files) == 4


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


def test_continuous_decode_keeps_the_newest_attention_files(trained, tmp_path):
  hps, vocab = trained
  hps = hps.replace(single_pass=False, max_decode_examples=5, max_attn_vis_files=2,
                    log_root=str(tmp_path), seed=1)
  shutil.copytree(os.path.join(trained[0].run_dir, "train"), os.path.join(hps.run_dir, "train"))
  directory = os.path.join(hps.run_dir, "decode")

  def newest_kept(names):
    assert sorted(os.listdir(os.path.join(directory, "attn_vis"))) == names
    with open(os.path.join(directory, "attn_vis", names[-1]), encoding="utf-8") as f:
      newest = f.read()
    with open(os.path.join(directory, "attn_vis_data.json"), encoding="utf-8") as f:
      assert f.read() == newest  # the last example written

  decode.run(hps, vocab)
  newest_kept(["000003.json", "000004.json"])
  # A restarted decode numbers on from the files there, so that its own count as newest.
  decode.run(hps.replace(max_decode_examples=1), vocab)
  newest_kept(["000004.json", "000005.json"])
  with pytest.raises(DataError, match="--max_attn_vis_files=-1: must be >= 0"):
    hps.replace(max_attn_vis_files=-1).validated()


def test_decode_dir_name_follows_the_original(tmp_path):
  chunked = tmp_path / "finished_files" / "chunked"
  chunked.mkdir(parents=True)
  for name in ("test_000.bin", "test_001.bin"):
    (chunked / name).write_bytes(b"")
  hps = config.HParams(data_path=f"{chunked}/test_*", max_enc_steps=400, beam_size=4,
                       min_dec_steps=35, max_dec_steps=120)
  assert (decode.decode_dir_name(hps, "/logs/run/train/model.ckpt-238410")
          == "decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-238410")
  # The search options that are off by default name themselves, so both ways can be decoded.
  assert (decode.decode_dir_name(hps.replace(first_step_context="zeros", block_ngram_repeat=3,
                                             length_penalty_alpha=0.6), "model.ckpt-7")
          == "decode_test_400maxenc_4beam_35mindec_120maxdec_zerosctx_block3gram_lp0.6_ckpt-7")
  # Another strategy names itself in place of the beam.
  assert (decode.decode_dir_name(hps.replace(search="greedy"), "model.ckpt-7")
          == "decode_test_400maxenc_greedy_35mindec_120maxdec_ckpt-7")
  # The same split as raw JSONL is another data set; --data_format decides as it reads.
  (tmp_path / "test.jsonl").write_bytes(b"")
  assert (decode.decode_dir_name(hps.replace(data_path=f"{tmp_path}/test.jsonl"), "ckpt-7")
          == "decode_test_jsonl_400maxenc_4beam_35mindec_120maxdec_ckpt-7")
  assert (decode.decode_dir_name(hps.replace(data_path=f"{tmp_path}/test.jsonl",
                                             data_format="bin"), "ckpt-7")
          == "decode_test_400maxenc_4beam_35mindec_120maxdec_ckpt-7")
  (tmp_path / "test.tfrecord").write_bytes(b"")
  assert (decode.decode_dir_name(hps.replace(data_path=f"{tmp_path}/test.tfrecord"), "ckpt-7")
          == "decode_test_tfrecord_400maxenc_4beam_35mindec_120maxdec_ckpt-7")


def test_a_tfrecord_twin_of_the_bin_gives_its_batches_and_summaries(trained, tmp_path):
  """The val split's .bin chunks converted to TFRecord, one file each: the input pipeline gives
  the same batches (single-pass, and training's shuffled, bucketed order), and a decode of one
  checkpoint the same summaries, references and figures."""
  hps, vocab = trained
  hps = hps.replace(log_root=str(tmp_path), max_decode_examples=5)
  shutil.copytree(os.path.join(trained[0].run_dir, "train"), os.path.join(hps.run_dir, "train"))
  twin_dir = tmp_path / "twin"
  twin_dir.mkdir()
  for path in data_files.expand_glob(hps.data_path):
    name = os.path.splitext(os.path.basename(path))[0]
    tfrecord_format.TFRECORD.write(str(twin_dir / f"{name}.tfrecord"),
                                   bin_format.BIN.read(path, skips_lib.SkipCounter()))
  twin = hps.replace(data_path=f"{twin_dir}/val_*.tfrecord")
  for single_pass in (True, False):
    batches = [list(data.input_pipeline(h, vocab, single_pass)[1].take(3)) for h in (hps, twin)]
    assert len(batches[0]) == 3
    for from_bin, from_tfrecord in zip(*batches, strict=True):
      for key, a, b in zip(from_bin._fields, from_bin, from_tfrecord, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), key)
  results = [decode.run(h, vocab) for h in (hps, twin)]
  directories = [os.path.join(h.run_dir, decode.decode_dir_name(h, "x-30")) for h in (hps, twin)]
  assert [os.path.basename(d) for d in directories] == [
      "decode_val_60maxenc_3beam_3mindec_12maxdec_ckpt-30",
      "decode_val_tfrecord_60maxenc_3beam_3mindec_12maxdec_ckpt-30"]
  files = [_decode_files(d) for d in directories]
  assert len(files[0]) == 10 and files[0] == files[1]
  for key in ("num_examples", "rouge", "ngrams", "p_gen_mean", "skipped_records"):
    assert results[0][key] == results[1][key], key


def test_decode_without_checkpoint_is_a_clear_error(tmp_path):
  hps = config.HParams(log_root=str(tmp_path), exp_name="empty", vocab_size=519)
  vocab = vocab_lib.Vocab(["a"])
  with pytest.raises(DataError, match="no checkpoint in .*empty/train"):
    decode.run(hps, vocab)


def _references(sentences, tokenizer, lowercase):
  """The reference files' lines of each abstract's `sentences`, as decode writes them."""
  return [summaries.reference_sentences("\n".join(s), tokenizer, lowercase) for s in sentences]


def test_reference_ngrams_are_tokenised_as_the_article():
  article = "The U.S. economy grew, officials said."
  raw = [["The U.S. economy grew.", "Officials said so!"]]
  references = _references(raw, "punct", True)
  assert references == [["the u . s . economy grew .", "officials said so !"]]
  decoded = [["the u . s . economy grew ."]]
  stats = summaries.ngram_figures(decoded, references, [article], "punct", lowercase=True)
  ref, dec = stats["reference"], stats["decoded"]
  # Article: the u . s . economy grew , officials said .
  # Reference: the u . s . economy grew . officials said so !  (12 tokens)
  # 1-grams: "so" and "!" are not in the article (2/12); "." occurs 3 times, 2 repeats (2/12).
  assert ref["mean_length"] == 12
  assert ref["novel_ngrams_pct"]["1"] == pytest.approx(100 * 2 / 12)
  assert ref["duplicate_ngrams_pct"]["1"] == pytest.approx(100 * 2 / 12)
  # 11 2-grams; "grew .", ". officials", "said so", "so !" are not the article's (which has
  # "grew ,", ", officials", "said ."); none repeats.
  assert ref["novel_ngrams_pct"]["2"] == pytest.approx(100 * 4 / 11)
  assert ref["duplicate_ngrams_pct"]["2"] == 0.0
  # Decoded: the u . s . economy grew .  (8 tokens, all in the article; "." 3 times); of its
  # 7 2-grams only "grew ." is novel.
  assert dec["mean_length"] == 8
  assert dec["novel_ngrams_pct"]["1"] == 0.0
  assert dec["duplicate_ngrams_pct"]["1"] == pytest.approx(100 * 2 / 8)
  assert dec["novel_ngrams_pct"]["2"] == pytest.approx(100 * 1 / 7)
  # Split on raw whitespace instead, 5 of the reference's 7 words would count as novel (The,
  # U.S., grew., Officials, so!). With --tokenizer=whitespace (case kept) the reference's own
  # words are compared with the article's: "grew.", "Officials", "said" (the article has
  # "said.") and "so!" are new (4/7).
  plain = summaries.ngram_figures(decoded, _references(raw, "whitespace", False), [article],
                               "whitespace", lowercase=False)
  assert plain["reference"]["mean_length"] == 7
  assert plain["reference"]["novel_ngrams_pct"]["1"] == pytest.approx(100 * 4 / 7)


def test_progress_eta_leaves_out_the_first_batch():
  # The first batch (5 articles) takes 30 s, most of it compiling; later batches take 2 s.
  times = iter([0.0, 30.0, 32.0, 34.0])
  progress = decode.Progress(total=20, clock=lambda: next(times))
  assert progress.line(5) == "Decoded 5/20 articles (the first batch includes compiling)"
  # From the end of the first batch: 5 articles in 2 s = 2.5/s, 10 left -> 4 s (counting from
  # the start, 10 in 32 s would give 32 s).
  assert progress.line(10) == "Decoded 10/20 articles, 2.50 articles/s, ETA 4s"
  assert progress.line(15) == "Decoded 15/20 articles, 2.50 articles/s, ETA 2s"


def test_a_single_pass_decode_settles_its_data_once(tiny_run, demo_corpus, tmp_path, capsys,
                                                    monkeypatch):
  """From the command line to metrics.json: --data_path expanded once (every glob function
  counted), each file's format found once, how its text is read worked out once."""
  shutil.copytree(tiny_run, tmp_path / "run")
  pattern = demo_corpus["val"]
  counted = {"expansions": 0, "detections": 0, "readings": 0}

  def counting(name, function, matches=lambda *args: True):
    def wrapper(*args, **kwargs):
      counted[name] += bool(matches(*args))
      return function(*args, **kwargs)
    return wrapper

  is_data = lambda path, *_: str(path) == pattern
  # glob.glob calls glob.iglob, so iglob sees both.
  monkeypatch.setattr(glob, "iglob", counting("expansions", glob.iglob, is_data))
  monkeypatch.setattr(tf.io.gfile, "glob", counting("expansions", tf.io.gfile.glob, is_data))
  monkeypatch.setattr(data_formats, "detect", counting("detections", data_formats.detect))
  monkeypatch.setattr(raw_text, "for_data", counting("readings", raw_text.for_data))
  code, _, err = run_main(capsys, "--mode=decode", "--single_pass", f"--data_path={pattern}",
                          f"--log_root={tmp_path}", "--exp_name=run", "--min_dec_steps=1",
                          "--max_decode_examples=3")
  assert code == 0, err
  decoded = dict(counted)
  files = glob.glob(pattern)
  assert counted["expansions"] == decoded["expansions"] + 1  # glob.glob is seen
  assert len(files) == 1 and glob.glob(f"{tmp_path}/run/decode_val_*/metrics.json")
  assert decoded == {"expansions": 1, "detections": len(files), "readings": 1}
