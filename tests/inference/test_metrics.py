import re

import pytest
from rouge_score import rouge_scorer

from pointer_gen.inference import metrics


def _single(decoded, reference, **kwargs):
  # Few resamples keep the tests fast; with one example they all agree anyway.
  return metrics.rouge([[decoded]], [[reference]], n_samples=20, **kwargs)


def _assert_prf(result, key, precision, recall):
  f_score = 2 * precision * recall / (precision + recall)
  for measure, expected in (("precision", precision), ("recall", recall), ("f_score", f_score)):
    value = result[key][measure]
    # One example: every bootstrap resample is that example, so the interval collapses.
    assert value["mid"] == pytest.approx(expected), (key, measure)
    assert value["low"] == pytest.approx(expected), (key, measure)
    assert value["high"] == pytest.approx(expected), (key, measure)


def test_rouge_hand_computed_equal_lengths():
  result = _single("the cat sat on the mat", "the cat lay on the mat")
  # Unigrams: the x2, cat, on, mat shared of 6 each side; bigrams: "the cat", "on the",
  # "the mat" shared of 5 each side; the LCS "the cat on the mat" has 5 of 6 tokens.
  _assert_prf(result, "rouge_1", 5 / 6, 5 / 6)
  _assert_prf(result, "rouge_2", 3 / 5, 3 / 5)
  _assert_prf(result, "rouge_l", 5 / 6, 5 / 6)
  assert result["per_example"]["rouge_1"] == [pytest.approx(5 / 6)]
  assert result["per_example"]["rouge_2"] == [pytest.approx(3 / 5)]


def test_rouge_hand_computed_precision_differs_from_recall():
  result = _single("the cat sat", "the cat sat on the mat")
  _assert_prf(result, "rouge_1", 3 / 3, 3 / 6)
  _assert_prf(result, "rouge_2", 2 / 2, 2 / 5)


def test_rouge_stems_with_default_tokenizer():
  result = _single("the cats were sitting", "the cat was sitting")
  # Porter stemming matches cats/cat and sitting/sitting; were/was stay different.
  _assert_prf(result, "rouge_1", 3 / 4, 3 / 4)


def test_rouge_l_is_summary_level_over_sentence_lines():
  decoded = ["police arrested the man .", "he was charged on friday ."]
  reference = ["the man was charged on friday .", "police arrested him on thursday .",
               "a court hears the case next week ."]
  result = metrics.rouge([decoded], [reference], n_samples=20)
  direct = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True).score(
      "\n".join(reference), "\n".join(decoded))["rougeLsum"]
  assert result["rouge_l"]["f_score"]["mid"] == pytest.approx(direct.fmeasure)
  assert result["rouge_l"]["recall"]["mid"] == pytest.approx(direct.recall)
  assert result["rouge_l"]["precision"]["mid"] == pytest.approx(direct.precision)

  # Swapped sentences: summary-level LCS matches each sentence in full, while a single LCS over
  # the joined text (rougeL) could match only one of them.
  swapped = metrics.rouge([["d e f", "a b c"]], [["a b c", "d e f"]], n_samples=20)
  assert swapped["rouge_l"]["f_score"]["mid"] == pytest.approx(1.0)
  joined = rouge_scorer.RougeScorer(["rougeL"]).score("a b c d e f", "d e f a b c")["rougeL"]
  assert joined.fmeasure == pytest.approx(0.5)


def test_rouge_confidence_interval_and_determinism():
  decoded = [["the cat sat on the mat"], ["a dog barked"], ["it rained all day ."],
             ["stocks fell sharply"], ["the team won the cup"]]
  references = [["the cat lay on the mat"], ["the dog barked loudly"], ["it was sunny ."],
                ["stocks fell"], ["the team lost the final"]]
  result = metrics.rouge(decoded, references, n_samples=200)
  for key in ("rouge_1", "rouge_2", "rouge_l"):
    for measure in ("f_score", "recall", "precision"):
      value = result[key][measure]
      assert 0.0 <= value["low"] <= value["mid"] <= value["high"] <= 1.0, (key, measure)
    assert result["rouge_1"]["f_score"]["low"] < result["rouge_1"]["f_score"]["high"]
    assert len(result["per_example"][key]) == len(decoded)
  assert metrics.rouge(decoded, references, n_samples=200) == result
  assert metrics.rouge(decoded, references, n_samples=200, seed=1) != result


def test_whitespace_tokenizer_keeps_vietnamese_words():
  result = _single("bài báo của tôi", "của anh ấy", tokenizer="whitespace")
  # Only "của" is shared: 1 of 4 decoded words, 1 of 3 reference words.
  _assert_prf(result, "rouge_1", 1 / 4, 1 / 3)
  assert result["per_example"]["rouge_1"] == [pytest.approx(2 / 7)]
  # "cả" and "của" are different words, but the default tokenizer deletes the accented letters
  # and matches the leftover fragment "c".
  assert _single("cả", "của", tokenizer="whitespace")["rouge_1"]["f_score"]["mid"] == 0.0
  assert _single("cả", "của")["rouge_1"]["f_score"]["mid"] > 0.0
  # Lower-cased, split on whitespace only.
  assert _single("Của", "của", tokenizer="whitespace")["rouge_1"]["f_score"]["mid"] == 1.0


