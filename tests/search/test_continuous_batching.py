"""Continuous batching: slots refilled as their searches end, and the last searches gathered
into fewer rows, give every article the summary it gets decoded alone, in data order."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention
from pointer_gen import config
from pointer_gen.base import precision
from pointer_gen.data.batch import Example
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.model.model_config import ModelConfig
from pointer_gen.search import beam as beam_search
from pointer_gen.search import continuous_batching
from pointer_gen.search import contract as search_lib
from pointer_gen.search import registry as strategies
from pointer_gen.search.controls import registry as controls

from test_beam_search import VOCAB
from test_beam_search import _articles
from test_beam_search import _random_model

MAX_ENC_STEPS = 9


@pytest.mark.parametrize("first_step_context,block,seed,compiled,slots,name", [
    ("original", 0, 0, False, 3, "beam"), ("zeros", 2, 1, False, 3, "beam"),
    ("original", 0, 0, True, 5, "beam"),
    *(("original", 0, 2, True, 3, name) for name in strategies.STRATEGIES if name != "beam")])
def test_slots_give_the_summaries_of_one_article_at_a_time(first_step_context, block, seed,
                                                          compiled, slots, name):
  """name: the registered strategy (every one but the beam search with its default settings;
  the beam search with 3 beams and `block`)."""
  model = _random_model(pointer_gen=True, coverage=True, seed=seed)
  enc_input, enc_len, ext, _ = _articles(10, MAX_ENC_STEPS, seed)
  settings = search_lib.Settings(
      max_dec_steps=8, min_dec_steps=1, first_step_context=first_step_context,
      controls=controls.make({"min_dec_steps": 1, "block_ngram_repeat": block}))
  searched = attention.SearchAttention.of(config.HParams(compiled_attention=compiled), "decode")
  strategy_class = strategies.STRATEGIES[name]
  options = (beam_search.BeamSettings(beam_size=3) if name == "beam"
             else strategy_class.Options())
  strategy = strategy_class(settings, options, searched)
  decoder = continuous_batching.SlotDecoder(model, strategy, num_slots=slots,
                                            max_enc_steps=MAX_ENC_STEPS)
  admitted = []
  admit = decoder._admit
  decoder._admit = lambda search, slots, *args: (admitted.append(list(slots)),
                                                 admit(search, slots, *args))[1]
  gathered = []  # sizes of the runs on the last searches alone
  run_gathered = decoder._run_gathered
  decoder._run_gathered = lambda search, *args: (gathered.append(len(search.step)),
                                                 run_gathered(search, *args))[1]
  examples = [Example(enc_input=enc_input[n, :enc_len[n]], enc_input_ext=ext[n, :enc_len[n]],
                      num_oovs=max(0, int(ext[n].max()) - model.vocab_size + 1))
              for n in range(len(enc_len))]
  decoded = list(decoder.decode(examples))
  # Each example comes back itself, in order.
  index = {id(example): n for n, example in enumerate(examples)}
  assert [index[id(example)] for example, _ in decoded] == list(range(len(examples)))

  # One article at a time, of a batch size not known when tracing, as decode's searches are.
  ids = tf.TensorSpec([None, None], tf.int32)
  alone = tf.function(lambda *a: strategy.search(model, *a), autograph=False,
                      input_signature=[ids, tf.TensorSpec([None], tf.int32), ids,
                                       tf.TensorSpec([], tf.int32)])
  steps = []
  for example, result in decoded:
    n = index[id(example)]
    want = alone(enc_input[n:n + 1, :enc_len[n]], enc_len[n:n + 1],
                 ext[n:n + 1, :enc_len[n]], example.num_oovs)
    length = int(want.length[0])
    assert int(result.length) == length, f"article {n}"
    np.testing.assert_array_equal(result.tokens, want.tokens[0].numpy())
    np.testing.assert_allclose(result.log_prob, want.log_prob[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.p_gens[:length], want.p_gens[0, :length],
                               rtol=1e-5, atol=1e-5)
    steps.append(length)
  # Articles of different lengths stopped at different steps, and slots were refilled one by
  # one as their searches ended, not as a whole batch.
  assert len(set(enc_len.tolist())) > 3 and len(set(steps)) > 1
  assert admitted[0] == list(range(slots)) and sum(map(len, admitted)) == len(examples)
  assert any(len(free) < slots for free in admitted[1:])
  # The end of the stream ran on fewer rows, a power of two, down to the last search alone.
  assert gathered and gathered[-1] == 1
  assert all(size < slots and size & (size - 1) == 0 for size in gathered), gathered


def test_empty_stream_and_attention_are_handled():
  model = _random_model(pointer_gen=True, coverage=False, seed=0)
  beam = beam_search.BeamSettings(beam_size=2)
  decoder = continuous_batching.SlotDecoder(
      model, beam_search.BeamSearch(search_lib.Settings(max_dec_steps=3, min_dec_steps=0), beam),
      num_slots=2, max_enc_steps=4)
  assert list(decoder.decode([])) == []
  with pytest.raises(ValueError, match="does not keep attention"):
    continuous_batching.SlotDecoder(
        model, beam_search.BeamSearch(search_lib.Settings(3, 0, keep_attention=True), beam),
        num_slots=2, max_enc_steps=4)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_the_cell_says_what_the_decoder_state_holds(policy):
  """The decoder state continuous batching keeps is the one the cell describes (state_spec),
  part for part the state the model's encoder gives and the cell's step returns."""
  model = model_lib.PointerGenerator(ModelConfig(VOCAB, emb_dim=6, hidden_dim=5, coverage=True),
                                     dtype=precision.policy(policy))
  model.build_all()
  enc_input, enc_len, _, _ = _articles(3, MAX_ENC_STEPS, 0)
  states, features, mask, state = model.encode(enc_input, enc_len)
  _, stepped = model.cell(model.embedding(enc_input[:, 0]), state,
                          attention.Memory(states, features, mask))
  spec = model.cell.state_spec(MAX_ENC_STEPS)
  assert [s.name for s in spec] == ["c", "h", "context", "coverage"]
  for value in (state, stepped):
    assert [(v.shape.as_list(), v.dtype) for v in value] == [
        ([3] + s.shape[1:].as_list(), s.dtype) for s in spec]
  hidden = model.hidden_dim
  assert [s.shape.as_list() for s in model.cell.state_spec()] == [
      [None, hidden], [None, hidden], [None, 2 * hidden], [None, None]]
  assert spec[0].dtype == (tf.bfloat16 if policy == "mixed_bfloat16" else tf.float32)
  assert spec[3].dtype == tf.float32
