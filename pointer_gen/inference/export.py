"""`--mode=export`: a self-contained SavedModel that turns raw article text into summaries.

The export is written as `--export_dir/<version>/` (TF Serving's layout; the version is the
checkpoint's global step unless `--export_version`). It is built in a temporary directory beside
`--export_dir`, reloaded and run on a test batch there, both with tf.saved_model.load and with
the session loader TF Serving runs, and only then renamed into place, so a server watching
`--export_dir` never sees a half-written or broken model. An existing version is never
overwritten.

Everything happens in the graph, with core TensorFlow ops only (no tensorflow-text), so stock
TF Serving and any TF runtime can run it without this package: tokenisation of raw text as the
training data was prepared (`raw_text`; ptb in RE2 passes of `tf.strings.regex_replace`), of
only as much of each article as its first max_enc_steps tokens need, the vocab lookup from the
vocab asset, the per-article OOV list and extended ids (`data.article_features`, as decode
mode), the compiled search (--search: a strategy of search/registry.py) with decode mode's
settings, and detokenisation. With
--export_compiled_attention the attention scores come from decode's XLA kernel instead: faster,
but only servers that run XLA can serve it.

Signatures:
  serving_default  article tf.string [B] ->
      summary     tf.string [B]                    the words as text for people
                                                   (text.written): joined by single spaces;
                                                   --tokenizer=cjk: none between two CJK
                                                   characters, nor beside their punctuation
      tokens      tf.string [B, max_dec_steps]     the summary's words, "" after its end
      log_prob    tf.float32 [B]                   sum of the log-probabilities of the summary's
                                                   tokens, the final [STOP] included
      p_gen_mean  tf.float32 [B]                   mean p_gen over the decoder steps ([STOP]
                                                   included, as decode mode's p_gen_mean)
  attention        article -> the same, plus
      attn_dists      tf.float32 [B, max_dec_steps, L]  attention over the article tokens
                                                        when each summary token was produced
      p_gens          tf.float32 [B, max_dec_steps]     p_gen for each summary token
      article_tokens  tf.string [B, L]                  the article as the model saw it
    (L = the longest article of the request after truncation, at least 1; rows and columns past
    a summary's or an article's end are 0 / "").
  settings         () -> the decode settings recorded at export (also in
                   assets.extra/pointer_gen_export.json), the strategy as `search`, and in
                   `decoding_defaults` the names of those that are the run's decoding defaults.

Input of any other shape than [B] (a scalar string) is an InvalidArgumentError saying so.
An article without tokens (empty or whitespace only) gets summary "", no tokens, log_prob 0 and
p_gen_mean 0. Invalid UTF-8 bytes (possible through gRPC or Python; JSON cannot carry them)
become U+FFFD before tokenisation, so every output string is valid UTF-8.
"""

import json
import os
import shutil
import tempfile

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen import attention as attention_lib
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.data import raw_text
from pointer_gen.data import run_record
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

VOCAB_ASSET = "vocab.txt"
SETTINGS_FILE = "pointer_gen_export.json"
SOURCES = ("train", "best")
# No quotes: the Assert op prints its message with quotes backslash-escaped.
ARTICLE_SHAPE_ERROR = ("the serving input article must be a 1-D batch of strings, shape "
                       "[batch]; put a single article in a list of one")
ARTICLE_SPEC = tf.TensorSpec([None], tf.string, name="article")

_WHOLE_LINE = tf.lookup.TextFileIndex.WHOLE_LINE
_LINE_NUMBER = tf.lookup.TextFileIndex.LINE_NUMBER


class _WordToId(tf.Module):
  """word -> id from the vocab asset (one entry a line, id = line number), unknown -> [UNK].

  A table filled from line numbers holds int64; the model's ids are int32.
  """

  def __init__(self, vocab_asset):
    super().__init__()
    self.table = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(vocab_asset, tf.string, _WHOLE_LINE, tf.int64,
                                      _LINE_NUMBER),
        default_value=vocab_lib.UNK_ID)

  def lookup(self, words):
    return tf.cast(self.table.lookup(words), tf.int32)


