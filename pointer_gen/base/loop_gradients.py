"""The gradients of a loop's steps taken once, around the loop: a sum over the steps computed
after it (LateGradient; the LSTM's recurrent kernel, recurrent_kernel_gradient), a step's matmul
whose kernel is transposed once before it (loop_matmul). The encoder's recurrence uses all three;
the attention's hand_gradient implementation, LateGradient for the encoder states.

Each function here stands for a plain formula, named in its docstring together with the test
that holds it to that formula; `tools/dev/benchmark.py --ablation` swaps the plain versions in to
measure each one.
"""

import tensorflow as tf


class LateGradient:
  """A gradient term summed over a loop's steps, computed once after the loop instead.

  TensorFlow's loop gradient adds each step's gradient of a tensor every step reads (a weight,
  the encoder states) to a running total: a product and a sum over that tensor at every step.
  Where each step's term is a product of something the forward loop returns and the gradient
  of something made before the loop, the sum over steps is one matmul after the loop.
  `attach(value, source)` returns `value` unchanged, made before the loop; its gradient d
  passes through and `gradient_fn(d, *inputs)` becomes `source`'s gradient, where `inputs`
  are the loop's outputs, handed over with `set_inputs` once the loop has run. The loop's own
  per-step terms for `source` must be left out (a None gradient), or they would count twice.
  Plain formula: the loop's own per-step gradient; test_kernels.test_late_gradient_needs_its_inputs,
  and the gradients it gives in test_layers.test_encoder_gradients_equal_the_plain_recurrence and
  test_model.test_training_gradients_equal_the_plain_formulation.
  """

  def __init__(self, gradient_fn):
    self._gradient_fn = gradient_fn
    self._inputs = None

  def attach(self, value, source):

    @tf.custom_gradient
    def passthrough(value, source):
      def gradient(d_value):
        if self._inputs is None:
          raise RuntimeError("LateGradient.set_inputs was not called before the gradient")
        # Named: these ops run after the loop, outside any of the model's scopes.
        with tf.name_scope(self._gradient_fn.__name__.lstrip("_")):
          return d_value, self._gradient_fn(d_value, *self._inputs)

      return tf.identity(value), gradient

    return passthrough(value, source)

  def set_inputs(self, *inputs):
    self._inputs = inputs


def recurrent_kernel_gradient(d_gates, outputs):
  """sum over t of h_{t-1}^T d_gates_t: d_gates, the gradient of every step's gates
  [L, B, 4H]; outputs [L, B, H], every step's h (h_{-1} = 0) -> [H, 4H].
  Plain formula: the LSTM's automatic gradient for its recurrent kernel;
  test_layers.test_encoder_gradients_equal_the_plain_recurrence."""
  units = tf.shape(outputs)[2]
  previous = tf.concat([tf.zeros_like(outputs[:1]), outputs[:-1]], axis=0)  # [L, B, H]
  return tf.matmul(tf.reshape(previous, [-1, units]),
                   tf.reshape(d_gates, [-1, 4 * units]), transpose_a=True)  # [H, 4H]


@tf.custom_gradient
def loop_matmul(x, kernel, kernel_t):
  """x @ kernel for a step of a loop: x [B, N], kernel [N, M], kernel_t its transpose [M, N],
  made ONCE before the loop. Only x gets a gradient here: the kernel's is summed after the
  loop (LateGradient, recurrent_kernel_gradient).

  The automatic gradient multiplies the output's gradient by the kernel with transpose_b at
  every step, and oneDNN re-lays-out the kernel each time; with the transpose made once it
  does not.
  Plain formula: tf.matmul(x, kernel); test_kernels.test_loop_matmul_gradient_equals_matmuls.
  """

  def gradient(d_output):  # [B, M]
    return tf.matmul(d_output, kernel_t), None, None  # [B, N]

  return tf.matmul(x, kernel), gradient  # [B, M]
