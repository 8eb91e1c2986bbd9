"""Reads checkpoints written by the original TF1 code (abisee/pointer-generator) into pointer_gen.

The original saves name-based checkpoints (`model.ckpt-NNN` in train/, `bestmodel-NNN` in eval/)
holding the model's variables under its variable scopes, an `/Adagrad` accumulator beside each
trainable variable (train checkpoints only) and `global_step`. `MAPPING` below is the table from
those names to our variables, with the transform each needs; `convert_to_run` writes the result
as the newest checkpoint of a run's train dir, which every mode then reads.
"""

import dataclasses
import os
from typing import Callable

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import run_record
from pointer_gen.training import training_state

# TF1's LSTMCell adds this constant to the forget gate at run time; Keras has no such constant,
# so it is folded into the converted bias.
FORGET_BIAS = 1.0
ADAGRAD_SLOT = "/Adagrad"
GLOBAL_STEP = "global_step"
# TF 1.0's LSTMCell named its weights `weights`/`biases`; TF >= 1.2 names them `kernel`/`bias`.
_TF10_NAMES = {"lstm_cell/kernel": "lstm_cell/weights", "lstm_cell/bias": "lstm_cell/biases"}
_DECODER = "seq2seq/decoder/attention_decoder/"


def _same(value, accumulator, weight):
  del accumulator, weight
  return value


def _weight_shape(value, accumulator, weight):
  """The original's 1x1 convolution filters [1, 1, 2H or 1, 2H] hold our plain matrices."""
  del accumulator
  return value.reshape(weight.shape)


def _keras_gate_order(value):
  """TF1 packs the gate columns as i, j (candidate), f, o; Keras as i, f, c (candidate), o."""
  i, j, f, o = np.split(value, 4, axis=-1)
  return np.concatenate([i, f, j, o], axis=-1)


# TF1's LSTM kernel [in + H, 4H] acts on concat([inputs, h]): its first rows are Keras's kernel,
# its last H rows the recurrent kernel.
def _lstm_input_rows(value, accumulator, weight):
  del accumulator
  return _keras_gate_order(value[:weight.shape[0]])


def _lstm_recurrent_rows(value, accumulator, weight):
  del accumulator
  return _keras_gate_order(value[-weight.shape[0]:])


def _lstm_bias(value, accumulator, weight):
  del weight
  bias = _keras_gate_order(value)
  if not accumulator:
    # The constant only shifts the value: the gradient, hence the accumulator, is unchanged.
    units = bias.shape[0] // 4
    bias[units:2 * units] += FORGET_BIAS
  return bias


@dataclasses.dataclass(frozen=True)
class Entry:
  """One variable of the original: its TF >= 1.2 name, its shape as a function of (H hidden,
  E emb, V vocab), and the weights it becomes: (attribute path in our model,
  transform(value, accumulator, weight) -> value) pairs. The same transform turns the
  variable's Adagrad accumulator into our weight's (`accumulator` True)."""
  name: str
  shape: Callable[[int, int, int], tuple]
  targets: tuple
  pointer_gen_only: bool = False
  coverage_only: bool = False


def _lstm(scope, cell):
  """The two variables of a TF1 LSTMCell reading E-wide inputs, as three Keras LSTMCell weights."""
  return (
      Entry(f"{scope}/lstm_cell/kernel", lambda h, e, v: (e + h, 4 * h),
            ((f"{cell}.kernel", _lstm_input_rows),
             (f"{cell}.recurrent_kernel", _lstm_recurrent_rows))),
      Entry(f"{scope}/lstm_cell/bias", lambda h, e, v: (4 * h,), ((f"{cell}.bias", _lstm_bias),)),
  )


def _dense(name, shape, path, **kind):
  return Entry(name, shape, ((path, _same),), **kind)


