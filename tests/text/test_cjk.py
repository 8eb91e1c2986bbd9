"""Text written without spaces: `--tokenizer=cjk` (each CJK ideograph or kana a token, the rest
as punct) on hand-written cases of each rule and on csl_titles, its prefixes, text for people
without spaces between CJK tokens (text.written, in a SavedModel too), `--rouge_tokenizer=cjk`
and the refusal of a ROUGE tokenizer that loses most of the references; such text read by
another tokenizer named where it enters (the vocab tool, the vocab's and the data's checks)."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from helpers import load_tool
from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.inference import attention_view
from pointer_gen.inference import decode
from pointer_gen.inference import eval_samples
from pointer_gen.inference import metrics
from pointer_gen.text import cjk
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

# (text, its cjk tokens, lower-cased where that differs), one case per rule.
CASES = [
    # Mixed Chinese and Latin: each ideograph a token, the Latin run a word, brackets apart.
    ("采用修正的Rodrigues参数(MRP)",
     ["采", "用", "修", "正", "的", "Rodrigues", "参", "数", "(", "MRP", ")"]),
    # Full-width punctuation and symbols split off as ASCII ones are; digits stay words and a
    # decimal point is punctuation, as punct has it.
    ("P＜0.05，差异有统计学意义。",
     ["P", "＜", "0", ".", "05", "，", "差", "异", "有", "统", "计", "学", "意", "义", "。"]),
    ("共1,300例(占42.5%)", ["共", "1", ",", "300", "例", "(", "占", "42", ".", "5", "%", ")"]),
    # Kana, hiragana and katakana, each a token, as ideographs; the prolonged sound mark too.
    ("東京はコーヒーが好き", ["東", "京", "は", "コ", "ー", "ヒ", "ー", "が", "好", "き"]),
    # Hangul stays in words: Korean writes spaces.
    ("한국어 문장입니다.", ["한국어", "문장입니다", "."]),
    # An emoji is a symbol (So): split off.
    ("好😀棒ok", ["好", "😀", "棒", "ok"]),
    # Ideographs outside the BMP (extensions B and E, the compatibility supplement).
    ("𠀀字𪚥𫠠丽", ["𠀀", "字", "𪚥", "𫠠", "丽"]),
    # Whitespace separates; non-ASCII spaces are no separators (as for every tokenizer).
    (" Hello, World!\n你好\tABC ", ["Hello", ",", "World", "!", "你", "好", "ABC"]),
    ("", []),
]
LOWERCASED = {"采用修正的Rodrigues参数(MRP)":
              ["采", "用", "修", "正", "的", "rodrigues", "参", "数", "(", "mrp", ")"],
              "P＜0.05，差异有统计学意义。":
              ["p", "＜", "0", ".", "05", "，", "差", "异", "有", "统", "计", "学", "意", "义", "。"],
              " Hello, World!\n你好\tABC ": ["hello", ",", "world", "!", "你", "好", "abc"]}


def _tokens(texts, lowercase=False):
  return [[t.decode("utf-8") for t in row]
          for row in text.tokenize(texts, "cjk", lowercase).to_list()]


def _jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_each_rule_on_hand_written_cases():
  texts = [t for t, _ in CASES]
  assert _tokens(texts) == [tokens for _, tokens in CASES]
  assert _tokens(texts, lowercase=True) == [LOWERCASED.get(t, tokens) for t, tokens in CASES]
  # The plain-Python rule ROUGE uses gives the same tokens.
  assert [cjk.tokens(t) for t in texts] == [tokens for _, tokens in CASES]
  # Other tokenizers are as they were: punct leaves a clause of ideographs one word.
  assert text.tokenize("采用修正的Rodrigues参数(MRP)", "punct").numpy().tolist() == [
      t.encode("utf-8") for t in ["采用修正的Rodrigues参数", "(", "MRP", ")"]]


@pytest.mark.parametrize("lowercase", [False, True])
def test_prefix_tokens_are_the_whole_texts_first(lowercase):
  """tokenize_prefix, from first windows that end at every third byte and their doublings
  (inside characters of 1 to 4 bytes), gives the whole text's first tokens; Chinese is cut after
  its last ideograph, not read whole."""
  article = "".join(t for t, _ in CASES) + "ΑΣ中Σ文 ΣΑ"  # a final sigma before an ideograph
  whole = [t.decode("utf-8") for t in text.tokenize(article, "cjk", lowercase).numpy()]
  prefix = tf.function(lambda a, n, w: text.tokenize_prefix(a, n, "cjk", lowercase,
                                                            first_window=w),
                       autograph=False)
  for max_tokens in (1, 7, 30, 100):
    for first_window in range(1, len(article.encode("utf-8")) + 2, 3):
      got = [t.decode("utf-8") for t in prefix(tf.constant(article), tf.constant(max_tokens),
                                               tf.constant(first_window, tf.int64)).numpy()]
      assert got == whole[:max_tokens], (max_tokens, first_window)
  # Cut after the last ideograph of a window: 10 tokens of unbroken Chinese need one window.
  windows = text._cut(tf.constant(["研究采用的方法和", "共1,3", "abc def"]), "cjk")
  assert [w.decode("utf-8") for w in windows.numpy()] == ["研究采用的方法和", "共", "abc "]


def test_written_puts_no_space_beside_cjk_tokens():
  words = ["采", "用", "的", "Rodrigues", "参", "数", "(", "MRP", ")", "，", "P", "＜", "0",
           ".", "05", "，", "差", "异", "カ", "ナ", "한국어", "😀", "好"]
  # Nor between a CJK token and a punctuation or symbol character beside it; other words and
  # marks are apart as for every tokenizer.
  assert text.written_text(words, "cjk") == (
      "采用的 Rodrigues 参数( MRP )， P ＜ 0.05 ，差异カナ 한국어 😀好")
  assert text.written_text(["课", "“", "好", "课", "”", "的", "Hello", ",", "World", "!", "你"],
                           "cjk") == "课“好课”的 Hello , World !你"
  assert text.separators_of(["采", "用", "A", "B", "的"], "cjk") == ["", "", " ", " ", " "]
  # `shown` writes marked words with the tokens' separators.
  assert text.written_text(["研", "究", "x"], "cjk", ["__研__", "究", "x"]) == "__研__究 x"
  # Every other tokenizer writes every token apart, as before.
  for tokenizer in ("whitespace", "punct", "ptb"):
    assert text.written_text(["采", "用", "a"], tokenizer) == "采 用 a"
    assert not text.writes_together(tokenizer)
  assert text.written_text([], "cjk") == ""
  # Sentences of tokens (the reference files' lines) are split at the joining spaces only.
  assert text.written_sentences(["<p\xa0x> a", "b ."], "ptb") == "<p\xa0x> a b ."
  assert text.written_sentences(["研 究 。", "结 论"], "cjk") == "研究。结论"
  assert text.written_sentences([], "cjk") == ""
  rows = tf.ragged.constant([["中", "文"], [], ["a", "中", "文", "b"]])
  assert text.written(rows, "cjk").numpy().tolist() == [
      "中文".encode(), b"", "a 中文 b".encode()]


def test_written_keeps_a_decimal_number_whole():
  """cjk splits `3.2` into 3 . 2; text for people writes a `.` between two runs of digits of one
  row as the number was, and every other `.` as before."""
  assert text.written_sentences(["增 长 3 . 2 个 百 分 点", "p < 0 . 05"], "cjk") == (
      "增长 3.2 个百分点 p < 0.05")
  assert text.written_text(["1", ".", "2", ".", "30"], "cjk") == "1.2.30"
  assert text.separators_of(["版", "本", "1", ".", "2"], "cjk") == ["", "", " ", "", ""]
  # Not between two numbers: after a word holding letters, before a mark, at a row's end.
  assert text.written_text(["a3", ".", "2"], "cjk") == "a3 . 2"
  assert text.written_text(["结", "论", ".", "3"], "cjk") == "结论. 3"
  assert text.written_text(["3", ".", "%"], "cjk") == "3 . %"
  rows = tf.ragged.constant([["共", "3", "."], ["2", "个"]])
  assert text.written(rows, "cjk").numpy().tolist() == ["共 3 .".encode(), "2 个".encode()]
  # Tokenizers that write every token apart keep doing so.
  assert text.written_text(["3", ".", "2"], "punct") == "3 . 2"


@pytest.mark.slow
def test_written_runs_from_a_saved_model_under_the_session_loader(tmp_path):
  """text.written is graph ops: a SavedModel of it gives the same under tf.saved_model.load and
  TF's session loader (as TF Serving and saved_model_cli run an export)."""
  module = tf.Module()
  module.write = tf.function(
      lambda tokens: {"text": text.written(tf.RaggedTensor.from_tensor(tokens, padding=""),
                                           "cjk")},
      input_signature=[tf.TensorSpec([None, None], tf.string)], autograph=False)
  tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.write})
  tokens = [["采", "用", "MRP", "的"], ["a", "b", "", ""]]
  want = ["采用 MRP 的".encode(), b"a b"]
  loaded = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
  assert loaded(tokens=tf.constant(tokens))["text"].numpy().tolist() == want
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(tmp_path))
    signature = meta_graph.signature_def["serving_default"]
    got = session.run(signature.outputs["text"].name, {signature.inputs["tokens"].name: tokens})
  assert got.tolist() == want


