"""`--mode=decode`: the search (--search) over articles; single-pass evaluation runs with ROUGE and
repetition figures, or the original's endless logging of random examples with attention JSON."""

import contextlib
import itertools
import json
import os
import re
import shutil
import time

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen import attention as attention_lib
from pointer_gen.base import checkpoints
from pointer_gen.base import files
from pointer_gen.base import stopping
from pointer_gen.base import tensorboard_log
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import make_output_dir
from pointer_gen.data import pipeline as data
from pointer_gen.data import raw_text
from pointer_gen.data import run_record
from pointer_gen.formats.skips import SkipCounter
from pointer_gen.inference import attention_view
from pointer_gen.inference import metrics
from pointer_gen.inference import reference_scores
from pointer_gen.inference import summaries
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.search import continuous_batching
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.text import tokenizers as text

RELOAD_SECS = 60
_PER_EXAMPLE = "per_example.jsonl"
# With --n_best > 1: each article's n best summaries, a line an article (docs/decoding.md).
_N_BEST = "n_best.jsonl"
# metrics.json's "flags" in the file's original layout: the search's settings
# (strategies.written) and the run's as used (from run_config.json when not given) where a beam
# decode's file has always had them, so that it stays the same byte for byte. A setting added
# since goes where it declares (its metrics_after), else after these: the run's record's other
# settings (run_record: fixed, of its phase, of the data's layout), then the search's.
_LAYOUT = (
    "data_path", "search", "min_dec_steps", "max_dec_steps", "max_enc_steps", "pointer_gen",
    "coverage", "rouge_tokenizer", "precision", "first_step_context", "compiled_attention",
    "attention_implementation", "vocab_path", "vocab_size", "hidden_dim", "emb_dim", "tokenizer",
    "lowercase", "raw_tokenizer", "raw_lowercase", "data_format")


def decode_dir_name(hps, ckpt_path):
  """The original's directory name, e.g. decode_test_400maxenc_4beam_35mindec_100maxdec_ckpt-5,
  with the data's format after the split when it is not the original's .bin (a test set as
  .bin and as raw JSONL are two data sets) and the search's settings as strategies.dir_name
  writes them (another strategy's name for `4beam`, a suffix for each search option off the
  original's default), so that decoding one checkpoint both ways gives two directories instead
  of a refusal to overwrite the first."""
  base = os.path.basename(hps.data_path)
  split = next((s for s in ("train", "val", "test") if s in base), None)
  if split is None:
    split = re.sub(r"[^A-Za-z0-9]+", "", base.split(".")[0]) or "data"
  data_format = data.files_of(hps).formats[0]
  if not data_format.original:
    split += f"_{data_format.name}"
  return (f"decode_{split}_{hps.max_enc_steps}maxenc_{strategies.dir_name(hps)}_"
          f"ckpt-{checkpoints.step_of(ckpt_path)}")


# The references --rouge_tokenizer is tried on before a single-pass decode starts.
REFERENCES_CHECKED = 100


def check_rouge_tokenizer(hps):
  """Raises DataError when --rouge_tokenizer loses over metrics.MAX_LOST_SHARE of the tokens of
  --data_path's first REFERENCES_CHECKED references (the default one on Chinese or Vietnamese),
  naming the share and the tokenizer to use: a decode would end with ROUGE of what is left."""
  records = itertools.islice(data.files_of(hps).read(SkipCounter()), REFERENCES_CHECKED)
  references = summaries.references_sentences(
      ["\n".join(r.abstract_sentences) for r in records], *hps.reads)
  share = metrics.lost_share(references, hps.rouge_tokenizer)
  if share is not None and share > metrics.MAX_LOST_SHARE:
    raise DataError(
        f"--rouge_tokenizer={hps.rouge_tokenizer} drops or breaks up {100 * share:.1f} % of "
        f"the reference tokens of the first {len(references)} examples of "
        f"--data_path={hps.data_path}: ROUGE would score what is left of them. Use "
        f"--rouge_tokenizer={metrics.suggested_tokenizer(references)}")


@contextlib.contextmanager
def _removed_if_failed_unwritten(directory, wrote):
  """Removes `directory` when it did not exist before and the decode in the block fails before
  `wrote()`: a decode that fails at start-up (corrupt data, a search that does not compile)
  leaves no empty directory that looks like a decode begun; one that fails later keeps what it
  wrote, which a rerun resumes from."""
  new = not os.path.exists(directory)
  try:
    yield
  except BaseException:
    if new and not wrote():
      shutil.rmtree(directory, ignore_errors=True)
    raise


