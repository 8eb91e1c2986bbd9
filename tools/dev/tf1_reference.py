"""The original's training and decode graphs, written the TF1 way, and a timing of them on this
machine.

    pip install -r requirements-test.txt     # tf-keras: TF1's LSTMCell lives there in TF 2.x
    python tools/dev/tf1_reference.py [--steps=10] [--json_out=tf1_reference.json]
    python tools/dev/tf1_reference.py --data_path='../shared/data/vietnews_bin/chunked/train_*' \
        --vocab_path=../shared/data/vietnews_bin/vocab
    python tools/dev/tf1_reference.py --decode [--decode_articles=8] \
        [--data_path='../shared/data/vietnews_bin/chunked/val_*' \
         --vocab_path=../shared/data/vietnews_bin/vocab]

The graph follows the original repository's structure in TF1 graph mode (tf.compat.v1): TF1's
LSTMCell in bidirectional_dynamic_rnn, the reduce-states, an attention decoder unrolled in
Python (linear() on concatenated arguments, W_h and w_c as 1x1 convolutions, input feeding,
p_gen), a vocabulary projection and softmax per decoder step, the final distribution per step
with scatter_nd, the masked losses, gradients clipped by global norm and Adagrad. It times a
training step on full-length synthetic batches, the same batches as `tools/dev/benchmark.py`'s
"full-length synthetic" row, or with --data_path on the real-data row's batches, at the sizes
given by the flags, so that the two programs compare on one machine.

--decode times the original's single-pass decode instead, as the original runs it: the graph in
its decode form with one decoder step (attention on the initial state first, the coverage fed
in) on a batch of beam_size copies of one article; per article one session run of the encoder,
then one per decoder step feeding the hypotheses' last tokens, the encoder states, their decoder
states and coverage, and fetching the top 2 * beam_size of each row's final distribution; the
hypotheses kept, sorted and finished in Python (beam 4, 35-120 steps by default; on untrained
weights every article runs all the steps). It reports seconds per article (median, min, max
after --warmup articles) and articles/s, on full-length synthetic articles or, with
--data_path, real ones in order. `tools/dev/benchmark.py` runs both for its TF1 rows.

The builders are also what tests/training/test_tf1_checkpoint.py uses to make a genuine TF1
checkpoint. Importing this module sets TF_USE_LEGACY_KERAS=1 before TensorFlow is imported: run it
in its own process, never beside Keras 3 code.
"""

import importlib.util
import json
import os
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# pylint: disable=g-import-not-at-top
from absl import flags
import numpy as np
import tensorflow as tf

from pointer_gen import usage
from pointer_gen.text import vocab as vocab_lib
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
        # The original's decode step does not add this attention to the coverage; its
        # variables are the initial attention's.
        with v1.variable_scope(v1.get_variable_scope(), reuse=True):
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


def build_seq2seq(enc_input, enc_ext, enc_len, dec_input, vocab_size, max_oovs, emb_dim,
                  hidden_dim, initializer, prev_coverage=None):
  """The original's seq2seq graph in pointer-generator + coverage mode up to the final
  distributions, on int32 tensors (enc [B, L], dec [B, T], lengths [B]). Without
  `prev_coverage` its training form; with it ([B, L] float32), its decode form: the decoder
  starts from attention on its initial state (initial_state_attention) and from that coverage.
  Returns a dict of its tensors and of what a decode graph reuses or feeds."""
  v1 = tf.compat.v1
  lstm_cell = v1.nn.rnn_cell.LSTMCell
  enc_mask = tf.sequence_mask(enc_len, tf.shape(enc_input)[1], tf.float32)
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
      outputs, dec_out_state, attn_dists, p_gens, coverage = attention_decoder(
          emb_dec, dec_in_state, enc_states, enc_mask, dec_cell,
          initial_state_attention=prev_coverage is not None, prev_coverage=prev_coverage)
    with v1.variable_scope("output_projection"):
      w = v1.get_variable("w", [hidden_dim, vocab_size])
      v = v1.get_variable("v", [vocab_size])
      vocab_dists = [tf.nn.softmax(v1.nn.xw_plus_b(o, w, v)) for o in outputs]
    dists = final_dists(vocab_dists, attn_dists, p_gens, enc_ext, vocab_size, max_oovs)
  return {"final_dists": dists, "attn_dists": attn_dists, "p_gens": p_gens, "emb_dec": emb_dec,
          "dec_in_state": dec_in_state, "dec_out_state": dec_out_state, "coverage": coverage,
          "enc_states": enc_states, "enc_mask": enc_mask, "dec_cell": dec_cell, "w": w, "v": v}


