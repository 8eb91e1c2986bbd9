"""Evaluation of decoded summaries: ROUGE with bootstrap intervals, n-gram statistics, result files.

Pure Python + numpy + rouge-score, so results can be recomputed from the decoded/ and reference/
text files without TensorFlow.

ROUGE is rouge-score's reimplementation, not the Perl ROUGE-1.5.5 the original called through
pyrouge; scores are close but not identical (tokenisation and stemming differ slightly), and the
intervals come from a seeded bootstrap rather than ROUGE-1.5.5's own resampling.
"""

import collections

import numpy as np

from pointer_gen.text import cjk

# Our result keys (the original's pyrouge names) -> rouge-score's rouge types. rougeLsum is the
# summary-level LCS over newline-separated sentences, which is what ROUGE-1.5.5 reports as ROUGE-L
# for multi-sentence summaries; plain rougeL would treat each summary as one long sentence.
_ROUGE_TYPES = {"rouge_1": "rouge1", "rouge_2": "rouge2", "rouge_l": "rougeLsum"}
_MEASURES = {"f_score": "fmeasure", "recall": "recall", "precision": "precision"}


# rouge-score is imported where ROUGE is computed, not with this module: it brings nltk, which
# every training and eval process would otherwise load for nothing (the entry point imports
# decode, and decode this module). Its scorer only calls a tokenizer's `tokenize`.


class _WhitespaceTokenizer:
  """Lower-cases and splits on whitespace only.

  rouge-score's default tokenizer replaces every character outside [a-z0-9] by a space, which
  deletes the accented letters of e.g. Vietnamese and leaves mostly fragments to match.
  No stemming: the Porter stemmer is English-only.
  """

  def tokenize(self, text):
    return text.lower().split()


class _CjkTokenizer:
  """Lower-cases and splits as --tokenizer=cjk (cjk.tokens): each CJK ideograph or kana, and
  each punctuation or symbol character, a token; ROUGE over characters for Chinese."""

  def tokenize(self, text):
    return cjk.tokens(text.lower())


def _default_tokenizer(use_stemmer=True):
  from rouge_score import tokenizers  # pylint: disable=g-import-not-at-top
  return tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)


# Each --rouge_tokenizer: makes its tokenizer (use_stemmer: with the Porter stemmer, where it
# has one).
_TOKENIZERS = {
    "default": _default_tokenizer,
    "whitespace": lambda use_stemmer=True: _WhitespaceTokenizer(),
    "cjk": lambda use_stemmer=True: _CjkTokenizer(),
}
TOKENIZERS = tuple(_TOKENIZERS)
# The help of --rouge_tokenizer.
TOKENIZERS_HELP = ("default: rouge-score's English tokenizer (keeps only [a-z0-9], Porter "
                   "stemming); whitespace: lower-case and split on spaces, for other languages; "
                   "cjk: lower-case and split as --tokenizer=cjk (each CJK character a token: "
                   "ROUGE over characters), for text written without spaces.")


def _scorer(tokenizer):
  from rouge_score import rouge_scorer  # pylint: disable=g-import-not-at-top
  if tokenizer not in TOKENIZERS:
    raise ValueError(f"tokenizer={tokenizer!r}: expected one of {', '.join(TOKENIZERS)}")
  return rouge_scorer.RougeScorer(list(_ROUGE_TYPES.values()),
                                  tokenizer=_TOKENIZERS[tokenizer]())


# A ROUGE tokenizer that loses more than this share of the references' tokens scores what is
# left of them (docs/decoding.md): refused before a decode starts.
MAX_LOST_SHARE = 0.5


def lost_share(references, tokenizer):
  """The share of the references' tokens (each a list of sentence strings of tokens, as the
  reference files hold them, lower-cased) that `tokenizer` loses: drops, or cuts into pieces
  that do not make the token again (the default tokenizer's fate of `việt`, `,` or `研究`).
  Pieces that do lose nothing, as each is scored: `cjk` cutting a segmented word `研究` into its
  characters is what it is for. Stemming is left out: it changes words, not what is scored.
  None without tokens.

  Each token is tokenised alone: every ROUGE tokenizer here splits at whitespace first, so a
  token's pieces are those the whole sentence gives."""
  scorer_tokenizer = _TOKENIZERS[tokenizer](use_stemmer=False)
  total = lost = 0
  for sentences in references:
    for sentence in sentences:
      for token in sentence.lower().split():
        total += 1
        lost += "".join(scorer_tokenizer.tokenize(token)) != token
  return lost / total if total else None


def suggested_tokenizer(references):
  """The ROUGE tokenizer for references that the default one mangles: cjk for text holding CJK
  characters, whitespace for the rest."""
  return ("cjk" if any(cjk.has_cjk(s) for sentences in references for s in sentences)
          else "whitespace")