def test_rouge_over_characters():
  """ROUGE-1 over the characters of 研究方法 (decoded 研究方向): 3 of 4 match, F 0.75; ROUGE-2:
  研究 and 究方 of 3 bigrams, F 2/3. The default tokenizer sees nothing of it."""
  result = metrics.rouge([["研 究 方 向"]], [["研 究 方 法"]], tokenizer="cjk", n_samples=10)
  assert result["rouge_1"]["f_score"]["mid"] == pytest.approx(0.75)
  assert result["rouge_2"]["f_score"]["mid"] == pytest.approx(2 / 3)
  # Over text not split into characters (punct's tokens, or segmented words), the same.
  words = metrics.rouge([["研究方向"]], [["研究 方法"]], tokenizer="cjk", n_samples=10)
  assert words["rouge_1"] == result["rouge_1"]
  assert metrics.rouge([["研 究"]], [["研 究"]], n_samples=10)["rouge_1"]["f_score"]["mid"] == 0
  assert metrics.lost_share([["研 究 a ,"]], "default") == 0.75
  assert metrics.lost_share([["研 究 a ,"]], "cjk") == 0.0
  # English keeps its words under the default tokenizer (stemming aside): the comma is lost.
  assert metrics.lost_share([["the cats sat ."]], "default") == 0.25