class Progress:
  """The "Decoded k/n articles" line. The rate is measured from the end of the first batch:
  that batch also traces and compiles the search, which would make the first ETAs far too long.

  The ETA counts what is left to decode: the articles left at that rate, and the smaller shapes
  the last searches of `num_slots` run in once no article is left to take an ended slot
  (continuous_batching: powers of two, each compiled anew). Those take together about what the
  first batch spent compiling (its time beyond the rate's), a share of it for each shape still
  to come. Counting the articles alone, the line said ETA 0s while the last ones still took
  seconds."""

  def __init__(self, total, num_slots=1, first_done=0, clock=time.monotonic):
    self.total, self.num_slots, self.clock = total, num_slots, clock
    self.start, self.first_done = clock(), first_done
    self.mark = None  # (time, done) at the end of the first batch

  def line(self, done):
    now = self.clock()
    if self.mark is None:
      self.mark = (now, done)
      return f"Decoded {done}/{self.total} articles (the first batch includes compiling)"
    seconds, articles = now - self.mark[0], done - self.mark[1]
    rate = articles / seconds if seconds > 0 else 0.0
    eta = f"{self._seconds_left(done, rate):.0f}s" if rate > 0 else "?"
    return f"Decoded {done}/{self.total} articles, {rate:.2f} articles/s, ETA {eta}"

  def _seconds_left(self, done, rate):
    left = max(self.total - done, 0)
    first_batch = self.mark[1] - self.first_done
    compiling = max(self.mark[0] - self.start - first_batch / rate, 0.0)
    # The shapes below the searches still to run, down to 1 (16 slots: 8, 4, 2, 1), of all.
    tail_shapes = (min(left, self.num_slots) - 1).bit_length() if left else 0
    all_shapes = (self.num_slots - 1).bit_length()
    return left / rate + (compiling * tail_shapes / all_shapes if all_shapes else 0.0)


