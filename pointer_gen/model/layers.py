"""Keras 3 layers of the pointer-generator: encoder, state reduction, attention, decoder cell."""

import keras
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.base import loop_gradients
from pointer_gen.base.precision import OUTPUT_DTYPE
from pointer_gen.model import model_config


def _uniform(magnitude):
  return keras.initializers.RandomUniform(-magnitude, magnitude)


def _trunc_normal(std):
  return keras.initializers.TruncatedNormal(stddev=std)


@keras.saving.register_keras_serializable("pointer_gen")
class Encoder(keras.layers.Layer):
  """One bidirectional LSTM layer over the embedded article, respecting its true length.

  The weights are two Keras LSTMCells (gates i, f, c, o), but the recurrence is run here: each
  direction's input projections for every position are one matmul before its loop, and each
  step does one recurrent matmul. Outputs at padding positions are zero, as TF1's
  bidirectional_dynamic_rnn. The cells share this layer's dtype policy: under mixed_bfloat16 the
  recurrence runs in bfloat16 on the float32 weights cast inside this layer's call.
  """

  def __init__(self, hidden_dim, rand_unif_init_mag=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_dim = hidden_dim
    self.rand_unif_init_mag = rand_unif_init_mag

    def cell(name):
      # unit_forget_bias starts the forget bias at 1.0, which is what TF1's LSTMCell adds at
      # run time; the gradients of a trained bias and of a bias plus a constant are the same.
      return keras.layers.LSTMCell(
          hidden_dim, kernel_initializer=_uniform(rand_unif_init_mag),
          recurrent_initializer=_uniform(rand_unif_init_mag), unit_forget_bias=True, name=name,
          dtype=self.dtype_policy)

    self.fw_cell = cell("fw")
    self.bw_cell = cell("bw")

  def build(self, input_shape):
    self.fw_cell.build((None, input_shape[-1]))
    self.bw_cell.build((None, input_shape[-1]))
    super().build(input_shape)

  def call(self, embedded, mask, for_xla=False):
    """embedded [B, L, E], mask [B, L] bool -> states [B, L, 2H], fw/bw final (h, c) each [B, H].

    for_xla bounds the loops, which XLA requires (and which slows the plain graph's gradient).
    """
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)  # [B]
    # The backward direction reads each article from its own last real word.
    backward = tf.reverse_sequence(embedded, lengths, seq_axis=1, batch_axis=0)  # [B, L, E]
    # Two independent loops, not one over both directions: TensorFlow runs them side by side
    # on two cores, forward and backward.
    fw_out, fw_state = self._direction(self.fw_cell, embedded, mask, lengths, for_xla)
    bw_out, bw_state = self._direction(self.bw_cell, backward, mask, lengths, for_xla)
    backward_out = tf.reverse_sequence(bw_out, lengths, seq_axis=1, batch_axis=0)  # [B, L, H]
    states = tf.concat([fw_out, backward_out], axis=2)  # [B, L, 2H]
    return states, fw_state, bw_state

  def _direction(self, cell, inputs, mask, lengths, bounded):
    """One direction's recurrence over inputs [B, L, E] whose real words come first: outputs
    [B, L, H] (zero past each article's end) and the final (h, c) at each article's last word,
    each [B, H] (zeros for an empty article).

    The loop runs every position of every article: past an article's end nothing it computes
    is used (its outputs are zeroed after the loop and the final state is read at the end),
    which is what masking the state at every step would give, without the masking's per-step
    operations and their gradients.
    """
    dtype = inputs.dtype
    batch, length = tf.shape(inputs)[0], tf.shape(inputs)[1]
    recurrent = tf.convert_to_tensor(cell.recurrent_kernel)  # [H, 4H]
    # Transposed once here for the backward pass's per-step products
    # (loop_gradients.loop_matmul).
    recurrent_t = tf.transpose(recurrent)  # [4H, H]
    # The input projection of every position as one matmul before the loop.
    projected = tf.einsum("ble,eg->lbg", inputs, tf.convert_to_tensor(cell.kernel)) + cell.bias  # [L, B, 4H]
    # The recurrent kernel's gradient, sum over steps of h_{t-1}^T d_gates_t, as one matmul
    # after the loop: d_gates_t is the gradient of projected_t (see loop_gradients.LateGradient).
    late = loop_gradients.LateGradient(loop_gradients.recurrent_kernel_gradient)
    projected = late.attach(projected, recurrent)  # [L, B, 4H]
    # Read per step from TensorArrays: indexing the whole tensor in the loop would make its
    # gradient a full-size [L, ...] tensor at every step.
    projected = tf.TensorArray(dtype, size=length).unstack(projected)
    zeros = tf.zeros([batch, self.hidden_dim], dtype)  # [B, H]

    def body(t, h, c, h_ta, c_ta):
      gates = projected.read(t) + loop_gradients.loop_matmul(h, recurrent, recurrent_t)  # [B, 4H]
      i, f, g, o = tf.split(gates, 4, axis=1)  # [B, H] each
      c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
      h = tf.sigmoid(o) * tf.tanh(c)
      return t + 1, h, c, h_ta.write(t, h), c_ta.write(t, c)

    _, _, _, h_ta, c_ta = tf.while_loop(
        lambda t, *_: t < length, body,
        [tf.constant(0), zeros, zeros, tf.TensorArray(dtype, size=length),
         tf.TensorArray(dtype, size=length)],
        maximum_iterations=length if bounded else None)
    h_all = h_ta.stack()  # [L, B, H]
    late.set_inputs(h_all)
    last = tf.stack([tf.maximum(lengths - 1, 0), tf.range(batch)], axis=1)  # [B, 2]
    nonempty = (lengths > 0)[:, None]  # [B, 1]
    final = tuple(tf.where(nonempty, tf.gather_nd(every_step, last), zeros)
                  for every_step in (h_all, c_ta.stack()))  # (h, c), [B, H] each
    outputs = tf.transpose(h_all, [1, 0, 2]) * tf.cast(mask, dtype)[:, :, None]  # [B, L, H]
    return outputs, final

  def get_config(self):
    return {**super().get_config(), "hidden_dim": self.hidden_dim,
            "rand_unif_init_mag": self.rand_unif_init_mag}


