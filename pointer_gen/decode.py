"""`--mode=decode`: beam search over articles; single-pass evaluation runs with ROUGE and
repetition figures, or the original's endless logging of random examples with attention JSON."""

import json
import os
import re
import time

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen import beam_search
from pointer_gen import checkpoints
from pointer_gen import data
from pointer_gen import metrics
from pointer_gen import model as model_lib
from pointer_gen import text
from pointer_gen import vocab as vocab_lib
from pointer_gen.errors import DataError
from pointer_gen.errors import make_output_dir

RELOAD_SECS = 60
_PER_EXAMPLE = "per_example.jsonl"


def decode_dir_name(hps, ckpt_path):
  """The original's directory name, e.g. decode_test_400maxenc_4beam_35mindec_100maxdec_ckpt-5."""
  base = os.path.basename(hps.data_path)
  split = next((s for s in ("train", "val", "test") if s in base), None)
  if split is None:
    split = re.sub(r"[^A-Za-z0-9]+", "", base.split(".")[0]) or "data"
  return (f"decode_{split}_{hps.max_enc_steps}maxenc_{hps.beam_size}beam_"
          f"{hps.min_dec_steps}mindec_{hps.max_dec_steps}maxdec_ckpt-{checkpoints.step_of(ckpt_path)}")


def make_search(model, hps, keep_attention=False):
  """The whole beam search for a batch of articles as one compiled function."""
  ids = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[ids, tf.TensorSpec([None], tf.int32), ids,
                                tf.TensorSpec([], tf.int32)])
  def search(enc_input, enc_len, enc_input_ext, max_oovs):
    return beam_search.beam_search(model, enc_input, enc_len, enc_input_ext, max_oovs,
                                   hps.beam_size, hps.max_dec_steps, hps.min_dec_steps,
                                   keep_attention, hps.block_ngram_repeat,
                                   hps.length_penalty_alpha)

  return search


def run_search(search, batch):
  result = search(batch["enc_input"], batch["enc_len"], batch["enc_input_ext"],
                  tf.reduce_max(batch["num_oovs"]))
  return {k: v.numpy() for k, v in result.items()}


def _strings(tensor):
  return [s.decode("utf-8") for s in tensor.numpy()]


class Summary:
  """One decoded example, as words."""

  def __init__(self, vocab, result, batch, n):
    oovs = _strings(batch["article_oovs"][n])[:int(batch["num_oovs"][n])]
    length = int(result["length"][n])
    ids = [int(i) for i in result["tokens"][n, :length]]
    words = vocab.outputids2words(ids, oovs)
    if vocab_lib.STOP in words:
      words = words[:words.index(vocab_lib.STOP)]
    self.words = words
    self.oovs = set(oovs)
    self.num_steps = length
    self.p_gens = result["p_gens"][n, :length]
    self.attn = result["attn"][n, :length, :int(batch["enc_len"][n])] if "attn" in result else None
    self.sentences = metrics.sentences_from_words(words)
    self.reference = [s for s in batch["abstract"][n].numpy().decode("utf-8").split("\n")
                      if s.strip()]
    self.article = batch["article"][n].numpy().decode("utf-8")


def _progress(done, total, start, first_done):
  elapsed = time.time() - start
  rate = (done - first_done) / elapsed if elapsed > 0 else 0.0
  left = max(total - done, 0)
  eta = f"{left / rate:.0f}s" if rate > 0 else "?"
  logging.info("Decoded %d/%d articles, %.2f articles/s, ETA %s", done, total, rate, eta)