def build_training_graph(enc_input, enc_ext, enc_len, dec_input, target, dec_len, vocab_size,
                         max_oovs, emb_dim, hidden_dim, initializer, cov_loss_wt=1.0):
  """The seq2seq graph's training form (target [B, T]) with the original's losses."""
  batch, steps = target.shape.as_list()
  dec_mask = tf.sequence_mask(dec_len, steps, tf.float32)
  graph = build_seq2seq(enc_input, enc_ext, enc_len, dec_input, vocab_size, max_oovs, emb_dim,
                        hidden_dim, initializer)
  gold = [tf.gather_nd(dist, tf.stack([tf.range(batch), target[:, t]], axis=1))
          for t, dist in enumerate(graph["final_dists"])]
  loss = mask_and_avg([-tf.math.log(p) for p in gold], dec_mask)
  coverage, covlosses = tf.zeros_like(graph["attn_dists"][0]), []
  for a in graph["attn_dists"]:
    covlosses.append(tf.reduce_sum(tf.minimum(a, coverage), [1]))
    coverage += a
  coverage_loss = mask_and_avg(covlosses, dec_mask)
  return {**graph, "loss": loss, "coverage_loss": coverage_loss,
          "total_loss": loss + cov_loss_wt * coverage_loss}


def train_op(total_loss, lr, adagrad_init_acc, max_grad_norm, global_step):
  """The original's update: gradients clipped by global norm, then Adagrad."""
  v1 = tf.compat.v1
  tvars = v1.trainable_variables()
  grads, _ = tf.clip_by_global_norm(tf.gradients(total_loss, tvars), max_grad_norm)
  optimizer = v1.train.AdagradOptimizer(lr, initial_accumulator_value=adagrad_init_acc)
  return optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)


def build_decode_graph(beam_size, vocab_size, emb_dim, hidden_dim, initializer):
  """The original's decode graph: the seq2seq graph in its decode form with one decoder step, on
  a batch of `beam_size` rows (copies of one article, then one row per hypothesis), and the top
  2 * beam_size of each row's final distribution. Returns a dict of its placeholders and of the
  tensors a decode step feeds (the encoder's outputs and the decoder's state) and fetches."""
  v1 = tf.compat.v1
  ids = lambda shape, name: v1.placeholder(tf.int32, shape, name)
  feeds = {"enc_input": ids([beam_size, None], "enc_input"),
           "enc_ext": ids([beam_size, None], "enc_ext"), "enc_len": ids([beam_size], "enc_len"),
           "max_oovs": ids([], "max_oovs"), "dec_input": ids([beam_size, 1], "dec_input"),
           "prev_coverage": v1.placeholder(tf.float32, [beam_size, None], "prev_coverage")}
  graph = build_seq2seq(feeds["enc_input"], feeds["enc_ext"], feeds["enc_len"],
                        feeds["dec_input"], vocab_size, feeds["max_oovs"], emb_dim, hidden_dim,
                        initializer, prev_coverage=feeds["prev_coverage"])
  top_probs, top_ids = tf.nn.top_k(graph["final_dists"][0], 2 * beam_size)  # [K, 2K] each
  return {**feeds, "enc_states": graph["enc_states"], "enc_mask": graph["enc_mask"],
          "dec_in_state": graph["dec_in_state"], "dec_out_state": graph["dec_out_state"],
          "attn_dist": graph["attn_dists"][0], "p_gen": graph["p_gens"][0],
          "coverage": graph["coverage"], "top_ids": top_ids,
          "top_log_probs": tf.math.log(top_probs)}


