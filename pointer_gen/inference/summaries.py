"""What turns a search's result into words and figures, which decode, the Python API, eval's
samples and tools/lead_baseline.py share: a batch's search compiled and run, single-pass batches
as articles, a summary's words and its record, the references tokenised as the articles, and
the n-gram figures of summaries against their references and articles."""

import functools
import itertools
import operator

import tensorflow as tf

from pointer_gen.data import batch as batch_lib
from pointer_gen.inference import metrics
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib


def make_search(model, searcher):
  """The whole search of a batch of articles by `searcher` (a contract.Strategy, with its
  attention) as one compiled function."""
  ids = tf.TensorSpec([None, None], tf.int32)
  # A function of its own to TensorFlow's retracing statistics (kept per Python function): the
  # searches of other settings are traced once each, not retraced (continuous_batching._own).
  return tf.function(functools.partial(searcher.search, model), autograph=False,
                     input_signature=[ids, tf.TensorSpec([None], tf.int32), ids,
                                      tf.TensorSpec([], tf.int32)])


def run_search(search, batch):
  """The search's result for each article of `batch`, as numpy, one contract.SearchResult an
  article."""
  result = search(batch.enc_input, batch.enc_len, batch.enc_input_ext,
                  tf.reduce_max(batch.num_oovs))
  result = result.map(lambda value: value.numpy())
  return [result.map(operator.itemgetter(n)) for n in range(len(result.length))]


def examples(batches):
  """The articles of single-pass batches one by one, in data order: batch.Examples."""
  for batch in batches:
    yield from batch_lib.examples(batch)


def reference_sentences(abstract, tokenizer, lowercase):
  """The reference summary's sentences (the lines of `abstract`) as the model's tokens joined by
  spaces: tokenised and cased as the articles (`HParams.reads`), so that raw text's references
  are those its prepared data (.bin) holds, and ROUGE scores a summary of either alike. ptb
  gives each line its own period, as the prepared data's sentences have."""
  return references_sentences([abstract], tokenizer, lowercase)[0]


def references_sentences(abstracts, tokenizer, lowercase):
  """reference_sentences of each of `abstracts`, tokenised in one call."""
  lines = [[line for line in abstract.split("\n") if line.strip()] for abstract in abstracts]
  flat = [line for abstract_lines in lines for line in abstract_lines]
  if not flat:
    return [[] for _ in abstracts]
  tokens = text.tokenize(tf.constant(flat, tf.string), tokenizer, lowercase)  # [S, (tokens)]
  sentences = iter([" ".join(t.decode("utf-8") for t in row) for row in tokens.to_list()])
  return [[s for s in itertools.islice(sentences, len(abstract_lines)) if s]
          for abstract_lines in lines]


def summary_words(vocab, tokens, length, oovs):
  """The words of a summary's first `length` tokens (extended ids), up to its [STOP]."""
  words = vocab.outputids2words([int(i) for i in tokens[:length]], oovs)
  return words[:words.index(vocab_lib.STOP)] if vocab_lib.STOP in words else words


def n_best_line(vocab, result, example, index):
  """n_best.jsonl's line of example `index`: its summaries in rank order (the search's
  result's n_best), each with its score and log_prob."""
  best = result.n_best
  ranked = zip(best.tokens, best.length, best.score, best.log_prob)
  return {"index": index, "n_best": [
      {"summary": " ".join(summary_words(vocab, tokens, int(length), example.article_oovs)),
       "score": float(score), "log_prob": float(log_prob)}
      for tokens, length, score, log_prob in ranked]}


class DecodedSummary:
  """One decoded example, as words: the search's `result` for the article `example`, whose
  data `reads` (tokenizer, lowercase) make the reference's tokens."""

  def __init__(self, vocab, result, example, reads):
    oovs = example.article_oovs
    length = int(result.length)
    words = summary_words(vocab, result.tokens, length, oovs)
    self.words = words
    self.oovs = set(oovs)
    self.num_steps = length
    self.p_gens = result.p_gens[:length]
    self.attn = (None if result.attn is None
                 else result.attn[:length, :len(example.enc_input)])
    self.sentences = metrics.sentences_from_words(words)
    self.reference = reference_sentences(example.abstract, *reads)
    self.article = example.article


def ngram_figures(decoded, references, articles, tokenizer, lowercase):
  """metrics.ngram_stats of decoded and reference summaries (lists of sentence lines of the
  model's tokens: the decoded words, reference_sentences) against the articles (strings),
  tokenised as the model saw them (`tokenizer`, `lowercase`): references split on raw
  whitespace would keep case and punctuation that the decoded words and article lack, and count
  as novel what was copied."""

  def tokens(texts, tokenizer, lowercase):
    ragged = text.tokenize(tf.constant(texts, tf.string) if texts else tf.zeros([0], tf.string),
                           tokenizer, lowercase)  # [N, (tokens)]
    return [[t.decode("utf-8") for t in row] for row in ragged.to_list()]

  # The summaries are tokens already, and ptb's output is not ptb's input (`-lrb-`, `` `` ``, a
  # `.` added to every line): they are only split.
  return metrics.ngram_stats(tokens([" ".join(d) for d in decoded], "whitespace", False),
                             tokens([" ".join(r) for r in references], "whitespace", False),
                             tokens(articles, tokenizer, lowercase))
