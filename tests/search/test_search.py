"""The search strategies chosen by name: greedy decoding (--search=greedy) runs through
single-pass decode (continuous batching, files, metrics) and continuous decode's search, and
gives the beam search's summaries at beam size 1; the decode directory and metrics.json name
the strategy; a beam search flag given with greedy decoding is refused; and the settings come
whole from the flags."""

import json
import os

import numpy as np
import pytest

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data.batch import Batch
from pointer_gen.inference import decode
from pointer_gen.inference import summaries
from pointer_gen.search import beam as beam_search
from pointer_gen.search import contract as search_lib
from pointer_gen.search import greedy as greedy_search
from pointer_gen.search import registry as strategies
from pointer_gen.search.controls import registry as controls
from pointer_gen.text import vocab as vocab_lib

from helpers.search_corpus import WORDS
from helpers.search_corpus import corpus as _corpus
from helpers.search_corpus import model as _model


def test_greedy_decodes_single_pass_as_beam_size_one(tmp_path):
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(tmp_path), 7, seed=0),
      log_root=str(tmp_path / "greedy"), exp_name="run", hidden_dim=5, emb_dim=6,
      vocab_size=len(vocab), batch_size=3, max_enc_steps=10, max_dec_steps=6, min_dec_steps=2,
      coverage=True, compiled_attention=False)
  model = _model(hps, vocab)

  def decoded(hps):
    result = decode.SinglePassDecoder(hps, vocab, model, "model.ckpt-0").run()
    directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "model.ckpt-0"))
    with open(os.path.join(directory, "per_example.jsonl"), encoding="utf-8") as f:
      per_example = [json.loads(line) for line in f]
    summaries = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                      encoding="utf-8").read() for i in range(result["num_examples"])]
    with open(os.path.join(directory, "metrics.json"), encoding="utf-8") as f:
      assert json.load(f) == result
    return os.path.basename(directory), result.pop("flags"), (result, per_example, summaries)

  traced = []
  advance = greedy_search.GreedySearch.advance

  def counted(*args):
    traced.append(1)
    return advance(*args)

  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(greedy_search.GreedySearch, "advance", counted)
    greedy_dir, greedy_flags, greedy = decoded(hps.replace(search="greedy"))
  assert traced
  beam_dir, beam_flags, beam = decoded(hps.replace(log_root=str(tmp_path / "beam"), beam_size=1))
  assert greedy == beam
  result, per_example, summaries = greedy
  assert result["num_examples"] == 7 and len(set(summaries)) > 1
  # Some summaries stopped between min_dec_steps and max_dec_steps ([STOP] counted), some ran
  # to the end.
  steps = {row["steps"] for row in per_example}
  assert min(steps) >= 2 + 1 and len(steps) > 1, steps
  # The directory and metrics.json name the strategy; greedy decoding has no beam settings.
  assert greedy_dir == "decode_val_jsonl_10maxenc_greedy_2mindec_6maxdec_ckpt-0"
  assert beam_dir == "decode_val_jsonl_10maxenc_1beam_2mindec_6maxdec_ckpt-0"
  assert greedy_flags["search"] == "greedy" and "search" not in beam_flags
  beam_only = beam_search.BeamSettings(beam_size=1).written()
  assert beam_only["beam_size"] == 1 and beam_only["length_penalty_alpha"] is None
  assert {k: beam_flags.pop(k) for k in beam_only} == beam_only
  assert not set(beam_only) & set(greedy_flags)
  del greedy_flags["search"]
  assert list(greedy_flags.items()) == list(beam_flags.items())


