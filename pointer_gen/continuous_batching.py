"""Continuous batching for single-pass decode: beam search over a fixed number of slots, each
searching its own article, where a slot whose search has ended takes the next article at once
instead of the whole batch waiting for its slowest article.

Every slot keeps its own step counter and results (beam_search's per-article search state), and
each step is beam_search.advance, the same code as the one-batch search: an article's summary
is the one it gets decoded alone. Memory (encoder states, features, mask, extended ids) lives in
variables of max_enc_steps positions, updated in place for the slots that take a new article;
the search state is a tensor per quantity, passed through three compiled functions: `_encode`
(the next num_slots articles in one encoder pass), `_admit` (start encoded articles' searches in
the slots that are free) and `_run` (advance every slot until one more search has ended).
"""

import itertools

import numpy as np
import tensorflow as tf

from pointer_gen import beam_search
from pointer_gen import vocab as vocab_lib


class SlotDecoder:
  """Decodes a stream of articles with `num_slots` searches side by side."""

  def __init__(self, model, settings, num_slots, max_enc_steps):
    if settings.keep_attention:
      raise ValueError("continuous batching does not keep attention distributions")
    self.model, self.settings = model, settings
    self.num_slots, self.width = num_slots, max_enc_steps
    k = settings.beam_size
    rows = num_slots * k
    dtype = model.compute_dtype
    hidden = model.hidden_dim
    units = 2 * hidden  # the attention's W_h features
    # An empty slot's mask is all ones so that its (discarded) attention stays finite.
    self.memory = {
        "states": tf.Variable(tf.zeros([rows, max_enc_steps, 2 * hidden], dtype),
                              trainable=False),
        "features": tf.Variable(tf.zeros([rows, max_enc_steps, units], dtype), trainable=False),
        "mask": tf.Variable(tf.ones([rows, max_enc_steps], dtype), trainable=False),
        "ext_ids": tf.Variable(tf.zeros([rows, max_enc_steps], tf.int32), trainable=False),
    }
    zeros = lambda width: tf.zeros([rows, width], dtype)
    state = (zeros(hidden), zeros(hidden), zeros(2 * hidden), zeros(max_enc_steps))
    # Empty slots stand at max_dec_steps: ended searches, which `advance` leaves alone.
    self._empty = beam_search.search_state(state, num_slots, max_enc_steps, settings,
                                           step=settings.max_dec_steps)
    search_spec = tf.nest.map_structure(tf.TensorSpec.from_tensor, self._empty)
    ids = tf.TensorSpec([None, None], tf.int32)
    self._encode = tf.function(self._encode_articles, input_signature=[
        ids, tf.TensorSpec([None], tf.int32), ids])
    rows_of = lambda t: tf.TensorSpec([None] + t.shape[1:].as_list(), t.dtype)  # [A, ...]
    encoded_spec = ({name: rows_of(v) for name, v in self.memory.items()},
                    tuple(rows_of(s) for s in state))
    self._admit = tf.function(self._admit_articles, input_signature=[
        search_spec, tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32),
        encoded_spec])
    self._run = tf.function(self._run_until_one_ends, input_signature=[
        search_spec, tf.TensorSpec([], tf.int32)])

  def _encode_articles(self, enc_input, enc_len, enc_input_ext):
    """Memory and step-0 decoder state of A articles (enc_input, enc_input_ext [A, L],
    L <= max_enc_steps; enc_len [A]), padded to max_enc_steps positions: ([A, max_enc_steps,
    ...] dict, [A, ...] tuple). One encoder pass for many articles, as a padded batch."""
    memory, state = beam_search.encode(self.model, enc_input, enc_len, self.settings)
    memory["ext_ids"] = enc_input_ext
    pad = self.width - tf.shape(enc_input)[1]

    def padded(value):  # [A, L, ...] -> [A, max_enc_steps, ...]; padding is masked (mask 0)
      padding = tf.concat([[[0, 0], [0, pad]], tf.zeros([tf.rank(value) - 2, 2], tf.int32)], 0)
      return tf.pad(value, padding)

    c, h, context, coverage = state
    return ({name: padded(value) for name, value in memory.items()},
            (c, h, context, padded(coverage)))

  def _admit_articles(self, search, slots, picks, encoded):
    """Starts the searches of the encoded articles `picks` [A] (rows of `encoded`, from
    _encode) in `slots` [A]; returns the new search state."""
    memory, state = tf.nest.map_structure(lambda t: tf.gather(t, picks), encoded)
    memory, state = beam_search.tile_beams(memory, state, self.settings.beam_size)
    k = self.settings.beam_size
    rows = tf.reshape(slots[:, None] * k + tf.range(k)[None, :], [-1, 1])  # [A*K, 1]
    for name, variable in self.memory.items():
      variable.scatter_nd_update(rows, memory[name])  # [A*K, max_enc_steps, ...]
    started = beam_search.search_state(state, tf.size(slots), self.width, self.settings)
    out = {}
    for name, value in search.items():
      if name == "state":
        out[name] = tuple(tf.tensor_scatter_nd_update(old, rows, new)
                          for old, new in zip(value, started[name]))  # [S*K, ...]
      else:
        out[name] = tf.tensor_scatter_nd_update(value, slots[:, None], started[name])  # [S, ...]
    return out

  def _run_until_one_ends(self, search, max_oovs):
    """Advances every slot until one more search has ended (or all have); returns the search
    state and every slot's current winner."""
    memory = {name: tf.convert_to_tensor(v) for name, v in self.memory.items()}
    ended_before = tf.reduce_sum(tf.cast(beam_search.finished(search, self.settings), tf.int32))

    def running(v):
      ended = beam_search.finished(v, self.settings)
      return tf.reduce_any(~ended) & tf.equal(tf.reduce_sum(tf.cast(ended, tf.int32)),
                                              ended_before)

    (search,) = tf.while_loop(
        running,
        lambda v: (beam_search.advance(self.model, memory, v, max_oovs, self.settings),),
        (search,), maximum_iterations=self.settings.max_dec_steps)
    return search, beam_search.winners(search, self.settings)

  def decode(self, examples):
    """Yields (example, result) for each of `examples` in their order.

    examples: dicts with enc_input and enc_input_ext (int arrays of the article's length, at
    most max_enc_steps) and num_oovs. result: as beam_search's outputs for one article
    (tokens [max_dec_steps], length, score, log_prob, p_gens [max_dec_steps]), numpy.
    Articles are encoded num_slots at a time, ahead of the slots that will take them.
    """
    examples = iter(examples)
    slot_of = {}  # example index -> slot
    waiting = {}  # example index -> example, admitted and not yet yielded
    finished = {}  # example index -> result, not yet yielded (an earlier one still runs)
    encoded, queue = None, []  # the last _encode output; its rows not yet admitted
    next_index = next_out = 0
    # The widest OOV list of every article admitted so far: ended slots keep their extended ids
    # (and are still computed, then discarded). Wider than an article needs only adds columns
    # of probability 0 to its final distribution.
    max_oovs = 0
    search = self._empty
    while True:
      free = sorted(set(range(self.num_slots)) - set(slot_of.values()))
      while free:
        if not queue:
          batch = list(itertools.islice(examples, self.num_slots))
          if not batch:
            break
          encoded = self._encode(*_padded(batch))
          queue = list(enumerate(batch))
        admitted, queue = queue[:len(free)], queue[len(free):]
        slots, free = free[:len(admitted)], free[len(admitted):]
        search = self._admit(search, np.array(slots, np.int32),
                             np.array([row for row, _ in admitted], np.int32), encoded)
        for slot, (_, example) in zip(slots, admitted):
          max_oovs = max(max_oovs, int(example["num_oovs"]))
          slot_of[next_index] = slot
          waiting[next_index] = example
          next_index += 1
      if not slot_of:
        break
      search, best = self._run(search, np.int32(max_oovs))
      ended = beam_search.finished(search, self.settings).numpy()
      best = {name: value.numpy() for name, value in best.items()}
      for index, slot in list(slot_of.items()):
        if ended[slot]:
          finished[index] = {name: value[slot] for name, value in best.items()}
          del slot_of[index]
      while next_out in finished:
        yield waiting.pop(next_out), finished.pop(next_out)
        next_out += 1


def _padded(examples):
  """enc_input [A, L], enc_len [A], enc_input_ext [A, L] of examples padded to the longest."""
  lengths = np.array([len(e["enc_input"]) for e in examples], np.int32)
  enc_input = np.full([len(examples), lengths.max()], vocab_lib.PAD_ID, np.int32)
  enc_input_ext = enc_input.copy()
  for n, example in enumerate(examples):
    enc_input[n, :lengths[n]] = example["enc_input"]
    enc_input_ext[n, :lengths[n]] = example["enc_input_ext"]
  return enc_input, lengths, enc_input_ext