# The outputs of an export with --n_best > 1: each article's n best summaries [B, n] in rank
# order and their scores and log-probabilities.
N_BEST = ("n_best_summaries", "n_best_scores", "n_best_log_probs")


class ServingModule(tf.Module):
  """The model, its vocabulary and decode settings, with the serving signatures. vocab: the
  vocab.Vocab of vocab_file, which a decoding control naming words reads (else not needed)."""

  def __init__(self, model, vocab_file, hps, settings, vocab=None):
    super().__init__(name="pointer_gen")
    self.model = model
    self.vocab_asset = tf.saved_model.Asset(vocab_file)
    self.word_to_id = _WordToId(self.vocab_asset)
    self.id_to_word = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(self.vocab_asset, tf.int64, _LINE_NUMBER, tf.string,
                                      _WHOLE_LINE),
        default_value=vocab_lib.UNK)
    self._hps, self._vocab = hps, vocab
    self._settings = tuple(settings.items())

  # A SavedModel signature does not check the shape it is given (nor does a server): _batch
  # checks it at run time.
  @tf.function(autograph=False, input_signature=[ARTICLE_SPEC])
  def summarize(self, article):
    outputs = self._summarize(article, keep_attention=False)
    return {k: outputs[k] for k in ("summary", "tokens", "log_prob", "p_gen_mean", *N_BEST)
            if k in outputs}

  @tf.function(autograph=False, input_signature=[ARTICLE_SPEC])
  def attention(self, article):
    return self._summarize(article, keep_attention=True)

  @tf.function(autograph=False, input_signature=[])
  def settings(self):
    return {name: tf.constant(value) for name, value in self._settings}

  def _article_features(self, article):
    hps = self._hps
    raw = raw_text.for_raw_text(hps)
    # Outputs must be valid UTF-8 (REST responses are JSON); valid text passes unchanged.
    return data.article_features(article, self.word_to_id, self.model.vocab_size,
                                 hps.max_enc_steps, hps.pointer_gen, raw.tokenizer, raw.lowercase,
                                 repair_utf8=True)

  @staticmethod
  def _batch(article):
    """`article` ([B] as declared) checked at run time: an InvalidArgumentError saying what the
    input must be, for any other shape."""
    # The rank of a tensor declared [B] is folded to 1 before the graph runs (by tf.rank and
    # assert_rank, and by grappler in a loaded function), whatever is fed. Its shape's values are
    # not: padded with -1s, the first entry is >= 0 and the second -1 for rank 1 only.
    shape = tf.shape(article)  # [rank]
    dims = tf.concat([shape, [-1, -1]], 0)  # [rank + 2]
    check = tf.debugging.Assert((dims[0] >= 0) & (dims[1] < 0),
                                [ARTICLE_SHAPE_ERROR, "Received shape:", shape])
    with tf.control_dependencies([check]):
      return tf.identity(article)

  def _words(self, ids, length, has_text, oovs):
    """Summaries of their extended ids [B, T] ([STOP] included if generated, [PAD] after),
    tokens generated `length` [B], of the articles `has_text` [B] with OOV lists oovs [B, N]:
    generated [B, T], is_word [B, T] (a prefix of each row), the words [B, T] ("" after) and
    the summary strings [B]."""
    vocab_size = self.model.vocab_size
    max_oovs = tf.shape(oovs)[1]
    generated = tf.range(tf.shape(ids)[1])[None, :] < length[:, None]  # [B, T]
    before_stop = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, vocab_lib.STOP_ID), tf.int32),
                                     axis=1), 0)  # [B, T]
    is_word = generated & before_stop & has_text[:, None]  # [B, T], a prefix of each row
    in_vocab = self.id_to_word.lookup(tf.cast(ids, tf.int64))  # [B, T]
    # In-vocab ids gather (and discard) column 0: an extra "" column makes it exist even when
    # no article of the batch has OOVs.
    oov_table = tf.pad(oovs, [[0, 0], [0, 1]])  # [B, N+1]
    copied = tf.gather(oov_table, tf.clip_by_value(ids - vocab_size, 0, max_oovs),
                       batch_dims=1)  # [B, T]
    tokens = tf.where(is_word, tf.where(ids < vocab_size, in_vocab, copied), "")  # [B, T]
    num_words = tf.reduce_sum(tf.cast(is_word, tf.int32), axis=1)  # [B]
    summary = text.written(tf.RaggedTensor.from_tensor(tokens, lengths=num_words),
                           raw_text.for_raw_text(self._hps).tokenizer)  # [B]
    return generated, is_word, tokens, summary

  def _summarize(self, article, keep_attention):
    hps = self._hps
    article = self._batch(article)  # [B]
    ids = tf.RaggedTensorSpec([None], tf.int32, ragged_rank=0)
    strings = tf.RaggedTensorSpec([None], tf.string, ragged_rank=0)
    ragged = data.ArticleFeatures(article_tokens=strings, enc_input=ids, enc_input_ext=ids,
                                  article_oovs=strings)
    features = tf.map_fn(self._article_features, article, fn_output_signature=ragged)  # [B, (L)]
    enc_len = tf.cast(features.enc_input.row_lengths(), tf.int32)  # [B]
    has_text = enc_len > 0  # [B]
    # An article without tokens would attend over no positions (0 / 0 = NaN): it gets one
    # [PAD] position, the search runs harmlessly on that, and its outputs are replaced below.
    # Articles with tokens see exactly decode mode's batch (padded to the longest article).
    batch = tf.shape(article)[0]
    width = tf.maximum(tf.reduce_max(enc_len), 1)  # reduce_max of no articles is INT_MIN
    shape = tf.stack([batch, width])
    enc_input = features.enc_input.to_tensor(vocab_lib.PAD_ID, shape=shape)  # [B, L]
    enc_input_ext = features.enc_input_ext.to_tensor(vocab_lib.PAD_ID, shape=shape)  # [B, L]
    oovs = features.article_oovs.to_tensor("")  # [B, N]
    max_oovs = tf.shape(oovs)[1]
    # By default each article's encoder memory shared by its hypotheses, the attention scores
    # from core ops, or from decode's XLA kernel with --export_compiled_attention.
    settings = contract.Settings.from_hparams(hps, keep_attention=keep_attention,
                                              vocab=self._vocab)
    searcher = strategies.make(hps, settings, attention_lib.SearchAttention.of(hps, "export"))
    result = searcher.search(self.model, enc_input, tf.maximum(enc_len, 1), enc_input_ext,
                             max_oovs)

    generated, is_word, tokens, summary = self._words(result.tokens, result.length, has_text,
                                                      oovs)

    dtype = result.p_gens.dtype
    steps_p_gen = tf.reduce_sum(tf.where(generated, result.p_gens, 0.0), axis=1)  # [B]
    p_gen_mean = tf.math.divide_no_nan(steps_p_gen, tf.cast(result.length, dtype))  # [B]
    outputs = {
        "summary": summary,
        "tokens": tokens,
        "log_prob": tf.where(has_text, result.log_prob, 0.0),
        "p_gen_mean": tf.where(has_text, p_gen_mean, 0.0),
    }
    best = result.n_best
    if best is not None:
      ranks = tf.shape(best.tokens)[1]
      _, _, _, ranked = self._words(
          tf.reshape(best.tokens, [batch * ranks, -1]), tf.reshape(best.length, [-1]),
          tf.repeat(has_text, ranks), tf.repeat(oovs, ranks, axis=0))  # [B*n]
      outputs["n_best_summaries"] = tf.reshape(ranked, [batch, ranks])
      outputs["n_best_scores"] = tf.where(has_text[:, None], best.score, 0.0)  # [B, n]
      outputs["n_best_log_probs"] = tf.where(has_text[:, None], best.log_prob, 0.0)  # [B, n]
    if keep_attention:
      word_mask = tf.cast(is_word, dtype)  # [B, T]
      outputs["attn_dists"] = result.attn * word_mask[:, :, None]  # [B, T, L]
      outputs["p_gens"] = result.p_gens * word_mask  # [B, T]
      outputs["article_tokens"] = features.article_tokens.to_tensor("", shape=shape)  # [B, L]
    return outputs


