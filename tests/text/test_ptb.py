"""--tokenizer=ptb against the original CNN/DailyMail pipeline's own output (CoreNLP 3.7.0 plus
make_datafiles.py, in ../shared/data/ptb_oracle): every hand-written case, the BBC train and val
articles and abstracts token for token, and CoreNLP 3.7.0's own tokenizer tests; and the
pipeline around it (one line per abstract sentence, the other tokenizers unchanged)."""

import json
import os
import re

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.data import demo as demo_data
from pointer_gen.data import pipeline as data
from pointer_gen.formats import data_files
from pointer_gen.inference import export
from pointer_gen.inference import summaries
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import ptb
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

from helpers import reference

# The share of BBC articles and abstracts that must come out identical. What is left is where
# CoreNLP, reading a whole story file, looked across a paragraph break (`1.2m.` before a
# paragraph starting with `The`, a smiley ending a paragraph); here every line ends its input.
MIN_IDENTICAL = 0.995


def _jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _lists(ragged):
  return [[t.decode("utf-8") for t in row] for row in ragged.to_list()]


@pytest.fixture(scope="module")
def cases(ptb_oracle):
  return _jsonl(ptb_oracle / "cases.jsonl")


def test_every_case_gives_corenlps_tokens(cases):
  got = _lists(ptb.tokenize_lines(tf.constant([c["input"] for c in cases])))
  wrong = [(c["exercises"], c["tokens"], g) for c, g in zip(cases, got) if g != c["tokens"]]
  assert not wrong
  assert len(cases) == 68


def test_every_case_gives_make_datafiles_lowercased_line(cases):
  """ASCII-only lower-casing (`ÉMILE` -> `Émile`) and the period added unless the last byte
  ends a sentence (`-rrb- .`), through the tokenizer training uses."""
  got = _lists(text.tokenize([c["input"] for c in cases], "ptb", lowercase=True))
  wrong = [(c["exercises"], c["lowercased_line"], g) for c, g in zip(cases, got)
           if " ".join(g) != c["lowercased_line"]]
  assert not wrong


@pytest.mark.parametrize("line, tokens", [
    # CoreNLP 3.7.0's behaviour on single rules, as documented beside the oracle.
    ("BURNS'S car", "BURNS 'S car"),
    ("Here's'em", "Here 's 'em"),
    ("He didn`t go", "He did n`t go"),
    ("(CNN)The man", "-LRB- CNN -RRB- The man"),
    ("preprocessor2... Wait . . . now", "preprocessor2 ... Wait ... now"),
    ("Wait.... then", "Wait ... . then"),
    ("a 37%-owned unit at 4:45pm, 5pm", "a 37 % - owned unit at 4:45 pm , 5pm"),
    ("US$5, C$3 and HK$2", "US$ 5 , C$ 3 and HK$ 2"),
    ("at&t and AT&T; a &lt; b &gt; c", "at & t and AT&T ; a < b > c"),
    ("<p> text </HEADLINE>", "<p> text </HEADLINE>"),
    ("\u00a31.5m and 1\u00bd cups", "# 1.5 m and 1 1/2 cups"),
    ("I dunno, 'twas fine", "I du n no , 't was fine"),
    ("shares in Apple Inc.", "shares in Apple Inc. ."),
    ("U.S. The end.", "U.S. . The end ."),
    ("Section I. The end", "Section I . The end"),
    ("built ca. 1900 in So. Africa", "built ca. 1900 in So. Africa"),
    ("an e-mail from a Sydney-based firm, 5-4", "an e-mail from a Sydney-based firm , 5-4"),
    ("see http://x.com/a.", "see http://x.com/a ."),
    ("co\u00adoperate \u2010 now", "cooperate now"),
    ("C'mon li'l Cap'n, nor'easter", "C'mon li'l Cap'n , nor'easter"),
    ("\u201eQuote\u201c one---two", "\u201e Quote `` one -- two"),
])
def test_documented_rules(line, tokens):
  assert _lists(ptb.tokenize_lines(tf.constant([line])))[0] == tokens.split(" ")


