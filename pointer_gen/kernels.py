"""The hand-written gradients and XLA kernels behind the layers: the same numbers as the
plain formulas, computed with fewer passes over the large per-step tensors.

Each function here stands for a plain formula, named in its docstring together with the test
that holds it to that formula. The attention's (scores and context) are implementations of
`attention`'s interface, held to its reference, attention.Eager, by
tests/test_attention_implementations.py; `tools/benchmark.py --ablation` trains with each
registered implementation and swaps the plain versions of the others in to measure each one.
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



def attention_scores(memory_features, query_features, v, coverage=None, w_c=None,
                     compiled=False):
  """e_i = v . tanh(W_h h_i + W_s s + b [+ w_c cov_i]) with a hand-written gradient.

  memory_features [B, L, U], query_features [B, U], v [U], coverage [B, L], w_c [1, U] ->
  scores [B, L]. This runs at every decoder step over [B, L, U], which is where training's
  time goes, and each pass over such a tensor costs about the same whatever it computes: the
  dot with v is one matrix-vector product, and the backward pass reuses tanh's output and
  makes a single [B, L, U] tensor (the features' gradient) where the automatic gradient makes
  several broadcasts and products.

  compiled: tanh's input and output, and the gradient of its input, each from one XLA kernel
  (one pass over [B, L, U] where TensorFlow's ops make three and two), compiled once per
  [B, L] met. Else TensorFlow's ops alone, which any TensorFlow runtime can run (exports).
  Plain formula: attention.Eager.scores (the hand_gradient and hand_gradient_xla
  implementations); test_attention_implementations.
  """
  scores, scores_with_coverage = _SCORES[compiled]
  if coverage is None:
    return scores(memory_features, query_features, v)
  return scores_with_coverage(memory_features, query_features, v, coverage, w_c)


# Units summed per pass of compiled_attention_scores' loop (the largest divisor of the units up
# to this): the fastest of 2 to 32 at the paper's sizes over 64 articles of 4 hypotheses.
_UNITS_PER_PASS = 8


@tf.function(jit_compile=True, autograph=False)
def compiled_attention_scores(memory_features_t, query_features, v, coverage=None, w_c=None,
                              beams=1):
  """attention_scores' values, without a gradient (decoding), as one XLA kernel. XLA's tanh
  and order of summation may differ from TensorFlow's in the last bit. Compiled once per
  shape: continuous batching's shapes are fixed.

  The features come transposed, memory_features_t [N, U, L] (transpose_features): with
  positions innermost each add over U is one vector instruction over 16 positions, where over
  a contiguous U it is a scalar chain. They are shared by `beams` consecutive rows of
  query_features [N*beams, U] and coverage [N*beams, L] (beam search's hypotheses of one
  article): each article's features are read once for all its hypotheses. Returns
  [N*beams, L].

  The sum over U runs as a loop adding 8 units per pass: XLA writes the whole [N, beams, U, L]
  tensor of a sum over all U at once before reducing it (its sums of more than 32 terms are
  split in two), 4 bytes per element, where a sum of 8 is one fused kernel that writes only
  [N*beams, L]; from one article it makes no difference.
  Plain formula: attention.Eager.scores with the features repeated per hypothesis (the xla
  implementation); test_attention_implementations and
  test_kernels.test_compiled_attention_scores_equal_the_reference.
  """
  shape = tf.shape(memory_features_t)
  articles, length = shape[0], shape[2]
  units = memory_features_t.shape[1]
  chunk = max(c for c in range(1, _UNITS_PER_PASS + 1) if units % c == 0)
  query = tf.reshape(query_features, [articles, beams, units, 1])  # [N, K, U, 1]
  v = tf.reshape(v, [units, 1])  # [U, 1]
  if coverage is not None:
    coverage = tf.reshape(coverage, [articles, beams, 1, length])  # [N, K, 1, L]
    w_c = tf.reshape(w_c[0], [units, 1])  # [U, 1]

  def units_from(tensor, first, axis):  # chunk units of `tensor` from `first`, along `axis`
    begin = tf.one_hot(axis, tf.rank(tensor), on_value=first, dtype=tf.int32)
    size = tf.tensor_scatter_nd_update(tf.shape(tensor), [[axis]], [chunk])
    return tf.slice(tensor, begin, size)

  def add_units(first, scores):
    features = (units_from(memory_features_t, first, 1)[:, None]
                + units_from(query, first, 2))  # [N, K, chunk, L]
    if coverage is not None:
      features += coverage * units_from(w_c, first, 0)
    return first + chunk, scores + tf.reduce_sum(
        tf.tanh(features) * units_from(v, first, 0), axis=2)  # [N, K, L]

  _, scores = tf.while_loop(
      lambda first, _: first < units, add_units,
      (tf.constant(0), tf.zeros([articles, beams, length], memory_features_t.dtype)),
      # Not [None, beams, None]: with beams=1 (greedy decoding, --beam_size=1) and the sizes
      # unknown (a traced search's step-0 attention), a step's broadcast sum has an unknown
      # second dimension.
      shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None, None])))
  return tf.reshape(scores, [-1, length])  # [N*K, L]


# The activations one pass of shared_attention_scores' loop makes, at most (but at least one
# article's): a few MB stays in a CPU's cache between the ops that write and read it.
_SHARED_PASS_ELEMENTS = 1 << 20


def shared_attention_scores(memory_features, query_features, v, coverage=None, w_c=None,
                            beams=1):
  """attention_scores' values, without a gradient (decoding), with TensorFlow's ops only (any
  TensorFlow runtime runs them: exports), for memory shared by `beams` consecutive rows:
  memory_features [N, L, U], query_features [N*beams, U], coverage [N*beams, L] -> [N*beams, L].

  Each article's features are read once for its rows (repeated per row, they would be read
  `beams` times), and the articles go through in groups, a group per pass of a loop: the whole
  batch's activations at once ([N*beams, L, U], 105 MB at 32 x 4 x 400 x 512) go out to memory
  and back between the ops that make and reduce them, where a group's stay in the cache. The
  coverage term and the query are _activations' batched matmul, its operands made once.
  Plain formula: attention.Eager.scores with the features repeated per row (the shared
  implementation); test_attention_implementations and
  test_kernels.test_shared_attention_scores_equal_the_reference.
  """
  shape = tf.shape(memory_features)
  articles, length, units = shape[0], shape[1], shape[2]
  per_pass = tf.maximum(_SHARED_PASS_ELEMENTS // (beams * length * units), 1)
  query = tf.reshape(query_features, [articles, beams, 1, units])  # [N, K, 1, U]
  if coverage is not None:
    rows = tf.concat([tf.broadcast_to(w_c, tf.shape(query)), query], axis=2)  # [N, K, 2, U]
    coefficients = _coverage_coefficients(
        tf.reshape(coverage, [articles, beams, length]))  # [N, K, L, 2]

  def add_group(first, scores):
    group = lambda t: t[first:first + per_pass]  # [N, ...] -> [G, ...]
    features = group(memory_features)[:, None]  # [G, 1, L, U]
    if coverage is None:
      activations = tf.tanh(features + group(query))  # [G, K, L, U]
    else:
      activations = tf.tanh(features + tf.matmul(group(coefficients), group(rows)))
    return first + per_pass, scores.write(1 + first // per_pass,
                                          tf.reshape(_matvec(activations, v), [-1]))  # [G*K*L]

  # Flat groups after an empty one: no articles (no groups) concatenate to [0] too.
  empty = tf.TensorArray(memory_features.dtype, size=1, dynamic_size=True, infer_shape=False,
                         element_shape=[None]).write(0, tf.zeros([0], memory_features.dtype))
  _, scores = tf.while_loop(lambda first, _: first < articles, add_group, (0, empty))
  return tf.reshape(scores.concat(), [-1, length])  # [N*K, L]


def transpose_features(memory_features):
  """[N, L, U] -> [N, U, L], the layout compiled_attention_scores reads."""
  return tf.transpose(memory_features, [0, 2, 1])


def _matvec(values, vector):
  """values [..., L, U] . vector [U] -> [..., L], as one [B*L, U] x [U, 1] matmul, which is
  faster than BatchMatMulV2 (tf.linalg.matvec) at the attention's sizes."""
  shape = tf.shape(values)
  return tf.reshape(tf.matmul(tf.reshape(values, [-1, shape[-1]]), vector[:, None]),
                    shape[:-1])  # [..., L]


def _activations(memory_features, query_features, coverage=None, w_c=None):
  """tanh(W_h h_i + W_s s + b [+ w_c cov_i]) [B, L, U] with TensorFlow's ops; the coverage
  term and the query as one batched matmul [cov_i, 1] @ [w_c; W_s s + b]: one pass over
  [B, L, U] where a broadcast product and a broadcast sum make two."""
  if coverage is None:
    return tf.tanh(memory_features + query_features[:, None, :])
  rows = tf.stack([tf.broadcast_to(w_c[0], tf.shape(query_features)), query_features],
                  axis=1)  # [B, 2, U]
  return tf.tanh(memory_features + tf.matmul(_coverage_coefficients(coverage), rows))


def _coverage_coefficients(coverage):
  """[cov_i, 1] for every position: coverage [..., L] -> [..., L, 2]."""
  return tf.stack([coverage, tf.ones_like(coverage)], axis=-1)


@tf.function(jit_compile=True, autograph=False)
def _compiled_activations(memory_features, query_features, coverage=None, w_c=None):
  """_activations as one XLA kernel."""
  features = memory_features + query_features[:, None, :]  # [B, L, U]
  if coverage is not None:
    features += coverage[:, :, None] * w_c[0]
  return tf.tanh(features)


def _pre_tanh_gradient(activations, d_scores, v):
  """The gradient of scores = tanh(x) . v for x [B, L, U] from tanh(x) and d_scores [B, L]."""
  return tf.raw_ops.TanhGrad(y=activations, dy=d_scores[:, :, None] * v)  # [B, L, U]


@tf.function(jit_compile=True, autograph=False)
def _compiled_pre_tanh_gradient(activations, d_scores, v):
  """_pre_tanh_gradient as one XLA kernel."""
  return (1.0 - activations * activations) * (d_scores[:, :, None] * v)  # [B, L, U]


def _scores_functions(activations_fn, pre_tanh_gradient_fn):
  """The scores without and with coverage, with hand-written gradients, from these kernels."""

  def backward(activations, d_scores, v):
    """Gradients for the pre-tanh features [B, L, U] and for v [U]."""
    return (pre_tanh_gradient_fn(activations, d_scores, v),
            _weighted_position_sum(activations, d_scores))

  @tf.custom_gradient
  def scores(memory_features, query_features, v):
    activations = activations_fn(memory_features, query_features)  # [B, L, U]

    def gradient(d_scores):  # [B, L]
      d_features, d_v = backward(activations, d_scores, v)
      return d_features, tf.reduce_sum(d_features, axis=1), d_v

    return _matvec(activations, v), gradient  # [B, L]

  @tf.custom_gradient
  def scores_with_coverage(memory_features, query_features, v, coverage, w_c):
    activations = activations_fn(memory_features, query_features, coverage, w_c)  # [B, L, U]

    def gradient(d_scores):  # [B, L]
      d_features, d_v = backward(activations, d_scores, v)
      # One batched matmul over d_features gives both sum_i cov_i d_features_i (w_c's, per
      # article) and sum_i d_features_i (the query's).
      d_rows = tf.matmul(_coverage_coefficients(coverage), d_features,
                         transpose_a=True)  # [B, 2, U]
      return (d_features, d_rows[:, 1], d_v,
              _matvec(d_features, w_c[0]),  # [B, L]
              tf.reduce_sum(d_rows[:, 0], axis=0, keepdims=True))  # [1, U]

    return _matvec(activations, v), gradient  # [B, L]

  return scores, scores_with_coverage


def _weighted_position_sum(values, weights):
  """sum over b, l of weights[b, l] * values[b, l, :]: values [B, L, U], weights [B, L] -> [U].

  As one [1, B*L] x [B*L, U] matmul, which is faster than einsum("blu,bl->u").
  """
  units = tf.shape(values)[2]
  return tf.matmul(tf.reshape(weights, [1, -1]), tf.reshape(values, [-1, units]))[0]  # [U]


# attention_scores' functions: TensorFlow's ops (False) or XLA kernels (True).
_SCORES = {False: _scores_functions(_activations, _pre_tanh_gradient),
           True: _scores_functions(_compiled_activations, _compiled_pre_tanh_gradient)}


@tf.custom_gradient
def attention_context(attn, encoder_states):
  """sum_i a_i h_i: attn [B, L], encoder_states [B, L, D] -> [B, D].

  Einsum's gradient for the states builds the outer product a g^T as a batched matmul with an
  inner dimension of 1, the slowest part of the decoder's backward pass; a broadcast product
  gives the same numbers.
  Plain formula: attention.Eager.context, einsum("bl,bld->bd"); test_attention_implementations.
  """

  def gradient(d_context):  # [B, D]
    return (tf.linalg.matvec(encoder_states, d_context),  # [B, L]
            attn[:, :, None] * d_context[:, None, :])  # [B, L, D]

  return weighted_states(attn, encoder_states), gradient


def weighted_states(attn, encoder_states, beams=1):
  """sum_i a_i h_i: attn [N*beams, L], encoder_states [N, L, D] shared by `beams` consecutive
  rows -> [N*beams, D]; as an [N, beams, L] x [N, L, D] batched matmul, which is faster than
  tf.linalg.matvec with transpose_a at the attention's sizes."""
  shape = tf.shape(encoder_states)
  return tf.reshape(tf.matmul(tf.reshape(attn, [shape[0], beams, shape[1]]), encoder_states),
                    [-1, shape[2]])  # [N*beams, D]


@tf.custom_gradient
def attention_context_late_states_gradient(attn, encoder_states):
  """attention_context whose gradient for the states is left out: training's decoder loop
  adds every step's at once after the loop (context_states_gradient), where at each step it
  would cost an outer product and a running sum over [B, L, D]. Plain formula: attention_context
  (einsum); test_attention_implementations.test_training_shape and
  test_model.test_training_gradients_equal_the_plain_formulation."""

  def gradient(d_context):  # [B, D]
    return tf.linalg.matvec(encoder_states, d_context), None  # [B, L]

  return weighted_states(attn, encoder_states), gradient


def context_states_gradient(d_contexts, attn):
  """The encoder states' gradient through every step's context, sum over t of a_t d_t^T:
  d_contexts [T, B, D] (each step's context gradient), attn [B, T, L] -> [B, L, D].
  test_model.test_training_gradients_equal_the_plain_formulation holds it to the loop's own."""
  return tf.matmul(attn, tf.transpose(d_contexts, [1, 0, 2]), transpose_a=True)  # [B, L, D]