def recorded_settings(hps, vocab_size, ckpt_path, step):
  """The decode settings an export runs with, for the `settings` signature and assets.extra."""
  raw_tokenizer, raw_lowercase = raw_text.for_raw_text(hps)
  return {
      "vocab_size": vocab_size,
      "max_enc_steps": hps.max_enc_steps,
      **strategies.written(hps, constants=True),
      # Which of them are the run's decoding defaults (<run>/decoding_defaults.json), not given
      # to the export: their names, comma-separated ("" for none).
      "decoding_defaults": ",".join(
          name for name, _ in (hps.decoding_defaults.values if hps.decoding_defaults else ())),
      # The attention's implementation; compiled_attention: an XLA kernel in it, so the server
      # must run XLA.
      "attention_implementation": attention_lib.chosen(hps, "export").name,
      "compiled_attention": attention_lib.chosen(hps, "export").uses_xla,
      # How the export tokenises its input (tokenizer and lowercase, below, read the run's data
      # files).
      "raw_tokenizer": raw_tokenizer,
      "raw_lowercase": raw_lowercase,
      # The run's model as its record holds it (the settings declared fixed or of its phase).
      **{name: getattr(hps, name) for name in run_record.fixed(hps) + run_record.phase(hps)
         if name not in ("vocab_size", "max_enc_steps")},
      "precision": hps.precision,
      "checkpoint": ckpt_path,
      "step": step,
  }


