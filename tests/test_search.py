"""The search's contract: a second strategy, greedy decoding written here, runs through
single-pass decode (continuous batching, files, metrics) and gives the beam search's summaries
at beam size 1; and the settings come whole from the flags."""

import json
import os
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from pointer_gen import config
from pointer_gen import decode
from pointer_gen import layers
from pointer_gen import model as model_lib
from pointer_gen import search as search_lib
from pointer_gen import vocab as vocab_lib


class Greedy(search_lib.Strategy):
  """Each article's one row takes its most probable token of the final distribution, [STOP]
  only from min_dec_steps on: what the beam search does with one hypothesis."""

  rows = 1
  traced = 0  # advance's traces: the decode ran this strategy

  class Tokens(NamedTuple):
    tokens: tf.Tensor  # [N, T]
    log_prob: tf.Tensor  # [N]
    p_gens: tf.Tensor  # [N, T]
    stopped: tf.Tensor  # [N] bool

  def initial(self, decoder_state, articles, length, step=0):
    steps = self.settings.max_dec_steps
    return search_lib.State(tf.fill([articles], step), decoder_state, Greedy.Tokens(
        tf.fill([articles, steps], vocab_lib.PAD_ID), tf.zeros([articles]),
        tf.zeros([articles, steps]), tf.zeros([articles], tf.bool)))

  def finished(self, state):
    return (state.step >= self.settings.max_dec_steps) | state.hypotheses.stopped

  def advance(self, model, memory, state, max_oovs):
    Greedy.traced += 1
    done, step = state.hypotheses, state.step
    previous = tf.gather(done.tokens, tf.maximum(step - 1, 0), batch_dims=1)  # [N]
    previous = tf.where(step > 0, previous, vocab_lib.START_ID)
    vocab_logits, attn, p_gen, decoder_state = self.decoder_step(model, memory,
                                                                 state.decoder_state, previous)
    dist = layers.final_distribution(tf.nn.softmax(vocab_logits), attn, p_gen,
                                     memory["ext_ids"], max_oovs)  # [N, V + OOVs]
    too_early = ((step < self.settings.min_dec_steps)[:, None]
                 & tf.equal(tf.range(tf.shape(dist)[1]), vocab_lib.STOP_ID)[None, :])
    best = tf.argmax(tf.where(too_early, -1.0, dist), axis=1, output_type=tf.int32)  # [N]
    now = tf.one_hot(step, self.settings.max_dec_steps, on_value=True, off_value=False)
    new = Greedy.Tokens(tf.where(now, best[:, None], done.tokens),
                        done.log_prob + tf.math.log(tf.gather(dist, best, batch_dims=1)),
                        tf.where(now, p_gen[:, None], done.p_gens),
                        tf.equal(best, vocab_lib.STOP_ID))
    return search_lib.hold_ended(state, search_lib.State(step + 1, decoder_state, new),
                                 ~self.finished(state), self.rows)

  def winners(self, state):
    done = state.hypotheses
    return {"tokens": done.tokens, "length": state.step,
            "score": done.log_prob / tf.cast(state.step + 1, tf.float32),
            "log_prob": done.log_prob, "p_gens": done.p_gens}


WORDS = [f"w{i}" for i in range(16)]


def _corpus(directory, num, seed):
  """A JSONL file of `num` articles of 3-10 of WORDS and an unseen word or two."""
  rng = np.random.default_rng(seed)
  path = os.path.join(directory, "val.jsonl")
  with open(path, "w", encoding="utf-8") as f:
    for n in range(num):
      words = list(rng.choice(WORDS + ["oovA", "oovB"], rng.integers(3, 11)))
      f.write(json.dumps({"article": " ".join(words), "abstract": " ".join(words[:3])}) + "\n")
  return path


def test_a_greedy_strategy_decodes_single_pass_as_beam_size_one(tmp_path):
  vocab = vocab_lib.Vocab(WORDS)
  hps = config.HParams(
      mode="decode", single_pass=True, data_path=_corpus(str(tmp_path), 7, seed=0),
      log_root=str(tmp_path / "greedy"), exp_name="run", hidden_dim=5, emb_dim=6,
      vocab_size=len(vocab), batch_size=3, max_enc_steps=10, max_dec_steps=6, min_dec_steps=2,
      beam_size=1, coverage=True, compiled_attention=False)
  tf.keras.utils.set_random_seed(0)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  rng = np.random.default_rng(0)
  for var in model.weights:
    var.assign(rng.normal(0.0, 0.6, var.shape).astype(np.float32))
  # A likelier [STOP], so that some summaries end before max_dec_steps.
  bias = model.cell.vocab_projection.bias
  bias.assign(tf.tensor_scatter_nd_update(bias, [[vocab_lib.STOP_ID]], [2.0]))

  def decoded(hps, **strategy):
    result = decode.SinglePassDecoder(hps, vocab, model, "model.ckpt-0", **strategy).run()
    directory = os.path.join(hps.run_dir, decode.decode_dir_name(hps, "model.ckpt-0"))
    with open(os.path.join(directory, "per_example.jsonl"), encoding="utf-8") as f:
      per_example = [json.loads(line) for line in f]
    summaries = [open(os.path.join(directory, "decoded", f"{i:06d}_decoded.txt"),
                      encoding="utf-8").read() for i in range(result["num_examples"])]
    return result, per_example, summaries

  greedy = decoded(hps, strategy=Greedy)
  assert Greedy.traced > 0
  beam = decoded(hps.replace(log_root=str(tmp_path / "beam")))
  assert greedy == beam
  result, per_example, summaries = greedy
  assert result["num_examples"] == 7 and len(set(summaries)) > 1
  # Some summaries stopped between min_dec_steps and max_dec_steps ([STOP] counted), some ran
  # to the end.
  steps = {row["steps"] for row in per_example}
  assert min(steps) >= 2 + 1 and len(steps) > 1, steps


def test_settings_are_the_decode_flags():
  hps = config.HParams(beam_size=5, max_dec_steps=90, min_dec_steps=30, block_ngram_repeat=3,
                       length_penalty_alpha=0.6, first_step_context="zeros")
  assert search_lib.Settings.from_hparams(hps) == search_lib.Settings(
      beam_size=5, max_dec_steps=90, min_dec_steps=30, keep_attention=False,
      block_ngram_repeat=3, length_penalty_alpha=0.6, first_step_context="zeros")
  assert search_lib.Settings.from_hparams(hps, keep_attention=True).keep_attention