class SinglePassDecoder:
  """Decodes a data set once, in order, into decode_.../{reference,decoded}; resumable.

  `run` returns the metrics, or None if Ctrl-C or SIGTERM stopped it first (between batches;
  each example's files are written whole). The search is --search's strategy.
  """

  def __init__(self, hps, vocab, model, ckpt_path):
    self.hps, self.vocab, self.model = hps, vocab, model
    self.dir = os.path.join(hps.run_dir, hps.decode_dir or decode_dir_name(hps, ckpt_path))
    self.step = checkpoints.step_of(ckpt_path) or 0
    self.ref_dir = os.path.join(self.dir, "reference")
    self.dec_dir = os.path.join(self.dir, "decoded")
    self.wrote = False  # whether this run wrote an example's files

  def _already_decoded(self):
    """How many examples an interrupted run completed (decoded files 0..k-1 present)."""
    if os.path.exists(os.path.join(self.dir, "metrics.json")):
      raise DataError(f"{self.dir} already holds a finished decode (metrics.json); move it away, "
                      "decode another checkpoint, or name another directory with --decode_dir")
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
        if files.TEMPORARY_MARK in name:
          os.remove(os.path.join(directory, name))

  def run(self):
    with _removed_if_failed_unwritten(self.dir, lambda: self.wrote):
      return self._decode()

  def _decode(self):
    done = self._already_decoded()
    self._remove_partial_writes()
    make_output_dir(self.ref_dir)
    make_output_dir(self.dec_dir)
    per_example = self._per_example(done)
    if done:
      logging.info("Resuming the decode in %s after %d examples.", self.dir, done)
    source, dataset = data.input_pipeline(self.hps, self.vocab, single_pass=True, skip=done)
    total = source.num_records
    if self.hps.max_decode_examples:
      total = min(total, self.hps.max_decode_examples)
    # --batch_size searches side by side; each slot takes the next article as soon as its
    # search ends (continuous batching), and results come back in data order.
    settings = contract.Settings.from_hparams(self.hps, vocab=self.vocab)
    decoder = continuous_batching.SlotDecoder(
        self.model,
        strategies.make(self.hps, settings, attention_lib.SearchAttention.of(self.hps, "decode")),
        self.hps.batch_size, self.hps.max_enc_steps)
    articles = itertools.islice(summaries.examples(dataset), max(total - done, 0))
    reads = self.hps.reads
    progress, first_done = Progress(total, self.hps.batch_size, done), done
    n_best = (_kept_lines(os.path.join(self.dir, _N_BEST), done) if self.hps.n_best > 1
              else None)
    with open(os.path.join(self.dir, _PER_EXAMPLE), "a", encoding="utf-8") as log:
      for example, result in decoder.decode(articles):
        if stopping.requested():
          break
        summary = summaries.DecodedSummary(self.vocab, result, example, reads)
        # The log line goes before the decoded file, whose presence marks the example done:
        # a kill between the two then leaves a surplus line (dropped on resume), never a
        # decoded example without its line (which the resume refuses).
        with stopping.critical():
          self.wrote = True
          log.write(json.dumps({"index": done, "p_gen_mean": float(np.mean(summary.p_gens)),
                                "steps": summary.num_steps}) + "\n")
          log.flush()
          if n_best:
            line = summaries.n_best_line(self.vocab, result, example, done)
            n_best.write(json.dumps(line, ensure_ascii=False) + "\n")
            n_best.flush()
          self._write_example(done, summary)
        per_example.append(float(np.mean(summary.p_gens)))
        done += 1
        if (done - first_done) % self.hps.batch_size == 0 or done == total:
          logging.info("%s", progress.line(done))
    if n_best:
      n_best.close()
    if done < total and stopping.requested():
      return None  # the same command resumes after the `done` examples written
    source.raise_if_failed()
    return self._finish(done, per_example, source.skips)

  def _per_example(self, done):
    """p_gen means of the examples an earlier run finished (lines past `done` are dropped)."""
    path = os.path.join(self.dir, _PER_EXAMPLE)
    values = {i: row["p_gen_mean"] for i, row in _rows_by_index(path).items()}
    kept = [values[i] for i in range(done) if i in values]
    if len(kept) != done:
      raise DataError(f"{path} lacks entries for the {done} examples already decoded in "
                      f"{self.dec_dir}; remove {self.dir} to start over")
    files.write_text_atomic(path, "".join(
        json.dumps({"index": i, "p_gen_mean": v}) + "\n" for i, v in enumerate(kept)))
    return kept

  def _write_example(self, index, summary):
    # Reference first: a decoded file present means its example is complete.
    files.write_text_atomic(os.path.join(self.ref_dir, f"{index:06d}_reference.txt"),
                            "\n".join(summary.reference) + "\n")
    files.write_text_atomic(os.path.join(self.dec_dir, f"{index:06d}_decoded.txt"),
                            "\n".join(summary.sentences) + "\n")

  def _finish(self, count, p_gen_means, skips):
    decoded, references = [], []
    for i in range(count):
      decoded.append(_read_lines(os.path.join(self.dec_dir, f"{i:06d}_decoded.txt")))
      references.append(_read_lines(os.path.join(self.ref_dir, f"{i:06d}_reference.txt")))
    rouge = metrics.rouge(decoded, references, tokenizer=self.hps.rouge_tokenizer)
    ngrams = summaries.ngram_figures(decoded, references, self._articles(count),
                                     *self.hps.reads)
    result = {
        "num_examples": count,
        "rouge": {k: v for k, v in rouge.items() if k != "per_example"},
        "ngrams": ngrams,
        "p_gen_mean": float(np.mean(p_gen_means)) if self.model.pointer_gen and count else None,
        "skipped_records": dict(skips.counts),
        "flags": _flags(self.hps),
    }
    files.write_text_atomic(os.path.join(self.dir, "ROUGE_results.txt"),
                            metrics.rouge_results_text(rouge))
    self._write_figures(result)
    # Written last: its presence marks the decode as finished.
    files.write_text_atomic(os.path.join(self.dir, "metrics.json"),
                            json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(final_report(result, self.dir))
    return result

  def _write_figures(self, result):
    """The figures of tensorboard_figures as TensorBoard scalars in this directory, under the
    checkpoint's step: `tensorboard --logdir=<run>` shows the decodes of a run's checkpoints
    side by side."""
    writer = tf.summary.create_file_writer(self.dir)
    with stopping.critical():
      with writer.as_default():
        for tag, value in tensorboard_figures(result).items():
          tensorboard_log.scalar(tag, value, self.step)
      writer.close()

  def _articles(self, count):
    """The articles of the first `count` examples, as in the data."""
    source = data.RecordSource(data.files_of(self.hps), single_pass=True)
    articles = []
    for article, _ in source():
      if len(articles) == count:
        break
      articles.append(article)
    return articles


def _rows_by_index(path):
  """{index: row} of one of the decode's JSON-lines files (none: {}), a line an example."""
  rows = {}
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      for line in f:
        try:
          row = json.loads(line)
        except json.JSONDecodeError:
          continue  # the last line of a killed run may be cut short
        rows[row["index"]] = row
  return rows


def _kept_lines(path, done):
  """`path` (JSON lines by "index") opened to append, holding the lines of the `done` examples
  already decoded alone (a killed run's surplus line dropped)."""
  rows = _rows_by_index(path)
  files.write_text_atomic(path, "".join(json.dumps(rows[i], ensure_ascii=False) + "\n"
                                        for i in sorted(rows) if i < done))
  return open(path, "a", encoding="utf-8")  # pylint: disable=consider-using-with


def _flags(hps):
  """metrics.json's "flags": the search's settings and the run's, in _LAYOUT's order."""
  recorded = run_record.fixed(hps) + run_record.phase(hps) + run_record.data_layout(hps)
  searched = strategies.written(hps)  # the default strategy's name left out: not written
  flags = {**{name: getattr(hps, name) for name in dict.fromkeys(_LAYOUT + recorded)
              if name not in {"search", *searched}}, **searched}
  ordered = list(_LAYOUT)
  for name, after in strategies.metrics_after().items():
    ordered.insert(ordered.index(after) + 1, name)
  order = {name: place for place, name in enumerate(ordered)}
  # sorted is stable: the flags not in _LAYOUT keep their order, after those in it.
  return dict(sorted(flags.items(), key=lambda item: order.get(item[0], len(order))))


def tensorboard_figures(result):
  """{tag: value} of a single-pass decode's result for TensorBoard: ROUGE-1/2/L F (the mid
  estimate) and the decoded and reference duplicate 3-gram percentages."""
  figures = {f"rouge/{key}_f": result["rouge"][key]["f_score"]["mid"]
             for key in ("rouge_1", "rouge_2", "rouge_l")}
  for side, prefix in (("decoded", ""), ("reference", "reference_")):
    figures[f"repetition/{prefix}duplicate_3grams_pct"] = (
        result["ngrams"][side]["duplicate_ngrams_pct"]["3"])
  return figures


def final_report(result, directory):
  """The lines single-pass decode prints at its end: ROUGE F with intervals and repetition."""
  lines = [f"ROUGE and repetition figures for {result['num_examples']} examples in "
           f"{os.path.abspath(directory)} (metrics.json):"]
  for key, name in (("rouge_1", "ROUGE-1"), ("rouge_2", "ROUGE-2"), ("rouge_l", "ROUGE-L")):
    f_score = result["rouge"][key]["f_score"]
    lines.append(f"  {name} F {f_score['mid']:.4f} (95% interval {f_score['low']:.4f}-"
                 f"{f_score['high']:.4f})")
  duplicates = {side: result["ngrams"][side]["duplicate_ngrams_pct"]["3"]
                for side in ("decoded", "reference")}
  lines.append(f"  duplicate 3-grams: decoded {duplicates['decoded']:.2f}%, reference "
               f"{duplicates['reference']:.2f}%")
  return "\n".join(lines)


def _read_lines(path):
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n") for line in f if line.strip()]


def _marked(words, oovs, tokenizer="whitespace"):
  return text.written_text(words, tokenizer, [f"__{w}__" if w in oovs else w for w in words])


class CheckpointFollowingDecoder:
  """The original's non-single-pass decode: random examples forever, newest checkpoint every
  RELOAD_SECS, a log of each, and the attention-visualisation JSON. The search is --search's
  strategy."""

  def __init__(self, hps, vocab, model, ckpt_path):
    self.hps, self.vocab, self.model = hps, vocab, model
    self.ckpt_path = ckpt_path
    self.reads = hps.reads  # (tokenizer, lowercase) of the data's articles
    self.writes = raw_text.for_raw_text(hps).tokenizer  # whose text.written the logs show
    self.dir = os.path.join(hps.run_dir, "decode")
    self.vis_dir = os.path.join(self.dir, "attn_vis")
    self.count = 0  # the examples this run decoded and wrote

  def _vis_files(self):
    """The attn_vis/NNNNNN.json files present as (index, name), oldest (lowest) first."""
    found = (re.fullmatch(r"(\d+)\.json", n) for n in os.listdir(self.vis_dir))
    return sorted((int(m.group(1)), m.group(0)) for m in found if m)

  def run(self):
    with _removed_if_failed_unwritten(self.dir, lambda: self.count > 0):
      self._decode()

  def _decode(self):
    make_output_dir(self.vis_dir)
    # Numbering goes on after an earlier run's files, so that the newest have the highest.
    earlier = self._vis_files()
    index = earlier[-1][0] + 1 if earlier else 0
    source, dataset = data.input_pipeline(self.hps, self.vocab, single_pass=False, batch_size=1)
    search = summaries.make_search(self.model, strategies.make(
        self.hps, contract.Settings.from_hparams(self.hps, keep_attention=True, vocab=self.vocab),
        attention_lib.SearchAttention.of(self.hps, "view")))
    last_load = time.time()
    for batch in dataset:
      if stopping.requested():
        break
      (example,) = summaries.examples([batch])
      (result,) = summaries.run_search(search, batch)
      summary = summaries.DecodedSummary(self.vocab, result, example, self.reads)
      article_words = summary.article.split()[:self.hps.max_enc_steps]
      logging.info("ARTICLE:  %s", _marked(article_words, summary.oovs))
      logging.info("REFERENCE SUMMARY: %s", text.written_sentences(summary.reference,
                                                                  self.writes))
      logging.info("GENERATED SUMMARY: %s", _marked(summary.words, summary.oovs, self.writes))
      with stopping.critical():
        self._write_attention(index, example, summary)
      index += 1
      self.count += 1
      if self.hps.max_decode_examples and self.count >= self.hps.max_decode_examples:
        break
      if time.time() - last_load >= RELOAD_SECS:
        self._reload()
        last_load = time.time()
    source.raise_if_failed()

  def _reload(self):
    newest = checkpoints.newest(self.hps.train_dir)
    if newest and newest != self.ckpt_path:
      try:
        if checkpoints.has_coverage(newest) != self.model.coverage:
          logging.info("Keeping %s: the newest checkpoint %s is of the run's other phase "
                       "(coverage or not); restart decode to use it.", self.ckpt_path, newest)
          return
        checkpoints.restore_weights(self.model, newest)
        self.ckpt_path = newest
      except tf.errors.OpError as e:
        logging.warning("Could not load %s (%s); keeping %s", newest, e, self.ckpt_path)

  def _write_attention(self, index, example, summary):
    article = attention_view.article_tokens(example.article, self.reads,
                                            self.hps.max_enc_steps)
    record = attention_view.record(summary, article, self.model.pointer_gen, self.writes)
    payload = json.dumps(record, ensure_ascii=False)
    if self.hps.max_attn_vis_files:
      files.write_text_atomic(os.path.join(self.vis_dir, f"{index:06d}.json"), payload)
    files.write_text_atomic(os.path.join(self.dir, "attn_vis_data.json"), payload)
    # --max_attn_vis_files newest kept: a decode left running otherwise fills the disk.
    kept = self._vis_files()
    for _, name in kept[:max(len(kept) - self.hps.max_attn_vis_files, 0)]:
      os.remove(os.path.join(self.vis_dir, name))


def run(hps, vocab):
  """Decodes with --search's strategy, the beam search by default."""
  if hps.single_pass:
    check_rouge_tokenizer(hps)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  ckpt_path = checkpoints.resolve(hps, hps.ckpt_path)
  checkpoints.restore_weights(model, ckpt_path)
  if hps.score_references:
    directory = os.path.join(hps.run_dir, hps.decode_dir or (
        "scores_" + decode_dir_name(hps, ckpt_path).removeprefix("decode_")))
    with stopping.until_stopped():
      return reference_scores.run(hps, vocab, model, ckpt_path, directory)
  decoder_class = SinglePassDecoder if hps.single_pass else CheckpointFollowingDecoder
  with stopping.until_stopped():
    return decoder_class(hps, vocab, model, ckpt_path).run()