class Hypothesis:
  """One hypothesis of the original's beam search: its tokens ([START] first), their
  log-probabilities, the decoder state and coverage after its last token, and its attention
  distributions and p_gens as lists (the original keeps them for its attention view)."""

  def __init__(self, tokens, log_probs, state, attn_dists, p_gens, coverage):
    self.tokens, self.log_probs, self.state = tokens, log_probs, state
    self.attn_dists, self.p_gens, self.coverage = attn_dists, p_gens, coverage

  def extend(self, token, log_prob, state, attn_dist, p_gen, coverage):
    return Hypothesis(self.tokens + [token], self.log_probs + [log_prob], state,
                      self.attn_dists + [attn_dist], self.p_gens + [p_gen], coverage)

  @property
  def avg_log_prob(self):
    return sum(self.log_probs) / len(self.tokens)


def by_score(hyps):
  """Best average log-probability first; Python's sort is stable, so ties keep their order."""
  return sorted(hyps, key=lambda h: h.avg_log_prob, reverse=True)


class OriginalBeamSearch:
  """The original's decode of one article: the encoder once on beam_size copies of it, then one
  session run of the one-step graph per decoder step, the hypotheses kept in Python."""

  def __init__(self, sess, graph, vocab_size, min_dec_steps, max_dec_steps):
    self.sess, self.graph, self.vocab_size = sess, graph, vocab_size
    self.min_dec_steps, self.max_dec_steps = min_dec_steps, max_dec_steps
    self.beam_size = graph["dec_input"].shape.as_list()[0]

  def run_encoder(self, article):
    """The encoder states [K, L, 2H], the mask [K, L] and the decoder's initial state (c [H],
    h [H]) of one article given as the beam's batch."""
    rows = lambda ids: np.tile(ids[None], [self.beam_size, 1])  # [K, L]
    g = self.graph
    enc_states, mask, state = self.sess.run(
        [g["enc_states"], g["enc_mask"], g["dec_in_state"]],
        {g["enc_input"]: rows(article["enc_input"]),
         g["enc_len"]: np.full([self.beam_size], len(article["enc_input"]), np.int32)})
    return enc_states, mask, (state.c[0], state.h[0])

  def decode_onestep(self, article, latest_tokens, enc_states, mask, states, prev_coverage):
    """One decoder step for every row: the top 2K ids and log-probabilities [K, 2K], and per
    row the new state, attention distribution, p_gen and coverage."""
    g = self.graph
    results = self.sess.run(
        {"ids": g["top_ids"], "log_probs": g["top_log_probs"], "state": g["dec_out_state"],
         "attn": g["attn_dist"], "p_gen": g["p_gen"], "coverage": g["coverage"]},
        {g["enc_states"]: enc_states, g["enc_mask"]: mask,
         g["enc_ext"]: np.tile(article["enc_ext"][None], [self.beam_size, 1]),
         g["max_oovs"]: article["num_oovs"],
         g["dec_in_state"].c: np.stack([c for c, _ in states]),
         g["dec_in_state"].h: np.stack([h for _, h in states]),
         g["dec_input"]: np.array(latest_tokens, np.int32)[:, None],
         g["prev_coverage"]: np.stack(prev_coverage)})
    new_states = [(results["state"].c[i], results["state"].h[i]) for i in range(self.beam_size)]
    return (results["ids"], results["log_probs"], new_states, results["attn"].tolist(),
            results["p_gen"][:, 0].tolist(), results["coverage"].tolist())

  def search(self, article):
    """The best hypothesis for one article and the decoder steps run."""
    enc_states, mask, state = self.run_encoder(article)
    hyps = [Hypothesis([vocab_lib.START_ID], [0.0], state, [], [],
                       np.zeros([len(article["enc_input"])], np.float32))
            for _ in range(self.beam_size)]
    results, steps = [], 0
    while steps < self.max_dec_steps and len(results) < self.beam_size:
      # Copied words (extended ids) go back into the decoder as [UNK].
      latest = [h.tokens[-1] if h.tokens[-1] < self.vocab_size else vocab_lib.UNK_ID
                for h in hyps]
      ids, log_probs, new_states, attn, p_gens, coverage = self.decode_onestep(
          article, latest, enc_states, mask, [h.state for h in hyps], [h.coverage for h in hyps])
      candidates = []
      # At step 0 every hypothesis is the same [START]: only the first proposes.
      for i in range(1 if steps == 0 else len(hyps)):
        for j in range(2 * self.beam_size):
          candidates.append(hyps[i].extend(int(ids[i, j]), float(log_probs[i, j]),
                                           new_states[i], attn[i], p_gens[i], coverage[i]))
      hyps = []
      for h in by_score(candidates):
        if h.tokens[-1] == vocab_lib.STOP_ID:
          if steps >= self.min_dec_steps:
            results.append(h)
        else:
          hyps.append(h)
        if len(hyps) == self.beam_size or len(results) == self.beam_size:
          break
      steps += 1
    return by_score(results or hyps)[0], steps