@pytest.mark.parametrize("line, tokens", [
    pytest.param('Sales rose <b class="big news">fast</b> <!-- Bob\'s "note" &amp; more -->',
                 'Sales rose <b\u00a0class="big\u00a0news"> fast </b> '
                 '<!--\u00a0Bob\'s\u00a0"note"\u00a0&amp;\u00a0more\u00a0-->',
                 id="a tag or comment is one token, what it holds untouched, spaces no-break"),
    pytest.param('<?xml-ish a="1"?> <br /> a <b c', '<?xml-ish\u00a0a="1"?> <br\u00a0/> a < b c',
                 id="processing instructions and empty tags; no closing > is no tag"),
    pytest.param("<<Acme Corp>> rose", "<< Acme Corp >> rose", id="<< does not start a tag"),
    pytest.param("Write to <ann@mail.example.org> or &lt;bob@x.example.com&gt;.",
                 "Write to <ann@mail.example.org> or &lt;bob@x.example.com&gt; .",
                 id="an e-mail address in angle brackets keeps them, entities too"),
    pytest.param("He joined Acme Inc. <p> Then he left the U.S. <p> He",
                 "He joined Acme Inc. . <p> Then he left the U.S. . <p> He",
                 id="a tag after an abbreviation or acronym ends the sentence"),
    pytest.param("so happy ^_^ or not -_- (^-^) (=.=)",
                 "so happy ^_^ or not -_- -LRB-^-^-RRB- -LRB-=.=-RRB-",
                 id="Asian smileys are tokens, their brackets escaped"),
    pytest.param("It was 30\u00b0C, or 86\u00b0F", "It was 30 \u00b0C , or 86 \u00b0F",
                 id="degrees Celsius and Fahrenheit"),
    pytest.param("Logged at 2019-11-05T07:45:00 today", "Logged at 2019-11-05T07:45:00 today",
                 id="ISO 8601 date and time"),
    pytest.param("She codes in C++, C# and f#.", "She codes in C++ , C# and f# .",
                 id="programming languages"),
    pytest.param("a copy of OK! magazine, it is OK! Really",
                 "a copy of OK! magazine , it is OK ! Really",
                 id="OK! before Magazine only"),
    pytest.param("What the f*cking sh*t, d*mn, 2*3", "What the f*cking sh*t , d*mn , 2 * 3",
                 id="starred-out swear words, not other stars"),
    pytest.param("Open report-2019_v2.pdf, a.b.txt and notes/todo-list.txt.",
                 "Open report-2019_v2.pdf , a.b.txt and notes/todo-list.txt .",
                 id="file names"),
    pytest.param("Firefox 3.x and stdio.h, but D.C. is a city in version 2.x.",
                 "Firefox 3.x and stdio.h , but D.C. is a city in version 2.x .",
                 id="one-letter file extensions, but not acronyms"),
    pytest.param("S&Ls and the S&P-500", "S&Ls and the S&P-500", id="Treebank specials"),
    pytest.param("the Caf&eacute; and na&iuml;ve", "the Caf&eacute; and na&iuml;ve",
                 id="an accented vowel entity is a letter"),
    pytest.param("pre-\u00adwar and in\u00ad-house, \u00ad7 of 1\u00ad0 and a \u00ad b",
                 "pre-war and in-house , 7 of 10 and a - b",
                 id="a soft hyphen beside a letter or digit vanishes"),
    pytest.param("Jones, R-Tex., and Smith, D-Calif.; said",
                 "Jones , R-Tex. , and Smith , D-Calif. ; said",
                 id="a hyphenated word keeps its period before , or ;"),
    pytest.param("from Fresno, Calif. yesterday, in Calif. The",
                 "from Fresno , Calif. yesterday , in Calif. . The",
                 id="Calif. is an abbreviation"),
    pytest.param("I wonder . . . . Then", "I wonder ... . Then",
                 id="four spaced dots before a word"),
    pytest.param("Shi\u2018ite clerics met O`Neil and O\u2018Hara",
                 "Shi`ite clerics met O`Neil and O`Hara",
                 id="a backtick or left quote inside a word stays a backtick"),
])
def test_web_text_rules(line, tokens):
  """CoreNLP 3.7.0's rules for what web news has more of than BBC's text: markup, smileys,
  names, file names (inputs written here, outputs by the rule)."""
  assert _lists(ptb.tokenize_lines(tf.constant([line])))[0] == tokens.split(" ")


def test_markup_goes_back_in_order_across_lines():
  """Markup taken out before the rewrites comes back in its place, also when the text holds
  the private-use characters that stand for it while it is out (they are deleted)."""
  lines = ["<p>Hi", "", "a <br/> b <ann@x.example.com>", "\ue010\ue011 <i>\ue010"]
  got = _lists(ptb.tokenize_lines(tf.constant(lines)))
  assert got == [["<p>", "Hi"], [], ["a", "<br/>", "b", "<ann@x.example.com>"], ["<i>"]]


