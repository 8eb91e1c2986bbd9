"""--precision: the Keras dtype policy the model is built with.

`float32` (the default) computes everything in float32, as the original. `mixed_bfloat16` keeps
every variable in float32 (so checkpoints are the same in both precisions and Adagrad's
accumulators and updates are float32) and runs the matmuls, the LSTMs and the attention scores
and context in bfloat16. What must stay exact enough is float32 in both precisions: the
softmaxes (attention and vocabulary), p_gen, the attention distribution and the coverage
accumulated from it, the losses, the gradients Keras casts back to the variables' dtype, and
the clipping norm. bfloat16 has float32's exponent range, so no loss scaling is needed.

The policy is Keras's, so the same flag works on CPU, GPU and TPU: every layer casts its
variables to the compute dtype inside its call; the layers cast to float32 where noted.
"""

import keras
import tensorflow as tf

from pointer_gen.base.errors import DataError

PRECISIONS = ("float32", "mixed_bfloat16")

# What stays float32 in every precision: probabilities, p_gen, attention, coverage, losses.
OUTPUT_DTYPE = tf.float32


def policy(name):
  """The Keras dtype policy for --precision=name."""
  if name not in PRECISIONS:
    raise DataError(f"--precision={name}: expected one of {', '.join(PRECISIONS)}")
  return keras.DTypePolicy(name)


def native_bf16_flags(cpuinfo_path="/proc/cpuinfo"):
  """The CPU's bfloat16 instruction flags (avx512_bf16, amx_bf16) that /proc/cpuinfo lists, for
  reports only: the precision flag never depends on them. Empty if there are none or the file
  cannot be read (not Linux)."""
  try:
    with open(cpuinfo_path, encoding="utf-8") as f:
      for line in f:
        if line.startswith("flags"):
          present = set(line.split(":", 1)[1].split())
          return sorted(present & {"avx512_bf16", "amx_bf16"})
  except OSError:
    pass
  return []