def serving_root(module):
  """The object the SavedModel is written from: the ServingModule's functions, its vocab asset and
  tables, and the tf.Variables its functions read, each written once.

  Not the ServingModule, which holds the Keras model: tf.saved_model.save writes each Keras 3
  variable as a new copy of its tf.Variable, so the SavedModel's own restore op fills the
  copies while the functions read the originals, which TF Serving's session loader then never
  sets ("Could not find variable"; only tf.saved_model.load, which rebinds them, ran such an
  export). Tracked here, the variables the functions capture are the ones restored.
  (keras.export.ExportArchive's exports also run there, but hold every weight twice: the
  Keras variables' copies beside the tf.Variables.)
  """
  root = tf.Module(name="pointer_gen_export")
  root.summarize, root.attention, root.settings = (module.summarize, module.attention,
                                                   module.settings)
  root.vocab_asset, root.word_to_id, root.id_to_word = (module.vocab_asset, module.word_to_id,
                                                        module.id_to_word)
  # The tf.Variable behind each Keras variable (outside a layer's call, `value` is that variable
  # itself, not an autocast copy). Not found by tracing the functions: tf.saved_model.save
  # traces them again in its own context, and each trace of a beam search takes seconds.
  root.model_variables = [weight.value for weight in module.model.weights]
  return root


def export(hps, vocab, ckpt_path, export_dir, version=None):
  """Writes the SavedModel of `ckpt_path` to export_dir/<version> and returns that path."""
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  step = checkpoints.restore_weights(model, ckpt_path)
  version = step if version is None else version
  export_dir = os.path.abspath(export_dir)
  target = os.path.join(export_dir, str(version))
  _refuse_existing(export_dir, target)
  parent, name = os.path.split(export_dir)
  os.makedirs(parent, exist_ok=True)
  # Beside export_dir, not in it: nothing unfinished ever appears where a server looks. The
  # SavedModel is a subdirectory because mkdtemp's directory is private (mode 0700).
  staging = tempfile.mkdtemp(prefix=f".{name}.export-{version}-", dir=parent)
  try:
    vocab_file = os.path.join(staging, VOCAB_ASSET)
    with open(vocab_file, "w", encoding="utf-8") as f:
      f.write("".join(word + "\n" for word in vocab.words))
    settings = recorded_settings(hps, len(vocab), ckpt_path, step)
    module = ServingModule(model, vocab_file, hps, settings, vocab)
    saved = os.path.join(staging, "saved_model")
    tf.saved_model.save(serving_root(module), saved, signatures={
        "serving_default": module.summarize, "attention": module.attention,
        "settings": module.settings})
    extra = os.path.join(saved, "assets.extra")
    os.makedirs(extra)
    with open(os.path.join(extra, SETTINGS_FILE), "w", encoding="utf-8") as f:
      json.dump(settings, f, indent=2)
    check_export(saved, vocab)
    _sync_tree(saved)
    os.makedirs(export_dir, exist_ok=True)
    try:
      os.rename(saved, target)
    except OSError as e:
      raise DataError(f"could not move the export into {target}: {e}") from e
  finally:
    shutil.rmtree(staging, ignore_errors=True)
  logging.info("Exported %s (step %d) to %s", ckpt_path, step, target)
  return target