def test_stanfords_own_tests_at_370(ptb_oracle):
  """CoreNLP 3.7.0's PTBTokenizerTest cases with default token text, each input as one line
  with each run of ASCII whitespace (line breaks among them) as one space: the pipeline
  tokenises a line at a time."""
  rows = _jsonl(ptb_oracle / "corenlp_3.7.0_tests.jsonl")
  lines = [re.sub(r"[ \t\r\n]+", " ", r["input"]) for r in rows]
  got = _lists(ptb.tokenize_lines(tf.constant(lines)))
  identical = sum(g == r["tokens"] for g, r in zip(got, rows))
  print(f"Stanford's own 3.7.0 tokenizer tests: {identical}/{len(rows)} identical")
  assert len(rows) == 102
  # All 102 pass: a later rule that breaks one must show here.
  misses = [r["input"] for g, r in zip(got, rows) if g != r["tokens"]]
  assert not misses


@pytest.mark.parametrize("split", ["train", "val"])
@pytest.mark.parametrize("lowercase", [True, False], ids=["lowercase", "cased"])
def test_bbc_articles_and_abstracts_match_the_pipeline(ptb_oracle, split, lowercase):
  rows = _jsonl(ptb_oracle / f"bbc_{split}.jsonl")
  suffix = "" if lowercase else "_cased"
  articles = _lists(text.tokenize([r["article_raw"] for r in rows], "ptb", lowercase))
  # As training reads them: an abstract's sentences joined by newlines, one line each.
  abstracts = _lists(text.tokenize(["\n".join(r["abstract_sentences_raw"]) for r in rows],
                                   "ptb", lowercase))
  article_ok = sum(a == r["article_tokens" + suffix].split(" ") for a, r in zip(articles, rows))
  abstract_ok = sum(a == [t for t in r["abstract" + suffix].split(" ") if t not in ("<s>", "</s>")]
                    for a, r in zip(abstracts, rows))
  print(f"{split} {'lowercased' if lowercase else 'cased'}: articles {article_ok}/{len(rows)} "
        f"identical, abstracts {abstract_ok}/{len(rows)}")
  assert article_ok >= MIN_IDENTICAL * len(rows)
  assert abstract_ok >= MIN_IDENTICAL * len(rows)


def test_tokenize_py_returns_the_training_tokens(ptb_oracle):
  row = _jsonl(ptb_oracle / "bbc_val.jsonl")[0]
  tokens = reference.tokens_of(row["article_raw"], "ptb", lowercase=True)
  assert tokens == row["article_tokens"].split(" ")
  assert all(isinstance(t, str) for t in tokens)


def test_lines_are_tokenised_alone_and_period_fixed():
  """Hand-checked against make_datafiles.py's rules: blank lines vanish, each line gets its
  own `.`, a line holding @highlight is left alone, a no-break space joins a fraction."""
  got = reference.tokens_of('Sales rose 5 1/2 %\n\n  \n"Profits (again)"\n@highlight\nU.S. Steel',
                         "ptb", lowercase=True)
  assert got == ["sales", "rose", "5\u00a01/2", "%", ".", "``", "profits", "-lrb-", "again",
                 "-rrb-", "''", "@highlight", "u.s.", "steel", "."]


def test_shapes_follow_the_input():
  assert text.tokenize("It's over", "ptb").numpy().tolist() == [b"It", b"'s", b"over", b"."]
  batch = text.tokenize([["a b", "c"], ["", "d!"]], "ptb")
  assert batch.to_list() == [[[b"a", b"b", b"."], [b"c", b"."]], [[], [b"d", b"!"]]]
  assert text.tokenize(["", " \n\u200b"], "ptb").to_list() == [[], []]


def test_abstract_sentences_are_lines_for_ptb_only(tmp_path):
  """The input pipeline hands each abstract sentence to the tokenizer as its own line, so ptb
  fixes each sentence's period; whitespace and punct see the same text as before."""
  path = tmp_path / "one.jsonl"
  path.write_text(json.dumps({"article": "Sales rose. Profits fell",
                              "abstract_sentences": ["Sales rose", "Profits fell"]}) + "\n",
                  encoding="utf-8")
  source = data.RecordSource(data_files.DataFiles.find(str(path)), single_pass=True)
  article, abstract = next(iter(source()))
  assert abstract == "Sales rose\nProfits fell"
  assert reference.tokens_of(abstract, "ptb") == ["Sales", "rose", ".", "Profits", "fell", "."]
  assert reference.tokens_of(article, "ptb") == ["Sales", "rose", ".", "Profits", "fell", "."]
  assert reference.tokens_of(abstract, "whitespace") == ["Sales", "rose", "Profits", "fell"]