def test_attention_record_and_eval_text_are_written_as_the_language(tmp_path):
  class DecodedSummary:  # summaries.DecodedSummary's fields that the record and the text read
    words = ["研", "究", "了", "MRP"]
    oovs = {"究"}
    reference = ["研 究 方 法 。", "结 论"]
    attn = np.full([4, 3], 1 / 3, np.float32)
    p_gens = np.array([0.5, 0.25, 1.0, 0.75], np.float32)

  record = attention_view.record(DecodedSummary, ["研", "究", "MRP"], True, "cjk")
  assert record["abstract_str"] == "研究方法。结论"
  assert record["decoded_separators"] == ["", "", "", " "]
  assert record["article_separators"] == ["", "", " "]
  plain = attention_view.record(DecodedSummary, ["研", "究", "MRP"], True)
  assert plain["abstract_str"] == "研 究 方 法 。 结 论" and "decoded_separators" not in plain
  page = load_tool("attention_html").render(record)
  # Summary words joined as the record's separators say: none between 研, 究 and 了.
  assert '>研</span><span class="dec oov" title="p_gen = 0.250; OOV"' in page
  assert '>究</span><span class="dec" title="p_gen = 1.000"' in page
  assert '>了</span> <span class="dec" title="p_gen = 0.750"' in page
  assert "<span>研究方法。结论</span>" in page
  with pytest.raises(ValueError, match="^record: decoded_separators has 3 entries but "
                     "decoded_lst has 4 words$"):
    load_tool("attention_html").render({**record, "decoded_separators": ["", "", ""]}, "record")
  markdown = eval_samples.markdown(DecodedSummary, ["研", "究", "MRP"], True, "cjk")
  assert "**研*****究***了 **MRP**" in markdown
  assert "研究方法。结论" in markdown


def test_csl_titles_vocab_holds_single_ideographs(csl_titles, tmp_path):
  """tools/make_vocab.py --tokenizer=cjk on csl_titles's train split: no token holds two
  ideographs; the ROUGE tokenizer's plain-Python rule gives the TF tokens on every text."""
  output = tmp_path / "vocab"
  load_tool("make_vocab").make_vocab(str(csl_titles / "train.jsonl"), "auto", str(output), 0,
                                     "cjk", False)
  rows = _jsonl(csl_titles / "val.jsonl")
  texts = [r["article"] for r in rows] + [r["abstract"] for r in rows]
  assert [cjk.tokens(t.lower()) for t in texts] == _tokens(texts, lowercase=True)
  words = [line.rsplit(" ", 1)[0] for line in output.read_text(encoding="utf-8").splitlines()]
  assert len(words) > 4000 and words[0] == "的"
  assert [w for w in words if sum(cjk.has_cjk(c) for c in w) > 1] == []
  assert json.loads((tmp_path / "vocab.tokenization.json").read_text())["tokenizer"] == "cjk"