@keras.saving.register_keras_serializable("pointer_gen")
class ReduceState(keras.layers.Layer):
  """Maps the encoder's final forward and backward states to the decoder's initial state."""

  def __init__(self, hidden_dim, trunc_norm_init_std=1e-4, **kwargs):
    super().__init__(**kwargs)
    self.hidden_dim = hidden_dim
    self.trunc_norm_init_std = trunc_norm_init_std

  def build(self, input_shape=None):
    init = _trunc_normal(self.trunc_norm_init_std)
    h2 = 2 * self.hidden_dim
    self.w_reduce_c = self.add_weight(name="w_reduce_c", shape=(h2, self.hidden_dim),
                                      initializer=init)
    self.w_reduce_h = self.add_weight(name="w_reduce_h", shape=(h2, self.hidden_dim),
                                      initializer=init)
    # The original initialises these biases like the weights, not with zeros.
    self.bias_reduce_c = self.add_weight(name="bias_reduce_c", shape=(self.hidden_dim,),
                                         initializer=init)
    self.bias_reduce_h = self.add_weight(name="bias_reduce_h", shape=(self.hidden_dim,),
                                         initializer=init)
    super().build(input_shape)

  def call(self, fw_state, bw_state):
    """fw/bw (h, c) each [B, H] -> decoder initial (c, h) each [B, H]."""
    (fw_h, fw_c), (bw_h, bw_c) = fw_state, bw_state
    old_c = tf.concat([fw_c, bw_c], axis=1)  # [B, 2H]
    old_h = tf.concat([fw_h, bw_h], axis=1)  # [B, 2H]
    new_c = tf.nn.relu(tf.matmul(old_c, self.w_reduce_c) + self.bias_reduce_c)  # [B, H]
    new_h = tf.nn.relu(tf.matmul(old_h, self.w_reduce_h) + self.bias_reduce_h)  # [B, H]
    return new_c, new_h

  def get_config(self):
    return {**super().get_config(), "hidden_dim": self.hidden_dim,
            "trunc_norm_init_std": self.trunc_norm_init_std}