def synthetic_feeds(count, b, l, t, vocab_size):
  """Full-length batches: every article `l` tokens, every abstract `t`."""
  rng = np.random.default_rng(0)
  for _ in range(count):
    enc = rng.integers(4, vocab_size, (b, l)).astype(np.int32)
    yield {"enc_input": enc, "enc_ext": enc, "enc_len": np.full([b], l, np.int32),
           "dec_input": rng.integers(4, vocab_size, (b, t)).astype(np.int32),
           "target": rng.integers(4, vocab_size, (b, t)).astype(np.int32),
           "dec_len": np.full([b], t, np.int32)}


def real_batches(data_path, vocab_path, b, l, t, vocab_size, single_pass, skip=0):
  """The vocabulary's size (the file may hold fewer than `vocab_size` words) and pointer_gen's
  batches of real data (single_pass: from the `skip`th article on), read eagerly before the TF1
  graph exists."""
  from pointer_gen import config  # pylint: disable=g-import-not-at-top
  from pointer_gen.data import pipeline as data
  vocab = vocab_lib.Vocab.from_file(vocab_path, vocab_size)
  hps = config.HParams(batch_size=b, max_enc_steps=l, max_dec_steps=t, vocab_size=vocab_size,
                       pointer_gen=True, seed=0, data_path=data_path)
  _, dataset = data.input_pipeline(hps, vocab, single_pass=single_pass, skip=skip)
  return len(vocab), dataset


def real_feeds(count, data_path, vocab_path, b, l, t, vocab_size):
  """Batches of real data as the original feeds them: articles padded to the batch's longest,
  abstracts always padded to max_dec_steps; the same batches, in the same order, as
  tools/dev/benchmark.py's real-data row. Returns the vocabulary's size and the feeds."""
  size, dataset = real_batches(data_path, vocab_path, b, l, t, vocab_size, single_pass=False)
  return size, [original_feed(batch, t, vocab_lib.PAD_ID) for batch in dataset.take(count)]


def real_articles(count, data_path, vocab_path, l, vocab_size, skip):
  """`count` articles of real data in order from the `skip`th, as the original's decode reads
  them (one pass), each cut to its length: enc_input, enc_ext (copy ids of its OOVs from the
  vocabulary's size on), num_oovs. Returns the vocabulary's size and the articles."""
  size, dataset = real_batches(data_path, vocab_path, 1, l, 1, vocab_size, single_pass=True,
                               skip=skip)
  articles = []
  for batch in dataset.take(count):
    length = int(batch.enc_len[0])
    articles.append({"enc_input": batch.enc_input[0, :length].numpy(),
                     "enc_ext": batch.enc_input_ext[0, :length].numpy(),
                     "num_oovs": int(batch.num_oovs[0])})
  return size, articles


def synthetic_articles(count, l, vocab_size):
  """Full-length articles: `l` tokens each, no OOVs."""
  rng = np.random.default_rng(0)
  articles = []
  for _ in range(count):
    enc = rng.integers(4, vocab_size, l).astype(np.int32)
    articles.append({"enc_input": enc, "enc_ext": enc, "num_oovs": 0})
  return articles