def test_lead_baseline_scores_each_articles_first_characters(tmp_path):
  """N = round((4 + 2) / 2) = 3. 基于M vs 基于研究 (tokens 基 于 m): 2 of 3 and of 4 match, F
  4/7; 研究方 vs 方法: 1 of 3 and of 2, F 0.4."""
  data = tmp_path / "val.jsonl"
  data.write_text("".join(json.dumps({"article": a, "abstract": t}, ensure_ascii=False) + "\n"
                          for a, t in (("基于MRP的研究", "基于研究"), ("研究方法", "方法"))),
                  encoding="utf-8")
  lead_baseline = load_tool("lead_baseline").lead_baseline
  lead_chars, result = lead_baseline(str(data), "auto", "cjk", True, "cjk")
  assert lead_chars == 3
  assert result["per_example"]["rouge_1"] == pytest.approx([4 / 7, 0.4])
  assert lead_baseline(str(data), "auto", "cjk", True, "cjk", lead_chars=2)[1]["per_example"][
      "rouge_1"] == pytest.approx([2 / 3, 0.0])


def _decode_hparams(data_path, **changes):
  return config.HParams(mode="decode", single_pass=True, data_path=str(data_path),
                        **changes)


def test_a_rouge_tokenizer_that_loses_most_references_is_refused(csl_titles, vietnews,
                                                                 demo_corpus):
  csl = _decode_hparams(csl_titles / "val.jsonl", tokenizer="cjk")
  with pytest.raises(DataError, match=r"^--rouge_tokenizer=default drops or breaks up 9\d\.\d % "
                     r"of the reference tokens of the first 100 examples of --data_path=.*"
                     r"val.jsonl: .* Use --rouge_tokenizer=cjk$"):
    decode.check_rouge_tokenizer(csl)
  decode.check_rouge_tokenizer(csl.replace(rouge_tokenizer="cjk"))
  with pytest.raises(DataError, match="Use --rouge_tokenizer=whitespace$"):
    decode.check_rouge_tokenizer(_decode_hparams(vietnews / "chunked" / "val_000.bin"))
  # English runs as today.
  decode.check_rouge_tokenizer(_decode_hparams(demo_corpus["val"]))


def _in_pairs(sentence):
  """Word-segmented Chinese, as a segmenter would write it (near enough for ROUGE): `sentence`'s
  cjk tokens, each two ideographs in a row joined into one word."""
  words = []
  for token in cjk.tokens(sentence):
    if words and len(words[-1]) == 1 and cjk.has_cjk(words[-1]) and cjk.has_cjk(token):
      words[-1] += token
    else:
      words.append(token)
  return " ".join(words)


def test_the_rouge_tokenizer_check_counts_what_is_lost_not_what_is_split():
  """研究 方法 。: cjk scores each character of each word, losing none; the default tokenizer keeps
  none of the three. việt nam ,: the default loses việt (to vi and t) and the comma, keeps nam."""
  assert _in_pairs("研究方法。") == "研究 方法 。"
  assert metrics.lost_share([["研究 方法 。"]], "cjk") == 0.0
  assert metrics.lost_share([["研究 方法 。"]], "default") == 1.0
  assert metrics.lost_share([["việt nam ,"]], "default") == pytest.approx(2 / 3)
  assert metrics.lost_share([["việt nam ,"]], "whitespace") == 0.0
  # 研究方向 against 研究方法, in words or not: 3 of 4 characters (F 0.75), 2 of 3 bigrams.
  for decoded, reference in ((["研究 方向"], ["研究 方法"]), (["研究方向"], ["研究方法"])):
    result = metrics.rouge([decoded], [reference], tokenizer="cjk", n_samples=10)
    assert result["rouge_1"]["f_score"]["mid"] == pytest.approx(0.75)
    assert result["rouge_2"]["f_score"]["mid"] == pytest.approx(2 / 3)