# Every `Linear` of the original acts on the concatenation of its arguments; each of our Dense
# layers takes the same arguments in the same order as the original's model, so their matrices are
# copied as they are: Attention on [c; h] (TF1 flattens the LSTMStateTuple (c, h)), the input
# projection on [emb; context], calculate_pgen on [context; c; h; x], AttnOutputProjection on
# [h; context].
MAPPING = (
    _dense("seq2seq/embedding/embedding", lambda h, e, v: (v, e), "embedding.embeddings"),
    *_lstm("seq2seq/encoder/bidirectional_rnn/fw", "encoder.fw_cell"),
    *_lstm("seq2seq/encoder/bidirectional_rnn/bw", "encoder.bw_cell"),
    _dense("seq2seq/reduce_final_st/w_reduce_c", lambda h, e, v: (2 * h, h),
           "reduce_state.w_reduce_c"),
    _dense("seq2seq/reduce_final_st/w_reduce_h", lambda h, e, v: (2 * h, h),
           "reduce_state.w_reduce_h"),
    _dense("seq2seq/reduce_final_st/bias_reduce_c", lambda h, e, v: (h,),
           "reduce_state.bias_reduce_c"),
    _dense("seq2seq/reduce_final_st/bias_reduce_h", lambda h, e, v: (h,),
           "reduce_state.bias_reduce_h"),
    Entry(_DECODER + "W_h", lambda h, e, v: (1, 1, 2 * h, 2 * h),
          (("cell.attention.memory_layer.kernel", _weight_shape),)),
    _dense(_DECODER + "v", lambda h, e, v: (2 * h,), "cell.attention.v"),
    Entry(_DECODER + "coverage/w_c", lambda h, e, v: (1, 1, 1, 2 * h),
          (("cell.attention.w_c", _weight_shape),), coverage_only=True),
    _dense(_DECODER + "Attention/Linear/Matrix", lambda h, e, v: (2 * h, 2 * h),
           "cell.attention.query_layer.kernel"),
    _dense(_DECODER + "Attention/Linear/Bias", lambda h, e, v: (2 * h,),
           "cell.attention.query_layer.bias"),
    _dense(_DECODER + "Linear/Matrix", lambda h, e, v: (e + 2 * h, e),
           "cell.input_projection.kernel"),
    _dense(_DECODER + "Linear/Bias", lambda h, e, v: (e,), "cell.input_projection.bias"),
    *_lstm(_DECODER.rstrip("/"), "cell.lstm_cell"),
    _dense(_DECODER + "calculate_pgen/Linear/Matrix", lambda h, e, v: (4 * h + e, 1),
           "cell.p_gen_layer.kernel", pointer_gen_only=True),
    _dense(_DECODER + "calculate_pgen/Linear/Bias", lambda h, e, v: (1,), "cell.p_gen_layer.bias",
           pointer_gen_only=True),
    _dense(_DECODER + "AttnOutputProjection/Linear/Matrix", lambda h, e, v: (3 * h, h),
           "cell.output_hidden.kernel"),
    _dense(_DECODER + "AttnOutputProjection/Linear/Bias", lambda h, e, v: (h,),
           "cell.output_hidden.bias"),
    _dense("seq2seq/output_projection/w", lambda h, e, v: (h, v), "cell.vocab_projection.kernel"),
    _dense("seq2seq/output_projection/v", lambda h, e, v: (v,), "cell.vocab_projection.bias"),
)


def _weight(model, path):
  value = model
  for part in path.split("."):
    value = getattr(value, part)
  return value


def entries_for(pointer_gen, coverage):
  """The entries a model of that kind has."""
  return [e for e in MAPPING
          if (pointer_gen or not e.pointer_gen_only) and (coverage or not e.coverage_only)]


def _open(prefix):
  try:
    return tf.train.load_checkpoint(prefix)
  except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
    raise DataError(f"--tf1_checkpoint={prefix}: not a readable checkpoint; give its prefix "
                    f"(`.../model.ckpt-NNN` or `.../bestmodel-NNN`, without .index/.data/.meta): "
                    f"{e}") from e


