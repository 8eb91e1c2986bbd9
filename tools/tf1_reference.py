"""The original's training graph, written the TF1 way, and a timing of it on this machine.

    pip install -r requirements-test.txt     # tf-keras: TF1's LSTMCell lives there in TF 2.x
    python tools/tf1_reference.py [--steps=10] [--json_out=tf1_reference.json]
    python tools/tf1_reference.py --data_path='../shared/data/vietnews_bin/chunked/train_*' \
        --vocab_path=../shared/data/vietnews_bin/vocab

The graph follows the original repository's structure in TF1 graph mode (tf.compat.v1): TF1's
LSTMCell in bidirectional_dynamic_rnn, the reduce-states, an attention decoder unrolled in
Python (linear() on concatenated arguments, W_h and w_c as 1x1 convolutions, input feeding,
p_gen), a vocabulary projection and softmax per decoder step, the final distribution per step
with scatter_nd, the masked losses, gradients clipped by global norm and Adagrad. It times a
training step on full-length synthetic batches, the same batches as `tools/benchmark.py`'s
"full-length synthetic" row, or with --data_path on the real-data row's batches, at the sizes
given by the flags, so that the two programs compare on one machine. `tools/benchmark.py` runs
it for its TF1 rows.

The builders are also what tests/test_tf1_checkpoint.py uses to make a genuine TF1 checkpoint.
Importing this module sets TF_USE_LEGACY_KERAS=1 before TensorFlow is imported: run it in its
own process, never beside Keras 3 code.
"""

import importlib.util
import json
import os
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from process_memory import peak_rss_gb  # tools/, next to this script


def linear(args, output_size):
  """The original's linear(): one `Linear/Matrix` on the concatenated args, plus a `Bias`
  initialised to zero."""
  v1 = tf.compat.v1
  width = sum(a.shape.as_list()[1] for a in args)
  with v1.variable_scope("Linear"):
    matrix = v1.get_variable("Matrix", [width, output_size])
    bias = v1.get_variable("Bias", [output_size], initializer=v1.zeros_initializer())
  return tf.matmul(tf.concat(args, axis=1), matrix) + bias


def attention_decoder(inputs, initial_state, enc_states, enc_mask, cell,
                      initial_state_attention, prev_coverage=None):
  """The original's attention_decoder (pointer-generator with coverage), written in TF1 graph
  style: returns per-step outputs, the final LSTMStateTuple, attention distributions, p_gens
  and the coverage [B, L]."""
  v1 = tf.compat.v1
  with v1.variable_scope("attention_decoder"):
    batch, _, attn_size = enc_states.shape.as_list()
    states = tf.expand_dims(enc_states, axis=2)  # [B, L, 1, 2H]
    w_h = v1.get_variable("W_h", [1, 1, attn_size, attn_size])
    encoder_features = tf.nn.conv2d(states, w_h, [1, 1, 1, 1], "SAME")  # [B, L, 1, 2H]
    v = v1.get_variable("v", [attn_size])
    with v1.variable_scope("coverage"):
      w_c = v1.get_variable("w_c", [1, 1, 1, attn_size])

    def attention(decoder_state, coverage):
      with v1.variable_scope("Attention"):
        # linear() gets the LSTMStateTuple itself: its arguments are c, then h.
        query = linear(list(decoder_state), attn_size)[:, None, None, :]  # [B, 1, 1, 2H]
        features = encoder_features + query
        if coverage is not None:
          features += tf.nn.conv2d(coverage, w_c, [1, 1, 1, 1], "SAME")
        scores = tf.reduce_sum(v * tf.tanh(features), [2, 3])  # [B, L]
        attn = tf.nn.softmax(scores) * enc_mask
        attn /= tf.reshape(tf.reduce_sum(attn, axis=1), [-1, 1])
        attn4 = tf.reshape(attn, [batch, -1, 1, 1])
        coverage = attn4 if coverage is None else coverage + attn4
        context = tf.reshape(tf.reduce_sum(attn4 * states, [1, 2]), [-1, attn_size])
      return context, attn, coverage

    coverage = None if prev_coverage is None else prev_coverage[:, :, None, None]
    context = tf.zeros([batch, attn_size])
    if initial_state_attention:
      context, _, coverage = attention(initial_state, coverage)
    state = initial_state
    outputs, attn_dists, p_gens = [], [], []
    for step, inp in enumerate(inputs):
      if step > 0:
        v1.get_variable_scope().reuse_variables()
      x = linear([inp, context], inp.shape.as_list()[1])
      cell_output, state = cell(x, state)
      if step == 0 and initial_state_attention:
        # The original's decode step does not add this attention to the coverage.
        context, attn, _ = attention(state, coverage)
      else:
        context, attn, coverage = attention(state, coverage)
      attn_dists.append(attn)
      with v1.variable_scope("calculate_pgen"):
        p_gens.append(tf.sigmoid(linear([context, state.c, state.h, x], 1)))
      with v1.variable_scope("AttnOutputProjection"):
        outputs.append(linear([cell_output, context], cell.output_size))
    return outputs, state, attn_dists, p_gens, tf.reshape(coverage, [batch, -1])