def test_rouge_cjk_scores_word_segmented_csl_titles_as_unsegmented(csl_titles, tmp_path):
  """csl_titles's val split written in words: --rouge_tokenizer=cjk passes the check (the
  default is still refused), and the same summaries (each article's first 20 characters) score
  the same ROUGE over characters in words as unsegmented."""
  rows = _jsonl(csl_titles / "val.jsonl")
  segmented = tmp_path / "val.jsonl"
  segmented.write_text("".join(
      json.dumps({"article": _in_pairs(r["article"]), "abstract": _in_pairs(r["abstract"])},
                 ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
  words = _decode_hparams(segmented, tokenizer="whitespace", lowercase=True)
  decode.check_rouge_tokenizer(words.replace(rouge_tokenizer="cjk"))
  with pytest.raises(DataError, match=r"^--rouge_tokenizer=default drops or breaks up 9\d\.\d % "
                     r".* Use --rouge_tokenizer=cjk$"):
    decode.check_rouge_tokenizer(words)
  leads = [[r["article"][:20].lower()] for r in rows]
  titles = [[r["abstract"].lower()] for r in rows]
  in_words = metrics.rouge([[_in_pairs(s) for s in x] for x in leads],
                           [[_in_pairs(s) for s in x] for x in titles], "cjk", n_samples=20)
  assert in_words == metrics.rouge(leads, titles, "cjk", n_samples=20)
  assert in_words["rouge_1"]["f_score"]["mid"] > 0.1


def test_unsplit_finds_tokens_that_are_runs_of_ideographs_or_kana():
  clause = "市民纷纷在社交媒体上分享消息"  # 14 ideographs
  # 14 of the 15 characters in one run; the example is the token holding it.
  assert cjk.unsplit({clause: 1, "，": 1}) == cjk.Unsplit(14 / 15, clause)
  assert cjk.unsplit({"東京はコーヒーが好き": 2}) == cjk.Unsplit(1.0, "東京はコーヒーが好き")
  long = "研" * 30
  assert cjk.unsplit({long: 1, "研究": 2}).example == "研" * 20 + "…"
  # A run one short of UNSPLIT_RUN is a word; the whole run counts once it is that long.
  assert cjk.unsplit({"研" * (cjk.UNSPLIT_RUN - 1): 5}) is None
  assert cjk.unsplit({"a" + "研" * cjk.UNSPLIT_RUN: 1}) == cjk.Unsplit(
      cjk.UNSPLIT_RUN / (cjk.UNSPLIT_RUN + 1), "a" + "研" * cjk.UNSPLIT_RUN)
  # Words with a long one among them: 7 of 47 characters. English quoting a clause: 14 of 210.
  assert cjk.unsplit({"研究": 10, "方法": 10, "中华人民共和国": 1}) is None
  assert cjk.unsplit({"the": 50, "said": 10, clause: 1}) is None
  assert cjk.unsplit({}) is None
  # cjk's own tokens never are.
  assert cjk.unsplit(dict.fromkeys(cjk.tokens(clause + "。東京はコーヒーが好き"), 1)) is None


def test_make_vocab_refuses_chinese_read_without_cjk(csl_titles, tmp_path):
  """csl_titles' abstracts split at whitespace or punctuation are whole clauses: refused naming
  --tokenizer=cjk, nothing written. The same text in words is a vocab as any other."""
  make_vocab = load_tool("make_vocab").make_vocab
  output = tmp_path / "vocab"
  for tokenizer in ("whitespace", "punct"):
    with pytest.raises(DataError, match=(
        rf"^--tokenizer={tokenizer} makes the words of --data_path=.*train.jsonl runs of "
        r"ideographs or kana \((\d+\.\d) % of their characters in runs of 5 or more, e.g. "
        r"'.+'\): text written without spaces, which --tokenizer=cjk splits into characters\. "
        r"Pass --tokenizer=cjk$")) as refusal:
      make_vocab(str(csl_titles / "train.jsonl"), "auto", str(output), 0, tokenizer, True)
    assert float(re.search(r"\((\d+\.\d) %", str(refusal.value)).group(1)) > 50
    assert list(tmp_path.iterdir()) == []
  segmented = tmp_path / "words.jsonl"
  segmented.write_text("".join(
      json.dumps({"article": _in_pairs(r["article"]), "abstract": _in_pairs(r["abstract"])},
                 ensure_ascii=False) + "\n" for r in _jsonl(csl_titles / "val.jsonl")),
                       encoding="utf-8")
  make_vocab(str(segmented), "auto", str(output), 0, "whitespace", True)
  assert "研究 " in output.read_text(encoding="utf-8")


def _vocab_of_whole_clauses(path, tokenizer="whitespace", lowercase=False):
  path.write_text("市民纷纷在社交媒体上分享消息 3\n研究结果表明 2\n， 2\n", encoding="utf-8")
  vocab_lib.write_tokenization(str(path), tokenizer, lowercase)
  return str(path)


def test_the_vocab_check_names_cjk_for_a_vocab_of_whole_clauses(tmp_path):
  """A vocab counted from Chinese at whitespace: the fix is a vocab made with cjk, not the
  vocab's tokenisation. Its words, each once: 20 of 21 characters in runs (14 and 6)."""
  path = _vocab_of_whole_clauses(tmp_path / "vocab")
  said = (r"\(recorded in .*vocab.tokenization.json\), and its words are runs of ideographs or "
          r"kana \(95.2 % of their characters in runs of 5 or more, e.g. '市民纷纷在社交媒体上分享消息'"
          r"\): text written without spaces, which --tokenizer=cjk splits into characters\. ")
  with pytest.raises(DataError, match=(
      r"^--tokenizer=cjk, but the vocab .* was made with --tokenizer=whitespace " + said
      + r"Remake the vocab with tools/make_vocab.py --tokenizer=cjk --lowercase=true\.$")):
    vocab_lib.check_tokenization(path, "cjk", True, ("tokenizer", "lowercase"))
  with pytest.raises(DataError, match=(
      r"^--tokenizer=punct \(the default\), but the vocab .* was made with "
      r"--tokenizer=whitespace " + said + r"Pass --tokenizer=cjk and remake the vocab with "
      r"tools/make_vocab.py --tokenizer=cjk --lowercase=false\.$")):
    vocab_lib.check_tokenization(path, "punct", False)
  # A vocab of words keeps the message that names its tokenisation.
  (tmp_path / "words").write_text("研究 3\n方法 2\n", encoding="utf-8")
  vocab_lib.write_tokenization(str(tmp_path / "words"), "whitespace", False)
  with pytest.raises(DataError, match="Pass --tokenizer=whitespace --lowercase=false, or remake"):
    vocab_lib.check_tokenization(str(tmp_path / "words"), "cjk", False)


def test_the_unknown_word_check_names_cjk_for_articles_of_whole_clauses(csl_titles, tmp_path,
                                                                       caplog):
  """csl_titles at whitespace with the vocab counted so from its train split: on that split no
  token is unknown, yet the run is warned; on val (nearly every clause unknown) a training is
  refused naming cjk, not other data."""
  rows = _jsonl(csl_titles / "train.jsonl")
  path = tmp_path / "vocab"
  vocab_lib.write_vocab(str(path), vocab_lib.count_words(
      _tokens_of([r["article"] for r in rows] + [r["abstract"] for r in rows])))
  vocab = vocab_lib.Vocab.from_file(str(path), 0)
  cause = (r"the articles' tokens are runs of ideographs or kana \(\d+\.\d % of their characters "
           r"in runs of 5 or more, e\.g\. '.+'\): text written without spaces, which "
           r"--tokenizer=cjk splits into characters\. Pass --tokenizer=cjk, with a vocab made so "
           r"\(tools/make_vocab\.py --tokenizer=cjk\)\.")
  train = config.HParams(mode="train", data_path=str(csl_titles / "train.jsonl"),
                         vocab_path=str(path), vocab_size=0)
  with caplog.at_level("WARNING"):
    assert data.check_unknown_words(train, vocab) == 0.0
  [warning] = [m for m in caplog.messages if "out of the vocabulary" in m]
  assert re.fullmatch(r"0\.0 % of the article tokens .* --tokenizer=whitespace "
                      r"--lowercase=false: " + cause, warning), warning
  with pytest.raises(DataError) as refusal:
    data.check_unknown_words(train.replace(data_path=str(csl_titles / "val.jsonl")), vocab)
  assert re.fullmatch(r"9\d\.\d % of the article tokens .*: " + cause + r" Training on articles "
                      r"mostly unknown to the vocab is refused .*", str(refusal.value))
  assert "other data" not in str(refusal.value)


def _tokens_of(texts):
  return [[t.decode("utf-8") for t in row] for row in text.tokenize(texts).to_list()]