class Tf1Checkpoint:
  """The variables of an original checkpoint, found under TF >= 1.2 or TF 1.0 names."""

  def __init__(self, prefix):
    self.prefix = prefix
    self._reader = _open(prefix)
    self._shapes = self._reader.get_variable_to_shape_map()

  def name_of(self, name):
    """The name `name` (TF >= 1.2 spelling) has in this checkpoint, or None."""
    if name in self._shapes:
      return name
    for new, old in _TF10_NAMES.items():
      if name.endswith(new) and name[:-len(new)] + old in self._shapes:
        return name[:-len(new)] + old
    return None

  def has(self, name):
    return self.name_of(name) is not None

  def shape(self, name):
    return tuple(self._shapes[self.name_of(name)])

  def value(self, name):
    return np.asarray(self._reader.get_tensor(self.name_of(name)))

  @property
  def names(self):
    return set(self._shapes)

  def trained_dims(self):
    """The flags the checkpoint was trained with, read off its shapes, for error messages."""
    embedding, reduce_bias = "seq2seq/embedding/embedding", "seq2seq/reduce_final_st/bias_reduce_c"
    if not (self.has(embedding) and self.has(reduce_bias)):
      return ""
    (vocab, emb), (hidden,) = self.shape(embedding), self.shape(reduce_bias)
    return (f" (its shapes say --vocab_size={vocab} --emb_dim={emb} --hidden_dim={hidden}, "
            f"--pointer_gen={self.has(_DECODER + 'calculate_pgen/Linear/Matrix')}, "
            f"--coverage={self.has(_DECODER + 'coverage/w_c')})")


def _check_kind(ckpt, pointer_gen, coverage):
  """A checkpoint of another kind of model than the flags ask for fails with the flag to fix."""
  has_pgen = ckpt.has(_DECODER + "calculate_pgen/Linear/Matrix")
  has_coverage = ckpt.has(_DECODER + "coverage/w_c")
  if has_coverage and not coverage:
    raise DataError(f"{ckpt.prefix} is a coverage model ({_DECODER}coverage/w_c): convert it "
                    "with --coverage")
  if coverage and not has_coverage:
    raise DataError(f"{ckpt.prefix} has no {_DECODER}coverage/w_c: it was trained without "
                    "coverage; convert it without --coverage, then make the coverage model with "
                    "`python -m pointer_gen.run --mode=train --coverage "
                    "--convert_to_coverage_model`")
  if has_pgen and not pointer_gen:
    raise DataError(f"{ckpt.prefix} is a pointer-generator ({_DECODER}calculate_pgen): "
                    "convert it with --pointer_gen=true")
  if pointer_gen and not has_pgen:
    raise DataError(f"{ckpt.prefix} has no {_DECODER}calculate_pgen/Linear/Matrix: it is the "
                    "attention baseline; convert it with --pointer_gen=false")


def load(prefix, model, optimizer=None):
  """Assigns the TF1 checkpoint's weights to `model` (built with its variables) and, when
  `optimizer` (built on the model's trainable variables) is given, its Adagrad accumulators.

  Everything is checked before anything is assigned. Returns the checkpoint's global step
  (None if it has none and no optimizer state is asked for).
  """
  ckpt = Tf1Checkpoint(prefix)
  _check_kind(ckpt, model.pointer_gen, model.coverage)
  entries = entries_for(model.pointer_gen, model.coverage)
  hidden, emb, vocab = model.hidden_dim, model.emb_dim, model.vocab_size
  for entry in entries:
    if not ckpt.has(entry.name):
      raise DataError(f"{prefix}: variable {entry.name} is missing; this is not a checkpoint of "
                      f"the original pointer-generator code{ckpt.trained_dims()}")
    expected = entry.shape(hidden, emb, vocab)
    if ckpt.shape(entry.name) != expected:
      raise DataError(
          f"{prefix}: variable {ckpt.name_of(entry.name)} has shape {list(ckpt.shape(entry.name))} "
          f"but --vocab_size={vocab} --emb_dim={emb} --hidden_dim={hidden} give "
          f"{list(expected)}; set the flags the model was trained with{ckpt.trained_dims()}")

  slots = [ckpt.name_of(e.name) + ADAGRAD_SLOT for e in entries]
  if optimizer is not None:
    if not any(slot in ckpt.names for slot in slots):
      raise DataError(f"{prefix} has no Adagrad accumulators (an eval `bestmodel` checkpoint "
                      "has none): convert it with --drop_optimizer_state to start training "
                      "state afresh")
    for entry, slot in zip(entries, slots):
      if slot not in ckpt.names:
        raise DataError(f"{prefix}: the Adagrad accumulator {slot} is missing (or convert "
                        "with --drop_optimizer_state)")
      if ckpt.shape(slot) != ckpt.shape(entry.name):
        raise DataError(f"{prefix}: the Adagrad accumulator {slot} has shape "
                        f"{list(ckpt.shape(slot))}, its variable {list(ckpt.shape(entry.name))}")
    if GLOBAL_STEP not in ckpt.names:
      raise DataError(f"{prefix}: variable {GLOBAL_STEP} is missing (or convert with "
                      "--drop_optimizer_state)")

  assignments = []
  for entry in entries:
    value = ckpt.value(entry.name)
    slot = ckpt.name_of(entry.name) + ADAGRAD_SLOT
    accumulator = ckpt.value(slot) if optimizer is not None else None
    for path, transform in entry.targets:
      weight = _weight(model, path)
      assignments.append((weight, transform(value.copy(), False, weight)))
      if optimizer is not None:
        assignments.append((_accumulator(optimizer, weight),
                            transform(accumulator.copy(), True, weight)))
  for variable, value in assignments:
    variable.assign(value.astype(variable.dtype))

  # Left out on purpose when no optimizer is given: the accumulators and the step.
  unused = sorted(ckpt.names - {ckpt.name_of(e.name) for e in entries} - set(slots)
                  - {GLOBAL_STEP})
  if unused:
    logging.warning("%s: %d variables not converted: %s", prefix, len(unused), ", ".join(unused))
  step = int(ckpt.value(GLOBAL_STEP)) if GLOBAL_STEP in ckpt.names else None
  logging.info("Converted %d variables of %s (global step %s)%s.", len(entries), prefix, step,
               " with their Adagrad accumulators" if optimizer is not None else "")
  return step