def final_dists(vocab_dists, attn_dists, p_gens, enc_ext, vocab_size, max_oovs):
  """Per step: p_gen * P_vocab extended with zeros plus (1 - p_gen) * attention scattered."""
  batch, length = enc_ext.shape[0], tf.shape(enc_ext)[1]
  indices = tf.stack([tf.tile(tf.range(batch)[:, None], [1, length]), enc_ext], axis=2)
  extra = tf.zeros([batch, max_oovs])
  return [tf.concat([p * vocab, extra], axis=1)
          + tf.scatter_nd(indices, (1.0 - p) * attn, [batch, vocab_size + max_oovs])
          for vocab, attn, p in zip(vocab_dists, attn_dists, p_gens)]


def mask_and_avg(values, mask):
  per_example = sum(v * mask[:, t] for t, v in enumerate(values)) / tf.reduce_sum(mask, axis=1)
  return tf.reduce_mean(per_example)


def build_training_graph(enc_input, enc_ext, enc_len, dec_input, target, dec_len, vocab_size,
                         max_oovs, emb_dim, hidden_dim, initializer, cov_loss_wt=1.0):
  """The original's seq2seq graph in pointer-generator + coverage mode, on int32 tensors of
  static shape (enc [B, L], dec/target [B, T], lengths [B]). Returns a dict of its tensors and
  of what a decode graph reuses."""
  v1 = tf.compat.v1
  lstm_cell = v1.nn.rnn_cell.LSTMCell
  batch, steps = target.shape.as_list()
  enc_mask = tf.sequence_mask(enc_len, tf.shape(enc_input)[1], tf.float32)
  dec_mask = tf.sequence_mask(dec_len, steps, tf.float32)
  with v1.variable_scope("seq2seq", initializer=initializer):
    with v1.variable_scope("embedding"):
      embedding = v1.get_variable("embedding", [vocab_size, emb_dim])
      emb_enc = tf.nn.embedding_lookup(embedding, enc_input)
      emb_dec = [tf.nn.embedding_lookup(embedding, x) for x in tf.unstack(dec_input, axis=1)]
    with v1.variable_scope("encoder"):
      cell_fw = lstm_cell(hidden_dim, initializer=initializer, state_is_tuple=True)
      cell_bw = lstm_cell(hidden_dim, initializer=initializer, state_is_tuple=True)
      enc_outputs, (fw_st, bw_st) = v1.nn.bidirectional_dynamic_rnn(
          cell_fw, cell_bw, emb_enc, dtype=tf.float32, sequence_length=enc_len, swap_memory=True)
      enc_states = tf.concat(enc_outputs, axis=2)
    with v1.variable_scope("reduce_final_st"):
      w_c, w_h = (v1.get_variable(n, [2 * hidden_dim, hidden_dim])
                  for n in ("w_reduce_c", "w_reduce_h"))
      b_c, b_h = (v1.get_variable(n, [hidden_dim]) for n in ("bias_reduce_c", "bias_reduce_h"))
      new_c = tf.nn.relu(tf.matmul(tf.concat([fw_st.c, bw_st.c], 1), w_c) + b_c)
      new_h = tf.nn.relu(tf.matmul(tf.concat([fw_st.h, bw_st.h], 1), w_h) + b_h)
      dec_in_state = v1.nn.rnn_cell.LSTMStateTuple(new_c, new_h)
    with v1.variable_scope("decoder"):
      dec_cell = lstm_cell(hidden_dim, initializer=initializer, state_is_tuple=True)
      outputs, _, attn_dists, p_gens, _ = attention_decoder(
          emb_dec, dec_in_state, enc_states, enc_mask, dec_cell, initial_state_attention=False)
    with v1.variable_scope("output_projection"):
      w = v1.get_variable("w", [hidden_dim, vocab_size])
      v = v1.get_variable("v", [vocab_size])
      vocab_dists = [tf.nn.softmax(v1.nn.xw_plus_b(o, w, v)) for o in outputs]
    dists = final_dists(vocab_dists, attn_dists, p_gens, enc_ext, vocab_size, max_oovs)
    gold = [tf.gather_nd(dist, tf.stack([tf.range(batch), target[:, t]], axis=1))
            for t, dist in enumerate(dists)]
    loss = mask_and_avg([-tf.math.log(p) for p in gold], dec_mask)
    coverage, covlosses = tf.zeros_like(attn_dists[0]), []
    for a in attn_dists:
      covlosses.append(tf.reduce_sum(tf.minimum(a, coverage), [1]))
      coverage += a
    coverage_loss = mask_and_avg(covlosses, dec_mask)
  return {"loss": loss, "coverage_loss": coverage_loss,
          "total_loss": loss + cov_loss_wt * coverage_loss, "final_dists": dists,
          "attn_dists": attn_dists, "p_gens": p_gens, "emb_dec": emb_dec,
          "dec_in_state": dec_in_state, "enc_states": enc_states, "enc_mask": enc_mask,
          "dec_cell": dec_cell, "w": w, "v": v}


