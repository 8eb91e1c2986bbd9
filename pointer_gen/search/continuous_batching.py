"""Continuous batching for single-pass decode: a fixed number of slots, each searching its own
article, where a slot whose search has ended takes the next article at once instead of the whole
batch waiting for its slowest article.

It runs any search strategy (contract.py; registry.py names them). Every slot keeps its own
step counter and hypotheses (the strategy's per-article search state), and each step is the
strategy's `advance`, the same code as the one-batch search: an article's summary is the one it
gets decoded alone. Memory (encoder states, features, mask, extended ids) lives in variables of
max_enc_steps positions, updated in place for the slots that take a new article; the search
state (a contract.State of tensors) passes through three compiled functions: `_encode`
(the next num_slots articles in one encoder pass), `_admit` (start encoded articles' searches in
the slots that are free) and `_run` (advance every slot until one more search has ended).
Once no article is left, the searches still running are gathered into fewer rows (a power of
two) whenever at most half of the rows in use still run, so the end of a stream does not pay
for ended slots.
"""

import functools
import itertools
import operator

import numpy as np
import tensorflow as tf

from pointer_gen import attention as attention_lib
from pointer_gen.search import contract
from pointer_gen.text import vocab as vocab_lib


class SlotDecoder:
  """Decodes a stream of articles with `num_slots` searches side by side, each a search of
  `strategy` (a contract.Strategy, with its contract.Settings and its attention, an
  attention.SearchAttention)."""

  def __init__(self, model, strategy, num_slots, max_enc_steps):
    settings = strategy.settings
    if settings.keep_attention:
      raise ValueError("continuous batching does not keep attention distributions")
    self.model, self.settings, self.strategy = model, settings, strategy
    self.num_slots, self.width = num_slots, max_enc_steps
    k = self.strategy.rows
    rows = num_slots * k
    dtype = model.compute_dtype
    hidden = model.hidden_dim
    units = 2 * hidden  # the attention's W_h features
    # [S*C, max_enc_steps, ...]: slot s holds rows s*C .. s*C+C-1, C the copies of the entry
    # the attention keeps for an article's K rows (rows_kept: K, or 1 for an entry its rows
    # share); laid out as the attention reads it. An empty slot's mask is all ones so that its
    # (discarded) attention stays finite.
    attention = self.strategy.attention.steps
    self._copies = attention.rows_kept(k)
    zeros = lambda copies, *shape, dtype=tf.int32: tf.zeros(
        [num_slots * copies, max_enc_steps, *shape], dtype)  # [S*C, W, ...]
    copies = self._copies
    memory = attention.memory(attention_lib.Memory(
        zeros(copies.states, 2 * hidden, dtype=dtype), zeros(copies.features, units, dtype=dtype),
        tf.ones_like(zeros(copies.mask, dtype=dtype)),
        # The extended ids and their search.copy_index, made when an article is encoded.
        zeros(copies.ext_ids), zeros(copies.copy_segment), zeros(copies.article_ids)))
    self.memory = tf.nest.map_structure(lambda t: tf.Variable(t, trainable=False), memory)
    # The decoder state as the model's cell says it is; the parts that span the memory's
    # positions are padded to max_enc_steps when an article is encoded.
    self._spans_memory = tuple(spec.shape[1] is None for spec in model.cell.state_spec())
    state = tuple(tf.zeros([rows] + spec.shape[1:].as_list(), spec.dtype)
                  for spec in model.cell.state_spec(max_enc_steps))
    # Empty slots stand at max_dec_steps: ended searches, which `advance` leaves alone.
    self._empty = self.strategy.initial(
        state, tf.nest.map_structure(tf.convert_to_tensor, self.memory),
        step=settings.max_dec_steps)
    search_spec = tf.nest.map_structure(tf.TensorSpec.from_tensor, self._empty)
    ids = tf.TensorSpec([None, None], tf.int32)
    # Each traced once, for this decoder's settings (their input signatures fix the shapes).
    self._encode = tf.function(_own(self._encode_articles), autograph=False, input_signature=[
        ids, tf.TensorSpec([None], tf.int32), ids])
    rows_of = lambda t: tf.TensorSpec([None] + t.shape[1:].as_list(), t.dtype)  # [A, ...]
    encoded_spec = (tf.nest.map_structure(rows_of, self.memory),
                    tuple(rows_of(s) for s in state))
    self._admit = tf.function(_own(self._admit_articles), autograph=False, input_signature=[
        search_spec, tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32),
        encoded_spec])
    scalar = tf.TensorSpec([], tf.int32)
    self._run = tf.function(_own(self._run_in_slots), autograph=False,
                            input_signature=[search_spec, scalar])
    # The end of a stream: the searches still running, gathered into fewer rows.
    self._run_gathered = tf.function(_own(self._run_until_one_ends), autograph=False, input_signature=[
        tf.nest.map_structure(rows_of, self._empty), encoded_spec[0], scalar])

  def _encode_articles(self, enc_input, enc_len, enc_input_ext):
    """Memory and step-0 decoder state of A articles (enc_input, enc_input_ext [A, L],
    L <= max_enc_steps; enc_len [A]), padded to max_enc_steps positions: ([A, max_enc_steps,
    ...] attention.Memory, [A, ...] tuple). One encoder pass for many articles, as a padded
    batch."""
    memory, state = contract.encode(self.model, enc_input, enc_len, self.settings,
                                      self.strategy.attention)
    pad = self.width - tf.shape(enc_input)[1]

    def padded(value):  # [A, L, ...] -> [A, max_enc_steps, ...]; padding is masked (mask 0)
      padding = tf.concat([[[0, 0], [0, pad]], tf.zeros([tf.rank(value) - 2, 2], tf.int32)], 0)
      return tf.pad(value, padding)

    memory = self.strategy.attention.steps.memory(memory._replace(
        states=padded(memory.states), features=padded(memory.features),
        mask=padded(memory.mask)))
    # Of the padded ids, as the attention spans max_enc_steps positions (those past an
    # article's end, id 0, get no attention).
    memory = contract.with_copy_index(memory, padded(enc_input_ext))
    return memory, tuple(padded(part) if spans else part
                         for part, spans in zip(state, self._spans_memory))

  def _admit_articles(self, search, slots, picks, encoded):
    """Starts the searches of the encoded articles `picks` [A] (rows of `encoded`, from
    _encode) in `slots` [A]; returns the new search state."""
    memory, state = tf.nest.map_structure(lambda t: tf.gather(t, picks), encoded)
    k = self.strategy.rows
    memory, state = contract.tile_rows(memory, state, k, self.strategy.attention.steps)
    rows_of = lambda copies: tf.reshape(slots[:, None] * copies + tf.range(copies)[None, :],
                                        [-1, 1])  # [A*copies, 1]: the slots' rows
    rows = rows_of(k)  # [A*K, 1]
    tf.nest.map_structure(
        lambda variable, copies, value: variable.scatter_nd_update(
            rows_of(copies), value),  # [A*C, max_enc_steps, ...]
        self.memory, self._copies, memory)
    started = self.strategy.initial(state, memory)
    return contract.map_state(
        lambda old, new: tf.tensor_scatter_nd_update(old, slots[:, None], new),  # [S, ...]
        lambda old, new: tf.tensor_scatter_nd_update(old, rows, new),  # [S*K, ...]
        search, started)

  def _run_in_slots(self, search, max_oovs):
    # Read here, not passed in: a tensor of a variable's value held outside would make the next
    # in-place update copy the whole variable.
    memory = tf.nest.map_structure(tf.convert_to_tensor, self.memory)
    return self._run_until_one_ends(search, memory, max_oovs)

  def _run_until_one_ends(self, search, memory, max_oovs):
    """Advances every search until one more has ended (or all have); returns the search state
    and every search's current winner."""
    strategy = self.strategy
    ended_before = tf.reduce_sum(tf.cast(strategy.finished(search), tf.int32))

    def running(search):
      ended = strategy.finished(search)
      return tf.reduce_any(~ended) & tf.equal(tf.reduce_sum(tf.cast(ended, tf.int32)),
                                              ended_before)

    def advance(search):
      advanced = strategy.advance(self.model, memory, search, max_oovs)
      # A step may leave a row count of 1 unknown (one slot of a one-row strategy: greedy,
      # sampling), which the loop refuses; the rows are the same on every step.
      for new, old in zip(tf.nest.flatten(advanced), tf.nest.flatten(search)):
        new.set_shape(old.shape)
      return (advanced,)

    (search,) = tf.while_loop(running, advance, (search,),
                              maximum_iterations=self.settings.max_dec_steps)
    return search, strategy.winners(search)

  def decode(self, examples):
    """Yields (example, result) for each of `examples` in their order.

    examples: data.batch.Examples (enc_input and enc_input_ext of the article's length, at most
    max_enc_steps; num_oovs). result: the strategy's winners for one article, a
    contract.SearchResult of numpy values (tokens [max_dec_steps], length, score, log_prob,
    p_gens [max_dec_steps]; no attn).
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
    memory = None  # None: the slots' variables; else the gathered memory of the last searches
    rows_in_use = self.num_slots
    exhausted = False
    while True:
      free = sorted(set(range(rows_in_use)) - set(slot_of.values()))
      while free and not exhausted:
        if not queue:
          batch = list(itertools.islice(examples, self.num_slots))
          if not batch:
            exhausted = True
            break
          encoded = self._encode(*_padded(batch))
          queue = list(enumerate(batch))
        admitted, queue = queue[:len(free)], queue[len(free):]
        slots, free = free[:len(admitted)], free[len(admitted):]
        search = self._admit(search, np.array(slots, np.int32),
                             np.array([row for row, _ in admitted], np.int32), encoded)
        for slot, (_, example) in zip(slots, admitted):
          max_oovs = max(max_oovs, int(example.num_oovs))
          slot_of[next_index] = slot
          waiting[next_index] = example
          next_index += 1
      if not slot_of:
        break
      if exhausted and rows_in_use > 1 and 2 * len(slot_of) <= rows_in_use:
        # No article is left to take the ended slots: the searches still running go on alone,
        # with ended slots added up to a power of two, so that the compiled step sees at most
        # log2(num_slots) shapes (the xla attention compiles once per shape).
        order = sorted(slot_of, key=slot_of.get)
        running = [slot_of[index] for index in order]
        size = 1 << (len(running) - 1).bit_length()
        ended_slots = sorted(set(range(rows_in_use)) - set(running))[:size - len(running)]
        search, memory = self._gather(search, self.memory if memory is None else memory,
                                      running + ended_slots)
        slot_of = {index: position for position, index in enumerate(order)}
        rows_in_use = size
      if memory is None:
        search, best = self._run(search, np.int32(max_oovs))
      else:
        search, best = self._run_gathered(search, memory, np.int32(max_oovs))
      ended = self.strategy.finished(search).numpy()
      best = best.map(lambda value: value.numpy())
      for index, slot in list(slot_of.items()):
        if ended[slot]:
          finished[index] = best.map(operator.itemgetter(slot))
          del slot_of[index]
      while next_out in finished:
        yield waiting.pop(next_out), finished.pop(next_out)
        next_out += 1

  def _gather(self, search, memory, slots):
    """The search state and memory of `slots` alone, in that order."""
    rows_of = lambda copies: (np.array(slots, np.int32)[:, None] * copies
                              + np.arange(copies, dtype=np.int32)).reshape(-1)  # [n*copies]
    rows = rows_of(self.strategy.rows)  # [n*K]
    memory = tf.nest.map_structure(lambda value, copies: tf.gather(value, rows_of(copies)),
                                   memory, self._copies)  # [n*C, ...]
    search = contract.map_state(lambda value: tf.gather(value, slots),  # [n, ...]
                                  lambda value: tf.gather(value, rows), search)  # [n*K, ...]
    return search, memory


def _padded(examples):
  """enc_input [A, L], enc_len [A], enc_input_ext [A, L] of examples padded to the longest."""
  lengths = np.array([len(e.enc_input) for e in examples], np.int32)
  enc_input = np.full([len(examples), lengths.max()], vocab_lib.PAD_ID, np.int32)
  enc_input_ext = enc_input.copy()
  for n, example in enumerate(examples):
    enc_input[n, :lengths[n]] = example.enc_input
    enc_input_ext[n, :lengths[n]] = example.enc_input_ext
  return enc_input, lengths, enc_input_ext


def _own(method):
  """`method` (a bound method) as a function of its own to TensorFlow's retracing statistics,
  which it keeps per Python function (its code): the functions of decoders of other settings
  (the Python API builds one per set of settings) are traced once each, not retraced, and
  would otherwise count as the retracing of one function, which TensorFlow warns of."""
  return functools.partial(method)