def _refuse_existing(export_dir, target):
  if os.path.exists(export_dir) and not os.path.isdir(export_dir):
    raise DataError(f"--export_dir={export_dir} is a file, not a directory")
  if os.path.exists(os.path.join(export_dir, "saved_model.pb")):
    raise DataError(f"--export_dir={export_dir} is a SavedModel itself; give the directory that "
                    "holds the numbered versions (TF Serving's base path)")
  if os.path.lexists(target):
    raise DataError(f"{target} already exists; versions are never overwritten: remove it or "
                    "pass another --export_version")


def check_export(path, vocab):
  """Summarises an empty and a normal article with the SavedModel at `path` through both ways of
  loading one: tf.saved_model.load, and the session loader TF Serving's server, `saved_model_cli
  run` and the C API take (the MetaGraph's own restore and init ops, then a session). Both must
  run and give the same summaries."""
  article = " ".join(vocab.words[len(vocab_lib.SPECIALS):][:20] + ["zzzunseenword"])
  articles = ["", article]
  loaded = tf.saved_model.load(path)
  out = {k: v.numpy() for k, v in
         loaded.signatures["serving_default"](article=tf.constant(articles)).items()}
  summaries = out["summary"]
  # The second summary may legitimately be empty (--min_dec_steps=0), so only its score is checked.
  finite = bool(np.isfinite(out["log_prob"]).all())
  if summaries.shape != (2,) or summaries[0] != b"" or not finite:
    raise DataError(f"the export in {path} does not summarise its test articles: summaries "
                    f"{summaries.tolist()}, log_prob {out['log_prob'].tolist()}")
  try:
    served = _session_outputs(path, "serving_default", articles)
  except tf.errors.OpError as e:
    raise DataError(f"the export in {path} does not run under TensorFlow's session loader, as "
                    f"TF Serving loads it: {type(e).__name__}: {e.message}") from e
  if (served["summary"].tolist() != summaries.tolist()
      or not np.allclose(served["log_prob"], out["log_prob"], rtol=1e-5, atol=1e-5)):
    raise DataError(f"the export in {path} summarises differently under TensorFlow's session "
                    f"loader: {served['summary'].tolist()} (log_prob "
                    f"{served['log_prob'].tolist()}) instead of {summaries.tolist()} (log_prob "
                    f"{out['log_prob'].tolist()})")


def _session_outputs(path, signature, articles):
  """The outputs of `signature` for `articles` (a list of strings) as TF Serving computes them:
  the SavedModel imported into a fresh graph, its variables restored by its own restore op and
  its tables filled by its init op, the signature run in a session."""
  # Deprecated for TF2 programs, not for servers: its warning would name the loader
  # check_export has just run as the replacement.
  tf_logger = tf.get_logger()
  level = tf_logger.level
  tf_logger.setLevel("ERROR")
  try:
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
      meta_graph = tf.compat.v1.saved_model.loader.load(session, [tf.saved_model.SERVING], path)
      signature_def = meta_graph.signature_def[signature]
      return session.run({key: info.name for key, info in signature_def.outputs.items()},
                         {signature_def.inputs["article"].name: articles})
  finally:
    tf_logger.setLevel(level)


def _sync_tree(path):
  """Flushes every file under `path` to disk, so the renamed export survives a crash whole."""
  for directory, _, files in os.walk(path):
    for name in files:
      fd = os.open(os.path.join(directory, name), os.O_RDONLY)
      try:
        os.fsync(fd)
      finally:
        os.close(fd)


def run(hps, vocab):
  if not hps.export_dir:
    raise DataError("--mode=export needs --export_dir (TF Serving's base path; the export goes "
                    "to <export_dir>/<version>)")
  path = export(hps, vocab, checkpoints.to_export(hps), hps.export_dir, hps.export_version)
  print(f"Exported the SavedModel to {path}")
  return path