def train_op(total_loss, lr, adagrad_init_acc, max_grad_norm, global_step):
  """The original's update: gradients clipped by global norm, then Adagrad."""
  v1 = tf.compat.v1
  tvars = v1.trainable_variables()
  grads, _ = tf.clip_by_global_norm(tf.gradients(total_loss, tvars), max_grad_norm)
  optimizer = v1.train.AdagradOptimizer(lr, initial_accumulator_value=adagrad_init_acc)
  return optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)


def synthetic_feeds(count, b, l, t, vocab_size):
  """Full-length batches: every article `l` tokens, every abstract `t`."""
  rng = np.random.default_rng(0)
  for _ in range(count):
    enc = rng.integers(4, vocab_size, (b, l)).astype(np.int32)
    yield {"enc_input": enc, "enc_ext": enc, "enc_len": np.full([b], l, np.int32),
           "dec_input": rng.integers(4, vocab_size, (b, t)).astype(np.int32),
           "target": rng.integers(4, vocab_size, (b, t)).astype(np.int32),
           "dec_len": np.full([b], t, np.int32)}


def real_feeds(count, data_path, vocab_path, b, l, t, vocab_size):
  """Batches of real data as the original feeds them: articles padded to the batch's longest,
  abstracts always padded to max_dec_steps. Read eagerly, before the TF1 graph exists; the
  same batches, in the same order, as tools/benchmark.py's real-data row. Returns the
  vocabulary's size (the file may hold fewer than `vocab_size` words) and the feeds."""
  from pointer_gen import config  # pylint: disable=g-import-not-at-top
  from pointer_gen import data
  from pointer_gen import vocab as vocab_lib
  vocab = vocab_lib.Vocab.from_file(vocab_path, vocab_size)
  hps = config.HParams(batch_size=b, max_enc_steps=l, max_dec_steps=t, vocab_size=vocab_size,
                       pointer_gen=True, seed=0, data_path=data_path)
  _, dataset = data.input_pipeline(hps, vocab, single_pass=False)
  return len(vocab), [original_feed(batch, t, vocab_lib.PAD_ID) for batch in dataset.take(count)]


def original_feed(batch, t, pad_id):
  """One pointer_gen batch as the original's feed: abstracts padded to `t` steps."""
  feed = {k: batch[k].numpy() for k in ("enc_input", "enc_len", "dec_len")}
  feed["enc_ext"] = batch["enc_input_ext"].numpy()
  for name in ("dec_input", "target"):
    padding = t - batch[name].shape[1]
    feed[name] = np.pad(batch[name].numpy(), [[0, 0], [0, padding]], constant_values=pad_id)
  feed["max_oovs"] = int(batch["num_oovs"].numpy().max())
  return feed


def require_tf_keras():
  """Fails at once, naming the package: without it TensorFlow fails only when the graph
  builds its first LSTMCell, with "Keras cannot be imported"."""
  if importlib.util.find_spec("tf_keras") is None:
    raise ImportError("tf_keras is missing (TF1's LSTMCell lives there in TF 2.x): "
                      "pip install -r requirements-test.txt")