def _accumulator(optimizer, variable):
  # Keras 3's Adagrad keeps one accumulator per trainable variable, in the order of the list it
  # was built on; it exposes no public lookup.
  return optimizer._accumulators[optimizer._get_variable_index(variable)]


def convert_to_run(hps, vocab, prefix, drop_optimizer_state=False):
  """Converts the TF1 checkpoint `prefix` into `<run>/train/model.ckpt-<step>`, the train dir's
  newest checkpoint, which train (resuming), eval, decode and export read.

  With the optimizer state (default) the Adagrad accumulators and global step carry over, so
  training goes on exactly where the original stopped; with `drop_optimizer_state` the
  accumulators start at --adagrad_init_acc and the step at 0. Returns (path, step).
  """
  train_dir = hps.train_dir
  existing = checkpoints.newest(train_dir) or tf.io.gfile.glob(
      os.path.join(train_dir, checkpoints.CHECKPOINT_NAME + "*"))
  if existing:
    raise DataError(f"{train_dir} already holds checkpoints ({existing}); convert into a new "
                    "run (another --exp_name or --log_root) rather than mix runs")
  ckpt = Tf1Checkpoint(prefix)
  embedding = "seq2seq/embedding/embedding"
  if ckpt.has(embedding) and ckpt.shape(embedding)[0] != len(vocab):
    raise DataError(
        f"--vocab_path={hps.vocab_path} with --vocab_size={hps.vocab_size} gives {len(vocab)} "
        f"vocab entries but {prefix}'s {embedding} has {ckpt.shape(embedding)[0]} rows: use the "
        f"vocab file the model was trained with and --vocab_size={ckpt.shape(embedding)[0]}")

  state = training_state.TrainingState.from_hparams(hps, len(vocab))
  step = load(prefix, state.model, None if drop_optimizer_state else state.optimizer)
  if drop_optimizer_state:
    step = 0
  else:
    state.step.assign(step)
    # The Keras optimizer counts its updates: as many as the original had applied.
    state.optimizer.iterations.assign(step)
  os.makedirs(train_dir, exist_ok=True)
  # Saved as the trainer saves, so the state file lists it and a resumed run rotates it out.
  path = state.manager(train_dir).save(checkpoint_number=step)
  run_record.write(hps)  # the modes that read the run build this model without repeating flags
  logging.info("Wrote %s (step %d) from %s.", path, step, prefix)
  return path, step