def original_feed(batch, t, pad_id):
  """One pointer_gen batch as the original's feed: abstracts padded to `t` steps."""
  feed = {"enc_input": batch.enc_input.numpy(), "enc_len": batch.enc_len.numpy(),
          "dec_len": batch.dec_len.numpy(), "enc_ext": batch.enc_input_ext.numpy()}
  for name, ids in (("dec_input", batch.dec_input), ("target", batch.target)):
    padding = t - ids.shape[1]
    feed[name] = np.pad(ids.numpy(), [[0, 0], [0, padding]], constant_values=pad_id)
  feed["max_oovs"] = int(batch.num_oovs.numpy().max())
  return feed


def require_tf_keras():
  """Fails at once, naming the package: without it TensorFlow fails only when the graph
  builds its first LSTMCell, with "Keras cannot be imported"."""
  if importlib.util.find_spec("tf_keras") is None:
    raise ImportError("tf_keras is missing (TF1's LSTMCell lives there in TF 2.x): "
                      "pip install -r requirements-test.txt")


def time_training(f):
  """Median, min and max seconds of a training step, and a line that says what was timed."""
  v1 = tf.compat.v1
  b, l, t, vocab_size = f.batch_size, f.max_enc_steps, f.max_dec_steps or 100, f.vocab_size
  count = f.warmup + f.steps
  if f.data_path:
    # The copy ids of out-of-vocabulary words start at the vocabulary's size: the graph's must
    # be the one the batches were made with.
    vocab_size, feeds = real_feeds(count, f.data_path, f.vocab_path, b, l, t, vocab_size)
  else:
    feeds = list(synthetic_feeds(count, b, l, t, vocab_size))
  max_oovs = max(feed.pop("max_oovs", 0) for feed in feeds)
  graph_mode()
  ids = lambda shape, name: v1.placeholder(tf.int32, shape, name)
  enc_input, enc_ext = ids([b, None], "enc_input"), ids([b, None], "enc_ext")
  dec_input, target = ids([b, t], "dec_input"), ids([b, t], "target")
  enc_len, dec_len = ids([b], "enc_len"), ids([b], "dec_len")
  start = time.perf_counter()
  # The original sizes the extended vocabulary per batch; the widest batch's size serves all.
  graph = build_training_graph(enc_input, enc_ext, enc_len, dec_input, target, dec_len,
                               vocab_size, max_oovs, f.emb_dim, f.hidden_dim, initializer(f))
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
  result = {**stats(times), "last_loss": float(loss), "graph_build_seconds": build_seconds,
            "peak_rss_gb": peak_rss_gb()}
  data_name = f"real data {f.data_path}" if f.data_path else f"full-length {l}/{t}"
  return result, (
      f"original's formulation (TF1 graph), {data_name}, batch {b}, vocab {vocab_size}: "
      f"{result['median']:.2f} s per step (min {result['min']:.2f}, max {result['max']:.2f}, "
      f"{result['n']} steps); peak RSS {result['peak_rss_gb']:.2f} GB")


def time_decode(f):
  """Seconds per article of the original's decode (median, min, max over the articles after
  warm-up), articles/s, and per article decoded the winner and the steps run; and a line that
  says what was timed."""
  v1 = tf.compat.v1
  l, vocab_size, max_steps = f.max_enc_steps, f.vocab_size, f.max_dec_steps or 120
  count = f.warmup + f.decode_articles
  if f.data_path:
    vocab_size, articles = real_articles(count, f.data_path, f.vocab_path, l, vocab_size,
                                         f.decode_skip)
  else:
    articles = synthetic_articles(count, l, vocab_size)
  graph_mode()
  start = time.perf_counter()
  graph = build_decode_graph(f.beam_size, vocab_size, f.emb_dim, f.hidden_dim, initializer(f))
  build_seconds = time.perf_counter() - start
  decoded, times = [], []
  with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    if f.checkpoint_out:
      v1.train.Saver().save(sess, f.checkpoint_out)
    search = OriginalBeamSearch(sess, graph, vocab_size, f.min_dec_steps, max_steps)
    for i, article in enumerate(articles):
      begin = time.perf_counter()
      best, steps = search.search(article)
      seconds = time.perf_counter() - begin
      if i >= f.warmup:
        times.append(seconds)
      decoded.append({"enc_len": len(article["enc_input"]), "tokens": best.tokens[1:],
                      "avg_log_prob": best.avg_log_prob, "steps": steps, "seconds": seconds})
  result = {**stats(times), "articles_per_sec": len(times) / sum(times),
            "steps": stats([d["steps"] for d in decoded[f.warmup:]]),
            "graph_build_seconds": build_seconds, "peak_rss_gb": peak_rss_gb(),
            "decoded": decoded}
  data_name = f"real data {f.data_path}" if f.data_path else f"full-length {l}"
  return result, (
      f"original's decode (TF1 one-step graph, beam search in Python, one article at a time), "
      f"{data_name}, beam {f.beam_size}, {f.min_dec_steps}-{max_steps} steps, vocab "
      f"{vocab_size}: {result['median']:.3f} s per article (min {result['min']:.3f}, max "
      f"{result['max']:.3f}, {result['n']} articles), {result['articles_per_sec']:.2f} "
      f"articles/s; peak RSS {result['peak_rss_gb']:.2f} GB")