class SinglePassDecoder:
  """Decodes a data set once, in order, into decode_.../{reference,decoded}; resumable."""

  def __init__(self, hps, vocab, model, ckpt_path):
    self.hps, self.vocab, self.model = hps, vocab, model
    self.dir = os.path.join(hps.run_dir, decode_dir_name(hps, ckpt_path))
    self.ref_dir = os.path.join(self.dir, "reference")
    self.dec_dir = os.path.join(self.dir, "decoded")

  def _already_decoded(self):
    """How many examples an interrupted run completed (decoded files 0..k-1 present)."""
    if os.path.exists(os.path.join(self.dir, "metrics.json")):
      raise DataError(f"{self.dir} already holds a finished decode (metrics.json); move it away "
                      "or decode another checkpoint")
    done = 0
    while os.path.exists(os.path.join(self.dec_dir, f"{done:06d}_decoded.txt")):
      done += 1
    return done

  def _remove_partial_writes(self):
    """Deletes the temporary files of writes an interrupted run did not finish: nothing here
    reads them, but tools that list decoded/ (pyrouge's `(\\d+)_decoded.txt`) would take them
    for examples."""
    for directory in (self.dir, self.ref_dir, self.dec_dir):
      for name in os.listdir(directory) if os.path.isdir(directory) else []:
        if ".tmp-" in name:
          os.remove(os.path.join(directory, name))

  def run(self):
    done = self._already_decoded()
    self._remove_partial_writes()
    make_output_dir(self.ref_dir)
    make_output_dir(self.dec_dir)
    per_example = self._per_example(done)
    if done:
      logging.info("Resuming the decode in %s after %d examples.", self.dir, done)
    source = data.RecordSource(self.hps.data_path, self.hps.data_format, single_pass=True,
                               skip=done, **data.json_fields(self.hps))
    total = source.num_records
    if self.hps.max_decode_examples:
      total = min(total, self.hps.max_decode_examples)
    dataset = data.make_dataset(source, self.vocab.lookup_table(), len(self.vocab), self.hps)
    search = make_search(self.model, self.hps)
    start, first_done = time.time(), done
    with open(os.path.join(self.dir, _PER_EXAMPLE), "a", encoding="utf-8") as log:
      for batch in dataset:
        result = run_search(search, batch)
        for n in range(len(result["length"])):
          if done >= total:
            break
          summary = Summary(self.vocab, result, batch, n)
          # The log line goes before the decoded file, whose presence marks the example done:
          # a kill between the two then leaves a surplus line (dropped on resume), never a
          # decoded example without its line (which the resume refuses).
          log.write(json.dumps({"index": done, "p_gen_mean": float(np.mean(summary.p_gens)),
                                "steps": summary.num_steps}) + "\n")
          log.flush()
          self._write_example(done, summary)
          per_example.append(float(np.mean(summary.p_gens)))
          done += 1
        _progress(done, total, start, first_done)
        if done >= total:
          break
    source.raise_if_failed()
    return self._finish(done, per_example, source.skips)

  def _per_example(self, done):
    """p_gen means of the examples an earlier run finished (lines past `done` are dropped)."""
    path = os.path.join(self.dir, _PER_EXAMPLE)
    values = {}
    if os.path.exists(path):
      with open(path, encoding="utf-8") as f:
        for line in f:
          try:
            row = json.loads(line)
          except json.JSONDecodeError:
            continue  # the last line of a killed run may be cut short
          values[row["index"]] = row["p_gen_mean"]
    kept = [values[i] for i in range(done) if i in values]
    if len(kept) != done:
      raise DataError(f"{path} lacks entries for the {done} examples already decoded in "
                      f"{self.dec_dir}; remove {self.dir} to start over")
    metrics.write_text_atomic(path, "".join(
        json.dumps({"index": i, "p_gen_mean": v}) + "\n" for i, v in enumerate(kept)))
    return kept

  def _write_example(self, index, summary):
    # Reference first: a decoded file present means its example is complete.
    metrics.write_text_atomic(os.path.join(self.ref_dir, f"{index:06d}_reference.txt"),
                              "\n".join(summary.reference) + "\n")
    metrics.write_text_atomic(os.path.join(self.dec_dir, f"{index:06d}_decoded.txt"),
                              "\n".join(summary.sentences) + "\n")

  def _finish(self, count, p_gen_means, skips):
    decoded, references = [], []
    for i in range(count):
      decoded.append(_read_lines(os.path.join(self.dec_dir, f"{i:06d}_decoded.txt")))
      references.append(_read_lines(os.path.join(self.ref_dir, f"{i:06d}_reference.txt")))
    articles = self._article_tokens(count)
    rouge = metrics.rouge(decoded, references, tokenizer=self.hps.rouge_tokenizer)
    ngrams = metrics.ngram_stats([" ".join(d).split() for d in decoded],
                                 [" ".join(r).split() for r in references], articles)
    result = {
        "num_examples": count,
        "rouge": {k: v for k, v in rouge.items() if k != "per_example"},
        "ngrams": ngrams,
        "p_gen_mean": float(np.mean(p_gen_means)) if self.model.pointer_gen and count else None,
        "skipped_records": dict(skips.counts),
        "flags": {k: getattr(self.hps, k) for k in (
            "data_path", "beam_size", "min_dec_steps", "max_dec_steps", "max_enc_steps",
            "pointer_gen", "coverage", "rouge_tokenizer", "block_ngram_repeat",
            "length_penalty_alpha",
            # The run's settings as used (from run_config.json when not given).
            "vocab_path", "vocab_size", "hidden_dim", "emb_dim", "tokenizer", "lowercase",
            "data_format", "article_key", "abstract_key")},
    }
    metrics.write_text_atomic(os.path.join(self.dir, "ROUGE_results.txt"),
                              metrics.rouge_results_text(rouge))
    # Written last: its presence marks the decode as finished.
    metrics.write_text_atomic(os.path.join(self.dir, "metrics.json"),
                              json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    logging.info("ROUGE and repetition figures for %d examples written to %s", count, self.dir)
    return result

  def _article_tokens(self, count):
    """The articles of the first `count` examples, tokenised as the model saw them."""
    source = data.RecordSource(self.hps.data_path, self.hps.data_format, single_pass=True,
                               **data.json_fields(self.hps))
    articles = []
    for article, _ in source():
      if len(articles) == count:
        break
      articles.append(article)
    tokens = text.tokenize(tf.constant(articles, tf.string) if articles else
                           tf.zeros([0], tf.string), self.hps.tokenizer, self.hps.lowercase)
    return [[t.decode("utf-8") for t in row] for row in tokens.to_list()]


def _read_lines(path):
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n") for line in f if line.strip()]


def _marked(words, oovs):
  return " ".join(f"__{w}__" if w in oovs else w for w in words)


class ContinuousDecoder:
  """The original's non-single-pass decode: random examples forever, newest checkpoint every
  RELOAD_SECS, a log of each, and the attention-visualisation JSON."""

  def __init__(self, hps, vocab, model, ckpt_path):
    self.hps, self.vocab, self.model = hps, vocab, model
    self.ckpt_path = ckpt_path
    self.dir = os.path.join(hps.run_dir, "decode")

  def run(self):
    make_output_dir(os.path.join(self.dir, "attn_vis"))
    source = data.RecordSource(self.hps.data_path, self.hps.data_format, seed=self.hps.seed,
                               **data.json_fields(self.hps))
    dataset = data.make_dataset(source, self.vocab.lookup_table(), len(self.vocab),
                                self.hps.replace(single_pass=False), batch_size=1)
    search = make_search(self.model, self.hps, keep_attention=True)
    last_load = time.time()
    count = 0
    for batch in dataset:
      summary = Summary(self.vocab, run_search(search, batch), batch, 0)
      article_words = summary.article.split()[:self.hps.max_enc_steps]
      logging.info("ARTICLE:  %s", _marked(article_words, summary.oovs))
      logging.info("REFERENCE SUMMARY: %s", " ".join(summary.reference))
      logging.info("GENERATED SUMMARY: %s", _marked(summary.words, summary.oovs))
      self._write_attention(count, batch, summary)
      count += 1
      if self.hps.max_decode_examples and count >= self.hps.max_decode_examples:
        break
      if time.time() - last_load >= RELOAD_SECS:
        self._reload()
        last_load = time.time()
    source.raise_if_failed()

  def _reload(self):
    newest = checkpoints.newest(self.hps.train_dir)
    if newest and newest != self.ckpt_path:
      try:
        checkpoints.restore_weights(self.model, newest)
        self.ckpt_path = newest
      except tf.errors.OpError as e:
        logging.warning("Could not load %s (%s); keeping %s", newest, e, self.ckpt_path)

  def _write_attention(self, index, batch, summary):
    tokens = text.tokenize(batch["article"][0], self.hps.tokenizer, self.hps.lowercase)
    article = [t.decode("utf-8") for t in tokens.numpy()[:self.hps.max_enc_steps]]
    oovs = set(_strings(batch["article_oovs"][0]))
    record = {
        "article_lst": [f"__{w}__" if w in oovs else w for w in article],
        "decoded_lst": [f"__{w}__" if w in summary.oovs else w for w in summary.words],
        "abstract_str": " ".join(summary.reference),
        "attn_dists": summary.attn[:len(summary.words)].tolist(),
    }
    if self.model.pointer_gen:
      record["p_gens"] = summary.p_gens[:len(summary.words)].tolist()
    payload = json.dumps(record, ensure_ascii=False)
    metrics.write_text_atomic(os.path.join(self.dir, "attn_vis", f"{index:06d}.json"), payload)
    metrics.write_text_atomic(os.path.join(self.dir, "attn_vis_data.json"), payload)


def run(hps, vocab):
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  ckpt_path = checkpoints.resolve(hps, hps.ckpt_path)
  checkpoints.restore_weights(model, ckpt_path)
  decoder_class = SinglePassDecoder if hps.single_pass else ContinuousDecoder
  return decoder_class(hps, vocab, model, ckpt_path).run()