def test_rouge_rejects_bad_arguments():
  with pytest.raises(ValueError, match="2 decoded summaries but 1 references"):
    metrics.rouge([["a"], ["b"]], [["a"]])
  with pytest.raises(ValueError, match="no summaries"):
    metrics.rouge([], [])
  with pytest.raises(ValueError, match="tokenizer='nltk'"):
    metrics.rouge([["a"]], [["a"]], tokenizer="nltk")


def test_rouge_results_text_layout():
  decoded = [["the cat sat on the mat ."], ["a dog barked ."], ["it rained all day ."]]
  references = [["the cat lay on the mat ."], ["the dog barked loudly ."], ["it was sunny ."]]
  result = metrics.rouge(decoded, references, n_samples=100)
  text = metrics.rouge_results_text(result)
  assert text.startswith("\nROUGE-1:\nrouge_1_f_score: ")
  assert [line for line in text.split("\n") if line.startswith("ROUGE-")] == [
      "ROUGE-1:", "ROUGE-2:", "ROUGE-l:"]
  pattern = re.compile(r"^rouge_([12l])_(f_score|recall|precision): (\d\.\d{4}) with confidence "
                       r"interval \((\d\.\d{4}), (\d\.\d{4})\)$", re.MULTILINE)
  parsed = pattern.findall(text)
  assert [(x, y) for x, y, *_ in parsed] == [
      (x, y) for x in "12l" for y in ("f_score", "recall", "precision")]
  for x, y, mid, low, high in parsed:
    value = result[f"rouge_{x}"][y]
    assert (mid, low, high) == (f"{value['mid']:.4f}", f"{value['low']:.4f}",
                                f"{value['high']:.4f}")
  # Nothing besides the three headers, the nine score lines and the blank separators.
  assert text.count("\n") == 3 * 2 + 9


def test_ngram_stats_hand_counts():
  decoded = [["a", "b", "a", "b"], ["x"], []]
  reference = [["c", "d"], [], []]
  articles = [["a", "b", "c"], ["y"], ["z"]]
  stats = metrics.ngram_stats(decoded, reference, articles)
  dec = stats["decoded"]
  # 1-grams: 4 + 1 occurrences, 2 repeats ("a", "b"), 1 novel ("x"); the empty summary adds none.
  assert dec["duplicate_ngrams_pct"]["1"] == pytest.approx(100 * 2 / 5)
  assert dec["novel_ngrams_pct"]["1"] == pytest.approx(100 * 1 / 5)
  # 2-grams: "a b", "b a", "a b": one repeat; "b a" is not in the article.
  assert dec["duplicate_ngrams_pct"]["2"] == pytest.approx(100 / 3)
  assert dec["novel_ngrams_pct"]["2"] == pytest.approx(100 / 3)
  # 3-grams "a b a", "b a b" and the 4-gram are distinct and none is the article's "a b c".
  assert dec["duplicate_ngrams_pct"]["3"] == 0.0
  assert dec["novel_ngrams_pct"]["3"] == pytest.approx(100.0)
  assert dec["duplicate_ngrams_pct"]["4"] == 0.0
  assert dec["novel_ngrams_pct"]["4"] == pytest.approx(100.0)
  assert dec["mean_length"] == pytest.approx(5 / 3)

  ref = stats["reference"]
  assert ref["duplicate_ngrams_pct"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.0}
  assert ref["novel_ngrams_pct"] == {"1": pytest.approx(50.0), "2": pytest.approx(100.0),
                                     "3": 0.0, "4": 0.0}
  assert ref["mean_length"] == pytest.approx(2 / 3)


def test_ngram_stats_edge_cases():
  empty = metrics.ngram_stats([[], []], [[], []], [["a"], ["b"]], ns=(1, 2))
  for side in ("decoded", "reference"):
    assert empty[side] == {"duplicate_ngrams_pct": {"1": 0.0, "2": 0.0},
                           "novel_ngrams_pct": {"1": 0.0, "2": 0.0}, "mean_length": 0.0}
  with pytest.raises(ValueError, match="expected the same number"):
    metrics.ngram_stats([["a"]], [], [["a"]])


@pytest.mark.parametrize("words, sentences", [
    (["a", "b", ".", "c", ".", "d", "e"], ["a b .", "c .", "d e"]),
    (["a", ".", "b", "."], ["a .", "b ."]),
    (["no", "period"], ["no period"]),
    (["."], ["."]),
    ([], []),
])
def test_sentences_from_words(words, sentences):
  assert metrics.sentences_from_words(words) == sentences