def main(argv):
  del argv
  require_tf_keras()
  f = flags.FLAGS
  v1 = tf.compat.v1
  b, l, t, vocab_size = f.batch_size, f.max_enc_steps, f.max_dec_steps, f.vocab_size
  count = f.warmup + f.steps
  if f.data_path:
    # The copy ids of out-of-vocabulary words start at the vocabulary's size: the graph's must
    # be the one the batches were made with.
    vocab_size, feeds = real_feeds(count, f.data_path, f.vocab_path, b, l, t, vocab_size)
  else:
    feeds = list(synthetic_feeds(count, b, l, t, vocab_size))
  max_oovs = max(feed.pop("max_oovs", 0) for feed in feeds)
  v1.disable_v2_behavior()
  ids = lambda shape, name: v1.placeholder(tf.int32, shape, name)
  enc_input, enc_ext = ids([b, None], "enc_input"), ids([b, None], "enc_ext")
  dec_input, target = ids([b, t], "dec_input"), ids([b, t], "target")
  enc_len, dec_len = ids([b], "enc_len"), ids([b], "dec_len")
  start = time.perf_counter()
  # The original sizes the extended vocabulary per batch; the widest batch's size serves all.
  graph = build_training_graph(enc_input, enc_ext, enc_len, dec_input, target, dec_len,
                               vocab_size, max_oovs, f.emb_dim, f.hidden_dim,
                               v1.random_uniform_initializer(-0.02, 0.02))
  global_step = tf.Variable(0, name="global_step", trainable=False)
  update = train_op(graph["total_loss"], 0.15, 0.1, 2.0, global_step)
  build_seconds = time.perf_counter() - start
  placeholders = {"enc_input": enc_input, "enc_ext": enc_ext, "enc_len": enc_len,
                  "dec_input": dec_input, "target": target, "dec_len": dec_len}
  times = []
  with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    for i, feed in enumerate(feeds):
      begin = time.perf_counter()
      loss, _ = sess.run([graph["loss"], update],
                         {placeholders[name]: value for name, value in feed.items()})
      if i >= f.warmup:
        times.append(time.perf_counter() - begin)
  result = {"median": float(np.median(times)), "min": float(np.min(times)),
            "max": float(np.max(times)), "n": len(times), "last_loss": float(loss),
            "graph_build_seconds": build_seconds,
            "peak_rss_gb": peak_rss_gb()}
  data_name = f"real data {f.data_path}" if f.data_path else f"full-length {l}/{t}"
  print(f"original's formulation (TF1 graph), {data_name}, batch {b}, vocab "
        f"{vocab_size}: {result['median']:.2f} s per step (min {result['min']:.2f}, max "
        f"{result['max']:.2f}, {result['n']} steps); peak RSS {result['peak_rss_gb']:.2f} GB")
  with open(f.json_out, "w", encoding="utf-8") as out:
    json.dump(result, out, indent=2)


if __name__ == "__main__":
  flags.DEFINE_integer("batch_size", 16, "Examples per step.")
  flags.DEFINE_integer("max_enc_steps", 400, "Article length of every example.")
  flags.DEFINE_integer("max_dec_steps", 100, "Summary length of every example.")
  flags.DEFINE_integer("vocab_size", 50000, "Vocabulary size.")
  flags.DEFINE_integer("emb_dim", 128, "Embedding size.")
  flags.DEFINE_integer("hidden_dim", 256, "LSTM size.")
  flags.DEFINE_integer("steps", 10, "Timed steps after warm-up.")
  flags.DEFINE_integer("warmup", 2, "Untimed steps first.")
  flags.DEFINE_string("json_out", "tf1_reference.json", "Where to write the results.")
  flags.DEFINE_string("data_path", "", "Real .bin data to time on (default: full-length "
                      "synthetic batches), e.g. ../shared/data/vietnews_bin/chunked/train_*.")
  flags.DEFINE_string("vocab_path", "", "Vocab of --data_path.")
  flags.DEFINE_boolean("bfc", False, "Use TensorFlow's BFC CPU allocator, as pointer_gen does "
                       "(the original ran with TensorFlow's default).")
  flags.FLAGS(sys.argv)
  os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true" if flags.FLAGS.bfc else "false"
  sys.exit(app.run(main))
