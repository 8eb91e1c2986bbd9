"""The pointer-generator model: embedding, encoder, reduce-states and the decoder loop."""

from typing import Any, NamedTuple

import keras
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.base import precision
from pointer_gen.model import layers
from pointer_gen.model import model_config


class Outputs(NamedTuple):
  """The teacher-forced pass's outputs (PointerGenerator.call), float32 in every precision (the
  losses are computed in float32); B articles, T steps, L positions, V the vocabulary. The
  vocabulary logits come either for every step or for the R real steps alone (real_steps_only);
  the fields a pass does not make are None."""
  attn: Any  # [B, T, L]
  vocab_logits: Any = None  # [B, T, V], without real_steps_only
  real_positions: Any = None  # [R, 2] int32: (article, step) of each real step
  real_vocab_logits: Any = None  # [R, V]: the real steps' logits, in real_positions' order
  p_gen: Any = None  # [B, T] with copying (pointer_gen), else None


@keras.saving.register_keras_serializable("pointer_gen")
class PointerGenerator(model_config.Configured, keras.Model):
  """Teacher-forced forward pass for training and eval; the pieces beam search needs.

  `dtype` is the Keras dtype policy (precision.policy): every sub-layer is built with it, so
  under mixed_bfloat16 the variables are float32 and the computation bfloat16 (see
  precision.py for what stays float32). `config` is a model_config.ModelConfig, which the
  decoder cell shares.
  """

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    policy = self.dtype_policy
    # The embedding looks rows up in float32 and casts them: its gradient stays float32
    # per-token rows (IndexedSlices), which --clip_norm=original's norm counts.
    self.embedding = keras.layers.Embedding(
        config.vocab_size, config.emb_dim,
        embeddings_initializer=keras.initializers.TruncatedNormal(
            stddev=config.trunc_norm_init_std),
        name="embedding", dtype=policy)
    self.encoder = layers.Encoder(config.hidden_dim, config.rand_unif_init_mag, name="encoder",
                                  dtype=policy)
    self.reduce_state = layers.ReduceState(config.hidden_dim, config.trunc_norm_init_std,
                                           name="reduce_state", dtype=policy)
    self.cell = layers.PointerGeneratorCell(config, name="decoder", dtype=policy)

  @classmethod
  def from_hparams(cls, hps, vocab_size):
    model = cls(model_config.ModelConfig.from_hparams(hps, vocab_size),
                dtype=precision.policy(hps.precision))
    model.build_all()
    return model

  def build_all(self):
    """Creates every variable up front, so checkpoints restore and optimisers see them all."""
    self.embedding.build((None, None))
    self.encoder.build((None, None, self.emb_dim))
    self.reduce_state.build()
    self.cell.build()
    self.built = True

  def encode(self, enc_input, enc_len, for_xla=False):
    """enc_input [B, L] ids -> encoder states, their W_h features, mask, initial decoder state.

    States, features, mask, c, h and context are in the compute dtype; the coverage is float32.
    """
    length = tf.shape(enc_input)[1]
    mask = tf.sequence_mask(enc_len, length)  # [B, L] bool
    embedded = self.embedding(enc_input)  # [B, L, E]
    states, fw_state, bw_state = self.encoder(embedded, mask, for_xla=for_xla)  # [B, L, 2H]
    features = self.cell.attention.memory_features(states)  # [B, L, 2H]
    c, h = self.reduce_state(fw_state, bw_state)  # [B, H] each
    batch = tf.shape(enc_input)[0]
    context = tf.zeros([batch, 2 * self.hidden_dim], states.dtype)  # [B, 2H]
    coverage = tf.zeros([batch, length], precision.OUTPUT_DTYPE)  # [B, L]
    mask = tf.cast(mask, states.dtype)  # [B, L]
    return states, features, mask, (c, h, context, coverage)

  def call(self, batch, real_steps_only=False, for_xla=False, implementation=None):
    """Teacher forcing over `dec_input`; the vocabulary projection runs once, after the loop.

    Returns the Outputs: vocab_logits, attn and p_gen (pointer mode). With real_steps_only, the
    projection (the costliest part of training) skips the padding steps: real_positions and
    real_vocab_logits replace vocab_logits. for_xla bounds the loops, as XLA requires (it slows
    the plain graph). implementation: the attention implementation of every step, by default
    auto's for training (attention.auto("train")): this teacher-forced pass is trained and
    evaluated, never exported.
    """
    implementation = implementation or attention.auto("train")
    states, features, mask, state = self.encode(batch.enc_input, batch.enc_len, for_xla)
    memory = implementation.memory(attention.Memory(states, features, mask))
    embedded = self.embedding(batch.dec_input)  # [B, T, E]
    steps = tf.shape(embedded)[1]
    # A TensorArray, not indexing: see Encoder.call.
    embedded_by_step = tf.TensorArray(embedded.dtype, size=steps).unstack(
        tf.transpose(embedded, [1, 0, 2]))  # T x [B, E]
    # The memory each step's attention reads, and what the implementation computes after the
    # loop (a gradient summed over the steps) once it is told every step's attention.
    teacher_forcing = implementation.teacher_forcing(memory, steps)

    def body(t, state, outputs_ta, contexts_ta, attn_ta, p_gen_ta):
      (output, context, attn, p_gen), state = self.cell(
          embedded_by_step.read(t), state, teacher_forcing.at(t), implementation=implementation)
      outputs_ta = outputs_ta.write(t, output)
      contexts_ta = contexts_ta.write(t, context)
      attn_ta = attn_ta.write(t, attn)
      if p_gen is not None:
        p_gen_ta = p_gen_ta.write(t, p_gen)
      return t + 1, state, outputs_ta, contexts_ta, attn_ta, p_gen_ta

    # Decoder outputs and contexts in the compute dtype (the projection's inputs); attention and
    # p_gen in float32.
    arrays = [tf.TensorArray(dtype, size=steps)
              for dtype in (states.dtype, states.dtype, precision.OUTPUT_DTYPE,
                            precision.OUTPUT_DTYPE)]
    _, _, outputs_ta, contexts_ta, attn_ta, p_gen_ta = tf.while_loop(
        lambda t, *_: t < steps, body, [tf.constant(0), state] + arrays,
        maximum_iterations=steps if for_xla else None)
    outputs = tf.transpose(outputs_ta.stack(), [1, 0, 2])  # [B, T, H]
    contexts = tf.transpose(contexts_ta.stack(), [1, 0, 2])  # [B, T, 2H]
    result = Outputs(attn=tf.transpose(attn_ta.stack(), [1, 0, 2]))  # [B, T, L]
    teacher_forcing.after(result.attn)
    if real_steps_only:
      positions = tf.where(tf.sequence_mask(batch.dec_len, steps))  # [R, 2]
      result = result._replace(
          real_positions=tf.cast(positions, tf.int32),
          real_vocab_logits=self.cell.vocab_logits(
              tf.gather_nd(outputs, positions), tf.gather_nd(contexts, positions)))  # [R, V]
    else:
      result = result._replace(
          vocab_logits=self.cell.vocab_logits(outputs, contexts))  # [B, T, V]
    if self.pointer_gen:
      result = result._replace(p_gen=tf.transpose(p_gen_ta.stack()))  # [B, T]
    return result
