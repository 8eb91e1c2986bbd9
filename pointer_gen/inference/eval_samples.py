"""Eval's samples (--eval_samples): a few fixed validation articles decoded at each checkpoint
eval scores, and shown in TensorBoard under the checkpoint's step.

The articles are the first --eval_samples of --data_path, in data order. Each is decoded with
the decode flags (--search and its settings, --min_dec_steps, --max_dec_steps) exactly
as continuous `--mode=decode` decodes an article: alone, at its own length. A batch of several
would pad them to the longest, which moves the attention in its last bits and can change the
beam's choice; alone, each picture shows the very numbers decode writes for that checkpoint and
article. Written to eval's writer (<run>/eval):

  samples/text_<i>       markdown: the summary (words found in the article in bold, OOV words in
                         italics), the reference, the article's start and the summary's p_gen
                         per word
  samples/attention_<i>  the attention picture (attention_view.image)
  samples/mean_length, samples/p_gen_mean, samples/duplicate_3grams_pct
                         over the samples, as single-pass decode's figures: mean summary
                         length in tokens, the mean of each summary's mean p_gen (pointer-
                         generator only), duplicate 3-grams as a percentage of all 3-grams
"""

import itertools
import time

from absl import logging
import numpy as np

from pointer_gen import attention as attention_lib
from pointer_gen.base import stopping
from pointer_gen.base import tensorboard_log
from pointer_gen.data import pipeline as data
from pointer_gen.data import raw_text
from pointer_gen.inference import attention_view
from pointer_gen.inference import summaries
from pointer_gen.search import contract
from pointer_gen.search import registry as strategies
from pointer_gen.text import tokenizers as text

ARTICLE_START_TOKENS = 60
# Python-Markdown's backslash escapes; `&` and `<` go as HTML entities.
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()>#+-.!|")

TEXT_DESCRIPTION = ("A validation article decoded with this checkpoint: the summary (**bold**: "
                    "the word is in the article; *italics*: out of the vocabulary, copied), the "
                    "reference, the article's start and the summary's p_gen per word.")
IMAGE_DESCRIPTION = ("The attention of each summary word (rows) over the article's tokens "
                     "(columns): white at 0, darkest at 1, by the square root (the largest "
                     "weight is given top left); p_gen bars at the right. The same picture as "
                     "--mode=decode's attn_vis JSON of this article and checkpoint gives.")


def escape(words):
  """Plain text as markdown that shows it as it is."""
  words = words.replace("&", "&amp;").replace("<", "&lt;")
  return "".join(f"\\{c}" if c in _MARKDOWN_SPECIAL else c for c in words)


def markdown(summary, article, pointer_gen, tokenizer="whitespace"):
  """The text of one sample: a summaries.DecodedSummary whose article's tokens are `article`,
  written for people as `tokenizer` (the run's raw tokenizer: text.written) writes them."""
  in_article = set(article)

  def marked(word):
    shown = escape(word)
    if word in summary.oovs:
      shown = f"*{shown}*"
    return f"**{shown}**" if word in in_article else shown

  shown = article[:ARTICLE_START_TOKENS]
  start = text.written_text(shown, tokenizer, [f"*{escape(w)}*" if w in summary.oovs
                                               else escape(w) for w in shown])
  more = " …" if len(article) > ARTICLE_START_TOKENS else ""
  lines = [
      f"**Summary** ({len(summary.words)} words; **bold**: in the article, *italics*: out of "
      "the vocabulary)", "",
      text.written_text(summary.words, tokenizer, [marked(w) for w in summary.words])
      or "(empty)", "",
      "**Reference**", "", escape(text.written_sentences(summary.reference, tokenizer)), "",
      f"**Article** ({_tokens_shown(len(article))})", "", start + more]
  if pointer_gen:
    lines += ["", "| # | word | p_gen |", "|---:|---|---:|"]
    lines += [f"| {i} | {marked(w)} | {p:.3f} |"
              for i, (w, p) in enumerate(zip(summary.words, summary.p_gens))]
  return "\n".join(lines)


def _tokens_shown(count):
  if count <= ARTICLE_START_TOKENS:
    return f"{count} tokens"
  return f"its first {ARTICLE_START_TOKENS} of {count} tokens"


class Samples:
  """The samples of one eval: `write(step, writer)` decodes them with the model as it is now
  (the checkpoint of `step`) and writes them."""

  def __init__(self, hps, vocab, model):
    self.vocab, self.pointer_gen = vocab, model.pointer_gen
    source, dataset = data.input_pipeline(hps, vocab, single_pass=True, batch_size=1)
    self.batches = list(itertools.islice(dataset, hps.eval_samples))
    source.raise_if_failed()
    self.examples = [next(summaries.examples([batch])) for batch in self.batches]
    self.reads = hps.reads  # (tokenizer, lowercase) of the data's articles
    self.writes = raw_text.for_raw_text(hps).tokenizer  # whose text.written the text shows
    self.articles = [attention_view.article_tokens(e.article, self.reads, hps.max_enc_steps)
                     for e in self.examples]
    self.search = summaries.make_search(model, strategies.make(
        hps, contract.Settings.from_hparams(hps, keep_attention=True, vocab=vocab),
        attention_lib.SearchAttention.of(hps, "view")))
    logging.info("Eval samples: the first %d articles of %s, decoded at each checkpoint.",
                 len(self.batches), hps.data_path)

  def decode(self):
    """(DecodedSummary, attention record) of each sample, with the model's current weights; fewer if
    a stop is requested."""
    decoded = []
    for batch, example, article in zip(self.batches, self.examples, self.articles):
      if stopping.requested():
        break
      (result,) = summaries.run_search(self.search, batch)
      summary = summaries.DecodedSummary(self.vocab, result, example, self.reads)
      decoded.append((summary, attention_view.record(summary, article, self.pointer_gen,
                                                     self.writes)))
    return decoded

  def write(self, step, writer):
    """Decodes the samples and writes their text, pictures and figures under `step`."""
    start = time.monotonic()
    decoded = self.decode()
    if len(decoded) < len(self.batches):
      return  # stopped
    with writer.as_default():
      for i, ((summary, record), article) in enumerate(zip(decoded, self.articles)):
        tensorboard_log.text(f"samples/text_{i}",
                             markdown(summary, article, self.pointer_gen, self.writes), step,
                             TEXT_DESCRIPTION)
        tensorboard_log.image(f"samples/attention_{i}", attention_view.image(record), step,
                              IMAGE_DESCRIPTION)
      for tag, value in self.figures([summary for summary, _ in decoded]).items():
        tensorboard_log.scalar(tag, value, step)
    logging.info("Eval samples of step %d written in %.2f s.", step, time.monotonic() - start)

  def figures(self, decoded):
    """{tag: value}: the scalars over the samples' summaries `decoded` (see the module's
    docstring)."""
    ngrams = summaries.ngram_figures([s.sentences for s in decoded],
                                     [s.reference for s in decoded],
                                     [e.article for e in self.examples],
                                     *self.reads)["decoded"]
    result = {"samples/mean_length": ngrams["mean_length"],
              "samples/duplicate_3grams_pct": ngrams["duplicate_ngrams_pct"]["3"]}
    if self.pointer_gen:
      result["samples/p_gen_mean"] = float(np.mean([np.mean(s.p_gens) for s in decoded]))
    return result