@pytest.mark.parametrize("tokenizer, lowercase, expected", [
    ("whitespace", False, ["Don't", '"Stop"\u00a0(now)', "U.S."]),
    ("whitespace", True, ["don't", '"stop"\u00a0(now)', "u.s."]),
    ("punct", False, ["Don", "'", "t", '"', "Stop", '"', "\u00a0", "(", "now", ")", "U", ".",
                      "S", "."]),
    ("punct", True, ["don", "'", "t", '"', "stop", '"', "\u00a0", "(", "now", ")", "u", ".",
                     "s", "."]),
])
def test_whitespace_and_punct_are_unchanged(tokenizer, lowercase, expected):
  """No line handling, no period: ASCII whitespace splits, and punct splits off each Unicode
  punctuation or symbol character (values worked out by hand from the two rules)."""
  got = reference.tokens_of('Don\'t "Stop"\u00a0(now)\n\nU.S.', tokenizer, lowercase)
  assert got == expected


def test_ngram_figures_keep_ptb_words_and_fix_each_reference_sentence():
  """Decoded words are the model's ptb tokens and are only split; each reference sentence is a
  line that gets its own period, as in training."""
  article = "The U.S. (Ohio) grew"
  decoded = [["the u.s. -lrb- ohio -rrb- grew ."]]
  references = [summaries.reference_sentences("The U.S. grew\nOhio grew", "ptb", True)]
  assert references == [["the u.s. grew .", "ohio grew ."]]
  stats = summaries.ngram_figures(decoded, references, [article], "ptb", lowercase=True)
  # Article: the u.s. -lrb- ohio -rrb- grew . ; decoded: the same 7 tokens, nothing novel.
  assert stats["decoded"]["mean_length"] == 7
  assert stats["decoded"]["novel_ngrams_pct"]["1"] == 0.0
  # Reference: the u.s. grew . ohio grew . (7 tokens): all in the article; 2-grams "u.s. grew",
  # ". ohio" and "ohio grew" are novel (3 of 6).
  assert stats["reference"]["mean_length"] == 7
  assert stats["reference"]["novel_ngrams_pct"]["1"] == 0.0
  assert stats["reference"]["novel_ngrams_pct"]["2"] == pytest.approx(100 * 3 / 6)


def test_export_sees_the_pipelines_tokens(ptb_oracle, tmp_path):
  """The SavedModel tokenises raw articles in its graph exactly as the original pipeline did,
  truncated to max_enc_steps (an untrained model: only the article's tokens matter here)."""
  rows = _jsonl(ptb_oracle / "bbc_val.jsonl")
  corpus = demo_data.ensure_demo_corpus(str(tmp_path / "demo_data"))
  hps = config.HParams(vocab_path=corpus["vocab"], log_root=str(tmp_path), exp_name="run",
                       vocab_size=500, hidden_dim=8, emb_dim=8, max_enc_steps=400,
                       max_dec_steps=3, min_dec_steps=1, beam_size=2, tokenizer="ptb",
                       lowercase=True)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  checkpoint = checkpoints.make_checkpoint(model_lib.PointerGenerator.from_hparams(hps, len(vocab)))
  ckpt_path = tf.train.CheckpointManager(checkpoint, hps.train_dir, 1,
                                         checkpoint_name=checkpoints.CHECKPOINT_NAME).save()
  saved = export.export(hps, vocab, ckpt_path, str(tmp_path / "models"))
  # Core ops only (tf.raw_ops lists them; tensorflow-text's are not there): any TF Serving.
  with open(os.path.join(saved, "saved_model.pb"), "rb") as f:
    graph = saved_model_pb2.SavedModel.FromString(f.read()).meta_graphs[0].graph_def
  op_types = {node.op for node in graph.node} | {
      node.op for function in graph.library.function for node in function.node_def}
  assert {"StaticRegexReplace", "StringSplitV2"} <= op_types
  assert not [op for op in op_types if not hasattr(tf.raw_ops, op)]
  attention = tf.saved_model.load(saved).signatures["attention"]
  got = attention(article=tf.constant([r["article_raw"] for r in rows]))["article_tokens"]
  got = [[t for t in row if t] for row in _lists(tf.RaggedTensor.from_tensor(got))]
  want = [r["article_tokens"].split(" ")[:hps.max_enc_steps] for r in rows]
  assert sum(g == w for g, w in zip(got, want)) == len(rows)