def stats(times):
  return {"median": float(np.median(times)), "min": float(np.min(times)),
          "max": float(np.max(times)), "n": len(times)}


def graph_mode():
  """TF1 graph mode from here on (the real data is read eagerly before), with a fixed seed."""
  tf.compat.v1.disable_v2_behavior()
  tf.compat.v1.set_random_seed(0)


def initializer(f):
  mag = f.rand_unif_init_mag
  return tf.compat.v1.random_uniform_initializer(-mag, mag)


def main(argv):
  del argv
  require_tf_keras()
  f = flags.FLAGS
  result, line = time_decode(f) if f.decode else time_training(f)
  print(line)
  with open(f.json_out, "w", encoding="utf-8") as out:
    json.dump(result, out, indent=2)


if __name__ == "__main__":
  flags.DEFINE_integer("batch_size", 16, "Examples per step.")
  flags.DEFINE_integer("max_enc_steps", 400, "Article length of every example.")
  flags.DEFINE_integer("max_dec_steps", None, "Summary length of every example (default 100); "
                       "with --decode, the most decoder steps (default 120, as the paper's "
                       "test).")
  flags.DEFINE_integer("vocab_size", 50000, "Vocabulary size.")
  flags.DEFINE_integer("emb_dim", 128, "Embedding size.")
  flags.DEFINE_integer("hidden_dim", 256, "LSTM size.")
  flags.DEFINE_integer("steps", 10, "Timed steps after warm-up.")
  flags.DEFINE_integer("warmup", 2, "Untimed steps (with --decode: articles) first.")
  flags.DEFINE_boolean("decode", False, "Time the original's decode instead of training: its "
                       "one-step graph on beam_size copies of an article and its beam search in "
                       "Python, one article at a time, as its single-pass decode.")
  flags.DEFINE_integer("decode_articles", 8, "Timed articles (after --warmup) with --decode.")
  flags.DEFINE_integer("decode_skip", 0, "With --decode and --data_path: start at this "
                       "article (the first is 0).")
  flags.DEFINE_integer("beam_size", 4, "Hypotheses per article (--decode).")
  flags.DEFINE_integer("min_dec_steps", 35, "Fewest decoder steps before [STOP] ends a "
                       "hypothesis (--decode).")
  flags.DEFINE_float("rand_unif_init_mag", 0.02, "Every weight starts uniform in +-this.")
  flags.DEFINE_string("checkpoint_out", "", "With --decode: also save the decode graph's "
                      "initial weights as a TF1 checkpoint at this prefix (to decode the same "
                      "model with pointer_gen).")
  flags.DEFINE_string("json_out", "tf1_reference.json", "Where to write the results.")
  flags.DEFINE_string("data_path", "", "Real .bin data to time on (default: full-length "
                      "synthetic batches), e.g. ../shared/data/vietnews_bin/chunked/train_*.")
  flags.DEFINE_string("vocab_path", "", "Vocab of --data_path.")
  flags.DEFINE_boolean("bfc", False, "Use TensorFlow's BFC CPU allocator, as pointer_gen does "
                       "(the original ran with TensorFlow's default).")
  usage.parse_tool_flags(sys.argv)
  os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true" if flags.FLAGS.bfc else "false"
  usage.run_tool(main)