@keras.saving.register_keras_serializable("pointer_gen")
class BahdanauCoverageAttention(keras.layers.Layer):
  """e_i = v . tanh(W_h h_i + W_s [c; h] + b + w_c cov_i); masked softmax; context = sum a_i h_i.

  The weights are here; the step is an attention implementation's (attention/interface.py):
  the paper's equations, `eager`, or a fast one held to them. A formula with a new weight adds
  it here and uses it in attention/eager.py."""

  def __init__(self, units, use_coverage=False, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.use_coverage = use_coverage
    self.memory_layer = keras.layers.Dense(units, use_bias=False, name="W_h",
                                           dtype=self.dtype_policy)
    self.query_layer = keras.layers.Dense(units, use_bias=True, name="W_s",
                                          dtype=self.dtype_policy)

  def build(self, input_shape=None):
    self.memory_layer.build((None, None, self.units))
    self.query_layer.build((None, self.units))
    self.v = self.add_weight(name="v", shape=(self.units,), initializer="glorot_uniform")
    if self.use_coverage:
      # Shaped [1, units] so Glorot sees fan_in 1, as for the original's 1x1 convolution filter.
      self.w_c = self.add_weight(name="w_c", shape=(1, self.units), initializer="glorot_uniform")
    super().build(input_shape)

  def memory_features(self, encoder_states):
    """W_h h_i for every encoder position, computed once per article: [B, L, units]."""
    return self.memory_layer(encoder_states)

  def call(self, query, memory, coverage=None, implementation=None, rows=1):
    """query [B, 2H] = [c; h]; memory an attention.Memory as `implementation` laid it out
    and keeps it (attention/interface.py; its rows per article `rows`); coverage
    [B, L]. implementation: an attention implementation, by default auto's for a search
    (attention.DEFAULT_SEARCH).

    Returns context [B, 2H] in the compute dtype and the attention distribution [B, L] in
    float32 (precision.OUTPUT_DTYPE): the scores and the context are bfloat16 under
    mixed_bfloat16 (the layer casts its inputs and weights), the softmax is not.
    """
    implementation = implementation or attention.DEFAULT_SEARCH.steps
    return implementation.attend(self, query, memory, coverage, rows)  # [B, 2H], [B, L]

  def get_config(self):
    return {**super().get_config(), "units": self.units, "use_coverage": self.use_coverage}


@keras.saving.register_keras_serializable("pointer_gen")
class PointerGeneratorCell(model_config.Configured, keras.layers.Layer):
  """One decoder step: input feeding, LSTM, attention (with coverage), p_gen; plus the output
  projection to the vocabulary, applied to many steps at once after the decoder loop.

  The sub-layers share this layer's dtype policy and cast their own inputs and weights; this
  layer itself does not autocast its inputs, so that the coverage in the state stays float32
  (it sums up to max_dec_steps attention distributions; bfloat16 would round each sum to 3
  significant digits). p_gen, the attention and the vocabulary logits come out in float32.

  `config` (model_config.ModelConfig) is the model's, which builds the cell.
  """

  def __init__(self, config, **kwargs):
    kwargs["autocast"] = False
    super().__init__(**kwargs)
    self.config = config
    policy = self.dtype_policy
    self.attention = BahdanauCoverageAttention(2 * config.hidden_dim, config.coverage,
                                               name="attention", dtype=policy)
    self.input_projection = keras.layers.Dense(config.emb_dim, name="input_projection",
                                               dtype=policy)
    self.lstm_cell = keras.layers.LSTMCell(
        config.hidden_dim, kernel_initializer=_uniform(config.rand_unif_init_mag),
        recurrent_initializer=_uniform(config.rand_unif_init_mag), unit_forget_bias=True,
        name="lstm_cell", dtype=policy)
    self.p_gen_layer = (keras.layers.Dense(1, name="p_gen", dtype=policy)
                        if config.pointer_gen else None)
    self.output_hidden = keras.layers.Dense(config.hidden_dim, name="output_hidden",
                                            dtype=policy)
    self.vocab_projection = keras.layers.Dense(
        config.vocab_size, kernel_initializer=_trunc_normal(config.trunc_norm_init_std),
        bias_initializer=_trunc_normal(config.trunc_norm_init_std), name="vocab_projection",
        dtype=policy)

  def build(self, input_shape=None):
    h, e = self.hidden_dim, self.emb_dim
    self.attention.build()
    self.input_projection.build((None, e + 2 * h))
    self.lstm_cell.build((None, e))
    if self.p_gen_layer is not None:
      self.p_gen_layer.build((None, 4 * h + e))
    self.output_hidden.build((None, None, 3 * h))
    self.vocab_projection.build((None, None, h))
    super().build(input_shape)

  def call(self, embedded_input, state, memory, implementation=None, rows=1):
    """One step of teacher forcing or beam search.

    embedded_input [B, E]: embedding of the previous word.
    state: (c, h) [B, H] each, previous context [B, 2H] (all three in the compute dtype),
    coverage [B, L] float32 (zeros if unused).
    memory, implementation and rows: see BahdanauCoverageAttention.call.
    Returns (h [B, H], context [B, 2H], attn [B, L] float32, p_gen [B] float32 or None) and
    the new state.
    """
    c, h, context, coverage = state
    x = self.input_projection(tf.concat([embedded_input, context], axis=1))  # [B, E]
    h, (h, c) = self.lstm_cell(x, [h, c])  # [B, H]
    context, attn = self.attention(tf.concat([c, h], axis=1), memory, coverage,
                                   implementation=implementation, rows=rows)  # [B, 2H], [B, L]
    p_gen = None
    if self.p_gen_layer is not None:
      p_gen_logit = self.p_gen_layer(tf.concat([context, c, h, x], axis=1))  # [B, 1]
      p_gen = tf.sigmoid(tf.cast(p_gen_logit, OUTPUT_DTYPE))[:, 0]  # [B]
    return (h, context, attn, p_gen), (c, h, context, coverage + attn)

  def initial_attention(self, state, memory, implementation=None):
    """The original decode's attention from the initial state before step 0: returns the state
    with that context and, with coverage, that attention already added to the coverage.
    memory as `implementation` laid it out, one row per article."""
    c, h, _, coverage = state
    context, attn = self.attention(tf.concat([c, h], axis=1), memory, coverage,
                                   implementation=implementation)  # [B, 2H], [B, L]
    if self.coverage:
      coverage = coverage + attn
    return c, h, context, coverage

  def state_spec(self, memory_length=None):
    """What the decoder state (`call`'s `state`) holds: a tuple of named tf.TensorSpecs
    [rows, width] (rows None), in its order: c and h [H] and the previous context [2H] in the
    compute dtype, the coverage [L], one weight per memory position, float32. A part whose width
    is None with memory_length None spans the memory's positions."""
    h, dtype = self.hidden_dim, self.compute_dtype
    return (tf.TensorSpec([None, h], dtype, name="c"), tf.TensorSpec([None, h], dtype, name="h"),
            tf.TensorSpec([None, 2 * h], dtype, name="context"),
            tf.TensorSpec([None, memory_length], OUTPUT_DTYPE, name="coverage"))

  def vocab_logits(self, outputs, contexts):
    """outputs [..., H], contexts [..., 2H] -> logits over the fixed vocabulary [..., V], in
    float32: the softmax over them runs in float32 in every precision.

    In a lower compute precision the bias is added after the cast to float32, not fused with
    the matmul: oneDNN's bfloat16 matmul with a fused bias ran at float32's speed where the
    matmul alone used the CPU's bfloat16 unit, and the bias's gradient is then a float32 sum."""
    hidden = self.output_hidden(tf.concat([outputs, contexts], axis=-1))  # [..., H]
    projection = self.vocab_projection
    if hidden.dtype == OUTPUT_DTYPE:
      return projection(hidden)  # [..., V]
    with tf.name_scope(projection.name):
      kernel = tf.cast(projection.kernel, hidden.dtype)  # [H, V]
      logits = tf.matmul(tf.reshape(hidden, [-1, self.hidden_dim]), kernel)  # [N, V]
      logits = tf.reshape(logits, tf.concat([tf.shape(hidden)[:-1], [self.vocab_size]], 0))
      return tf.cast(logits, OUTPUT_DTYPE) + tf.cast(projection.bias, OUTPUT_DTYPE)  # [..., V]


def final_distribution(vocab_probs, attn, p_gen, enc_input_ext, max_oovs):
  """p_gen * P_vocab (extended with zeros) + (1 - p_gen) * attention scattered onto the
  extended ids; repeated article words sum.

  vocab_probs [B, V], attn [B, L], p_gen [B], enc_input_ext [B, L] int32 -> [B, V + max_oovs].
  """
  batch = tf.shape(vocab_probs)[0]
  length = tf.shape(attn)[1]
  generated = p_gen[:, None] * vocab_probs  # [B, V]
  generated = tf.pad(generated, [[0, 0], [0, max_oovs]])  # [B, V + N]
  batch_index = tf.tile(tf.range(batch)[:, None], [1, length])  # [B, L]
  indices = tf.stack([batch_index, enc_input_ext], axis=2)  # [B, L, 2]
  copied = (1.0 - p_gen)[:, None] * attn  # [B, L]
  return tf.tensor_scatter_nd_add(generated, indices, copied)  # [B, V + N]