def rouge(decoded, references, tokenizer="default", confidence=0.95, n_samples=1000, seed=0):
  """ROUGE-1/2/L F, recall and precision with bootstrap confidence intervals.

  Args:
    decoded: list of summaries, each a list of sentence strings.
    references: list of reference summaries in the same order and format.
    tokenizer: "default" (rouge-score's English tokenizer with Porter stemming), "whitespace"
      (lower-case + whitespace split, for languages other than English) or "cjk" (lower-case,
      split as --tokenizer=cjk: ROUGE over characters for Chinese).
    confidence: width of the confidence interval.
    n_samples: bootstrap resamples.
    seed: seeds numpy's global RNG, which rouge-score's bootstrap draws from, so that repeated
      evaluations of the same output give identical intervals.

  Returns:
    {"rouge_1"|"rouge_2"|"rouge_l": {"f_score"|"recall"|"precision": {"mid", "low", "high"}},
     "per_example": {"rouge_1"|"rouge_2"|"rouge_l": [F1 per example]}}, all values in [0, 1].
  """
  if len(decoded) != len(references):
    raise ValueError(f"{len(decoded)} decoded summaries but {len(references)} references")
  if not decoded:
    raise ValueError("no summaries to score")
  from rouge_score import scoring  # pylint: disable=g-import-not-at-top
  scorer = _scorer(tokenizer)
  aggregator = scoring.BootstrapAggregator(confidence_interval=confidence, n_samples=n_samples)
  per_example = {key: [] for key in _ROUGE_TYPES}
  for dec_sents, ref_sents in zip(decoded, references):
    scores = scorer.score("\n".join(ref_sents), "\n".join(dec_sents))
    aggregator.add_scores(scores)
    for key, rouge_type in _ROUGE_TYPES.items():
      per_example[key].append(float(scores[rouge_type].fmeasure))
  np.random.seed(seed)
  aggregate = aggregator.aggregate()
  result = {}
  for key, rouge_type in _ROUGE_TYPES.items():
    bounds = aggregate[rouge_type]
    result[key] = {
        measure: {bound: float(getattr(getattr(bounds, bound), field))
                  for bound in ("mid", "low", "high")}
        for measure, field in _MEASURES.items()}
  result["per_example"] = per_example
  return result


def rouge_results_text(result):
  """The original's ROUGE_results.txt (its rouge_log) for a result of rouge()."""
  text = ""
  for x in ("1", "2", "l"):
    text += f"\nROUGE-{x}:\n"
    for y in _MEASURES:
      value = result[f"rouge_{x}"][y]
      text += (f"rouge_{x}_{y}: {value['mid']:.4f} with confidence interval "
               f"({value['low']:.4f}, {value['high']:.4f})\n")
  return text


def _ngrams(tokens, n):
  return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _summary_stats(summaries, articles, ns):
  """Corpus-level duplicate and novel n-gram percentages and the mean length of `summaries`."""
  duplicate_pct, novel_pct = {}, {}
  for n in ns:
    total = duplicates = novel = 0
    for summary, article in zip(summaries, articles):
      counts = collections.Counter(_ngrams(summary, n))
      article_ngrams = set(_ngrams(article, n))
      total += sum(counts.values())
      duplicates += sum(counts.values()) - len(counts)
      novel += sum(c for ngram, c in counts.items() if ngram not in article_ngrams)
    # Pooling counts over the corpus (rather than averaging per-summary percentages) keeps short
    # summaries with few n-grams from dominating, and lets empty summaries contribute nothing.
    duplicate_pct[str(n)] = 100.0 * duplicates / total if total else 0.0
    novel_pct[str(n)] = 100.0 * novel / total if total else 0.0
  mean_length = float(np.mean([len(s) for s in summaries])) if summaries else 0.0
  return {"duplicate_ngrams_pct": duplicate_pct, "novel_ngrams_pct": novel_pct,
          "mean_length": mean_length}


def ngram_stats(decoded_tokens, reference_tokens, article_tokens, ns=(1, 2, 3, 4)):
  """Repetition (duplicate n-grams) and abstractiveness (novel n-grams) of decoded and references.

  All three arguments are lists (one entry per example) of token lists; tokens are compared as
  given, so lower-case them first if the comparison should ignore case.
  """
  if not len(decoded_tokens) == len(reference_tokens) == len(article_tokens):
    raise ValueError(f"{len(decoded_tokens)} decoded, {len(reference_tokens)} reference and "
                     f"{len(article_tokens)} article token lists: expected the same number")
  return {"decoded": _summary_stats(decoded_tokens, article_tokens, ns),
          "reference": _summary_stats(reference_tokens, article_tokens, ns)}


def sentences_from_words(words):
  """Splits decoded words into sentences after each "." token, as the original's write_for_rouge.

  Words after the last "." form a final sentence of their own.
  """
  sentences = []
  start = 0
  for i, word in enumerate(words):
    if word == ".":
      sentences.append(" ".join(words[start:i + 1]))
      start = i + 1
  if start < len(words):
    sentences.append(" ".join(words[start:]))
  return sentences