def test_greedy_is_continuous_decodes_search_at_beam_size_one():
  """Continuous decode's search (make_search, attention kept) of a batch: greedy decoding gives
  the beam search's winners at beam size 1, attention and p_gens included."""
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(hidden_dim=5, emb_dim=6, vocab_size=len(vocab), max_dec_steps=6,
                       min_dec_steps=2, coverage=True, beam_size=1)
  model = _model(hps, vocab)
  rng = np.random.default_rng(1)
  enc_len = np.array([9, 4, 7], np.int32)
  ext = rng.integers(4, len(vocab) + 2, (3, 9)).astype(np.int32)  # two article OOVs
  ext[np.arange(9)[None, :] >= enc_len[:, None]] = vocab_lib.PAD_ID
  batch = Batch(enc_input=np.where(ext >= len(vocab), vocab_lib.UNK_ID, ext), enc_len=enc_len,
                enc_input_ext=ext, num_oovs=np.array([2, 2, 2], np.int32))
  settings = search_lib.Settings.from_hparams(hps, keep_attention=True)
  results = [summaries.run_search(summaries.make_search(
      model, strategies.make(hps.replace(search=name), settings)), batch)
             for name in ("greedy", "beam")]
  lengths = set()
  for greedy, beam in zip(*results):
    assert [part is None for part in greedy] == [part is None for part in beam]
    for key, value in beam._asdict().items():
      if value is not None:
        np.testing.assert_allclose(getattr(greedy, key), value, rtol=1e-6, atol=1e-6,
                                   err_msg=key)
    lengths.add(int(beam.length))
    assert np.allclose(beam.attn[:int(beam.length)].sum(axis=1), 1.0)
  assert len(lengths) > 1, lengths


def test_settings_are_the_decode_flags():
  hps = config.HParams(beam_size=5, max_dec_steps=90, min_dec_steps=30, block_ngram_repeat=3,
                       length_penalty_alpha=0.6, first_step_context="zeros")
  assert search_lib.Settings.from_hparams(hps) == search_lib.Settings(
      max_dec_steps=90, min_dec_steps=30, keep_attention=False, first_step_context="zeros",
      controls=controls.make({"min_dec_steps": 30, "block_ngram_repeat": 3}))
  assert search_lib.Settings.from_hparams(hps, keep_attention=True).keep_attention
  beam = strategies.make(hps, search_lib.Settings.from_hparams(hps))
  assert isinstance(beam, beam_search.BeamSearch) and beam.rows == 5
  assert beam.options == beam_search.BeamSettings(beam_size=5, length_penalty_alpha=0.6)
  greedy = strategies.make(hps.replace(search="greedy"), search_lib.Settings.from_hparams(hps))
  assert isinstance(greedy, greedy_search.GreedySearch) and greedy.rows == 1
  assert greedy.options == search_lib.StrategySettings()


def test_search_settings_written_out_name_the_strategy():
  hps = config.HParams(beam_size=5, max_dec_steps=90, min_dec_steps=30)
  # The beam search's other settings and the controls' (but min_dec_steps, written first) at
  # their declared defaults, whichever are registered and declared.
  beam_extras = {name: default for name, _, default, _ in beam_search.BeamSettings.declared()
                 if name not in ("beam_size", "length_penalty_alpha")}
  controls_off = {name: default for name, _, default, _ in controls.settings()
                  if name != "min_dec_steps"}
  assert strategies.written(hps) == {
      "min_dec_steps": 30, "max_dec_steps": 90, "beam_size": 5,
      "length_penalty_alpha": None, **beam_extras, "first_step_context": "original",
      **controls_off}
  assert strategies.written(hps.replace(length_penalty_alpha=0.6), constants=True) == {
      "search": "beam", "min_dec_steps": 30, "max_dec_steps": 90, "beam_size": 5,
      "ranking": "gnmt_length_penalty", "length_penalty_alpha": 0.6, **beam_extras,
      "first_step_context": "original", **controls_off}
  greedy = hps.replace(search="greedy", first_step_context="zeros")
  for constants in (False, True):
    assert strategies.written(greedy, constants) == {
        "search": "greedy", "min_dec_steps": 30, "max_dec_steps": 90,
        "first_step_context": "zeros", **controls_off}
  assert strategies.dir_name(greedy) == "greedy_30mindec_90maxdec_zerosctx"


def test_a_beam_search_flag_with_greedy_decoding_is_an_error():
  greedy = config.HParams(search="greedy")
  for flag in ("beam_size", "length_penalty_alpha"):
    with pytest.raises(DataError, match=f"--{flag} is a setting of --search=beam, not of "
                                        "--search=greedy"):
      strategies.check_flags(greedy, {"mode", flag})
  # Left out, or with the beam search, they are fine; the shared decode flags are both's.
  strategies.check_flags(greedy, {"min_dec_steps", "max_dec_steps", "first_step_context",
                                  "block_ngram_repeat"})
  strategies.check_flags(config.HParams(), {"beam_size", "block_ngram_repeat"})
