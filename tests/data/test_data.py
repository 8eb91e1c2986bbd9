"""`data.example_features` and single-pass `data.make_dataset` against hand-computed ids
(the original's article2ids / abstract2ids), and the training source's data-epoch log."""

import dataclasses
import itertools
import json

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import settings
from pointer_gen.data import pipeline as data
from pointer_gen.formats import base
from pointer_gen.formats import data_files
from pointer_gen.formats import skips as skips_lib
from pointer_gen.text import vocab as vocab_lib

WORDS = ["the", "cat", "sat", "on", "mat", ".", "a", "dog"]
# [UNK]=0 [PAD]=1 [START]=2 [STOP]=3, then the=4 cat=5 sat=6 on=7 mat=8 .=9 a=10 dog=11.
V = 12
UNK, PAD, START, STOP = 0, 1, 2, 3
THE, CAT, SAT, ON, MAT, DOT, A, DOG = range(4, 12)

ARTICLE = "the zebra sat on the mat with zebra and a quokka ."
# zebra (twice), with, and, quokka are OOVs: temporary ids V+0 (both), V+1, V+2, V+3.
ABSTRACT = "a zebra sat with the giraffe ."
# giraffe is an OOV that is not in the article: [UNK] in the target too.


@pytest.fixture(scope="module")
def table():
  vocab = vocab_lib.Vocab(WORDS)
  assert len(vocab) == V
  return vocab.lookup_table()


def features(table, article, abstract, max_enc_steps=50, max_dec_steps=50, **kwargs):
  out = data.example_features(tf.constant(article), tf.constant(abstract), table, V,
                              max_enc_steps, max_dec_steps, **kwargs)
  return tf.nest.map_structure(lambda value: value.numpy(), out)


def _check(f, **expected):
  """Each field of `f` named in `expected` is the value given."""
  for key, want in expected.items():
    got = getattr(f, key)
    if key == "article_oovs":
      assert [w.decode() for w in got] == want, key
    elif np.ndim(want) == 0:
      assert got == want, key
    else:
      np.testing.assert_array_equal(got, np.array(want), err_msg=key)


def test_pointer_mode_ids(table):
  f = features(table, ARTICLE, ABSTRACT)
  _check(f,
         enc_input=[THE, UNK, SAT, ON, THE, MAT, UNK, UNK, UNK, A, UNK, DOT],
         enc_input_ext=[THE, V, SAT, ON, THE, MAT, V + 1, V, V + 2, A, V + 3, DOT],
         enc_len=12,
         article_oovs=["zebra", "with", "and", "quokka"],
         num_oovs=4,
         dec_input=[START, A, UNK, SAT, UNK, THE, UNK, DOT],
         target=[A, V, SAT, V + 1, THE, UNK, DOT, STOP],
         dec_len=8)
  for key in ("enc_input", "enc_input_ext", "dec_input", "target", "enc_len", "dec_len"):
    assert getattr(f, key).dtype == np.int32, key


def test_non_article_oov_in_target_is_unk(table):
  """Only OOVs that occur in the article get a temporary id in the target; the others are
  [UNK], whatever position the article's OOVs have."""
  f = features(table, "zebra the cat", "giraffe cat okapi zebra")
  _check(f, article_oovs=["zebra"], target=[UNK, CAT, UNK, V, STOP])
  f = features(table, "the cat sat", "the zebra")  # article without OOV
  _check(f, enc_input_ext=[THE, CAT, SAT], article_oovs=[], num_oovs=0,
         target=[THE, UNK, STOP])


def test_repeated_oovs_share_one_temporary_id(table):
  f = features(table, "quokka zebra quokka the quokka zebra", "zebra zebra quokka quokka")
  _check(f, enc_input_ext=[V, V + 1, V, THE, V, V + 1], article_oovs=["quokka", "zebra"],
         target=[V + 1, V + 1, V, V, STOP], dec_input=[START, UNK, UNK, UNK, UNK])


@pytest.mark.parametrize("max_dec_steps,dec_input,target", [
    (9, [START, A, UNK, SAT, UNK, THE, UNK, DOT], [A, V, SAT, V + 1, THE, UNK, DOT, STOP]),
    (8, [START, A, UNK, SAT, UNK, THE, UNK, DOT], [A, V, SAT, V + 1, THE, UNK, DOT, STOP]),
    # Truncated: the target loses its [STOP].
    (7, [START, A, UNK, SAT, UNK, THE, UNK], [A, V, SAT, V + 1, THE, UNK, DOT]),
    (3, [START, A, UNK], [A, V, SAT]),
    (1, [START], [A]),
])
def test_decoder_truncation(table, max_dec_steps, dec_input, target):
  f = features(table, ARTICLE, ABSTRACT, max_dec_steps=max_dec_steps)
  _check(f, dec_input=dec_input, target=target, dec_len=len(dec_input))


def test_encoder_truncation_limits_copyable_oovs(table):
  f = features(table, ARTICLE, ABSTRACT, max_enc_steps=6)
  # "with" is cut from the article, so it is no longer copyable.
  _check(f,
         enc_input=[THE, UNK, SAT, ON, THE, MAT],
         enc_input_ext=[THE, V, SAT, ON, THE, MAT],
         enc_len=6,
         article_oovs=["zebra"],
         num_oovs=1,
         dec_input=[START, A, UNK, SAT, UNK, THE, UNK, DOT],
         target=[A, V, SAT, UNK, THE, UNK, DOT, STOP])


def test_baseline_mode_has_no_temporary_ids(table):
  f = features(table, ARTICLE, ABSTRACT, pointer_gen=False)
  _check(f,
         enc_input=[THE, UNK, SAT, ON, THE, MAT, UNK, UNK, UNK, A, UNK, DOT],
         enc_input_ext=[THE, UNK, SAT, ON, THE, MAT, UNK, UNK, UNK, A, UNK, DOT],
         dec_input=[START, A, UNK, SAT, UNK, THE, UNK, DOT],
         target=[A, UNK, SAT, UNK, THE, UNK, DOT, STOP],
         dec_len=8)
  assert f.target.max() < V and f.enc_input_ext.max() < V


def test_whitespace_tokenizer_splits_on_any_whitespace(table):
  f = features(table, "  the\tcat\n\nsat  ", "the  cat\n")
  _check(f, enc_input=[THE, CAT, SAT], enc_len=3, dec_input=[START, THE, CAT],
         target=[THE, CAT, STOP])


@pytest.mark.parametrize("tokenizer,lowercase,enc_ext,oovs,dec_input,target", [
    ("punct", True,
     [THE, CAT, V, SAT, DOT, V + 1, DOG, V + 1, ON, A, MAT, V + 2],
     [",", '"', "!"],
     [START, THE, DOG, SAT, UNK], [THE, DOG, SAT, V + 2, STOP]),
    ("punct", False,
     [V, CAT, V + 1, SAT, DOT, V + 2, V + 3, V + 2, ON, A, V + 4, V + 5],
     ["The", ",", '"', "Dog", "MAT", "!"],
     [START, THE, UNK, SAT, UNK], [THE, V + 3, SAT, V + 5, STOP]),
    ("whitespace", True,
     [THE, V, V + 1, ON, A, V + 2],
     ["cat,", 'sat."dog"', "mat!"],
     [START, THE, DOG, UNK], [THE, DOG, UNK, STOP]),
    ("whitespace", False,
     [V, V + 1, V + 2, ON, A, V + 3],
     ["The", "cat,", 'sat."Dog"', "MAT!"],
     [START, THE, UNK, UNK], [THE, UNK, V + 1, STOP]),
])
def test_tokenizer_and_lowercase_options(table, tokenizer, lowercase, enc_ext, oovs, dec_input,
                                         target):
  article = 'The cat, sat."Dog" on a MAT!'
  abstract = "the Dog sat!" if tokenizer == "punct" else "the Dog cat,"
  if tokenizer == "whitespace" and lowercase:
    abstract = "the dog sat!"
  f = features(table, article, abstract, tokenizer=tokenizer, lowercase=lowercase)
  enc_input = [w if w < V else UNK for w in enc_ext]
  _check(f, enc_input=enc_input, enc_input_ext=enc_ext, article_oovs=oovs,
         dec_input=dec_input, target=target)


# ---------------------------------------------------------------------------------------------
# make_dataset, single pass

PAIRS = [
    ("the cat sat", "the cat"),
    ("a zebra sat on the mat with a zebra", "zebra sat on a mat"),
    ("dog", "the dog barked"),
    ("the quokka and the okapi sat", "okapi"),
    ("the mat", "a giraffe sat on the mat ."),
]


def test_make_dataset_single_pass(table):
  hps = config.HParams(batch_size=2, max_enc_steps=7, max_dec_steps=5, single_pass=True,
                       pointer_gen=True)

  def source():
    yield from PAIRS

  batches = [tf.nest.map_structure(lambda value: value.numpy(), b)
             for b in data.make_dataset(source, table, V, hps)]
  assert [len(b.article) for b in batches] == [2, 2, 1]  # the partial batch is kept
  articles = [a.decode() for b in batches for a in b.article]
  assert articles == [p[0] for p in PAIRS]
  assert [a.decode() for b in batches for a in b.abstract] == [p[1] for p in PAIRS]

  expected = [features(table, a, s, max_enc_steps=7, max_dec_steps=5) for a, s in PAIRS]
  # Hand-checked: the second example is truncated to 7 article tokens, and its target too.
  _check(expected[1], enc_input_ext=[A, V, SAT, ON, THE, MAT, V + 1],
         article_oovs=["zebra", "with"], target=[V, SAT, ON, A, MAT])
  _check(expected[4], dec_input=[START, A, UNK, SAT, ON], target=[A, UNK, SAT, ON, THE])

  index = 0
  for batch in batches:
    enc_width = batch.enc_input.shape[1]
    dec_width = batch.dec_input.shape[1]
    oov_width = batch.article_oovs.shape[1]
    n = len(batch.article)
    assert enc_width == max(expected[index + i].enc_len for i in range(n))
    assert max(expected[index + i].dec_len for i in range(n)) <= dec_width <= 5
    for i in range(n):
      ex = expected[index + i]
      assert batch.enc_len[i] == ex.enc_len
      assert batch.dec_len[i] == ex.dec_len
      assert batch.num_oovs[i] == ex.num_oovs
      for key, got, ids, width in (
          ("enc_input", batch.enc_input, ex.enc_input, enc_width),
          ("enc_input_ext", batch.enc_input_ext, ex.enc_input_ext, enc_width),
          ("dec_input", batch.dec_input, ex.dec_input, dec_width),
          ("target", batch.target, ex.target, dec_width)):
        want = np.full(width, PAD, np.int32)
        want[:len(ids)] = ids
        np.testing.assert_array_equal(got[i], want, err_msg=f"{key} of example {index+i}")
      want_oovs = list(ex.article_oovs) + [b""] * (oov_width - len(ex.article_oovs))
      assert list(batch.article_oovs[i]) == want_oovs
    index += n
  assert index == len(PAIRS)


def test_make_dataset_single_pass_is_repeatable(table):
  hps = config.HParams(batch_size=3, max_enc_steps=7, max_dec_steps=5, single_pass=True)
  source = lambda: iter(PAIRS)  # noqa: E731
  first = [b.target.numpy().tolist() for b in data.make_dataset(source, table, V, hps)]
  second = [b.target.numpy().tolist() for b in data.make_dataset(source, table, V, hps)]
  assert first == second and len(first) == 2


def test_data_epoch_lines_at_most_one_per_log_interval(tmp_path, caplog):
  path = tmp_path / "train.jsonl"
  path.write_text("".join(json.dumps({"article": f"a{i}", "abstract": "b"}) + "\n"
                          for i in range(20)) + "{broken\n", encoding="utf-8")
  hps = config.HParams(data_path=str(path), batch_size=1, log_every_n_steps=100, seed=0)
  vocab = vocab_lib.Vocab(WORDS)
  source, _ = data.input_pipeline(hps, vocab, single_pass=False)
  # The training log's interval, 100 steps of 1 example; the bucketing cache, 100 batches.
  assert (source.log_every, source.log_ahead) == (100, 100)
  # An interval no shorter than the cache, whose fill varies by more than half a short one.
  hps_10 = hps.replace(batch_size=4, log_every_n_steps=10)
  assert data.input_pipeline(hps_10, vocab, single_pass=False)[0].log_every == 400
  with caplog.at_level("INFO", logger="absl"):
    # 3,001 examples: 150 epochs of 20 finished. After 20e examples the training has taken
    # about 20e - 100; a line when that passes the middle of an interval, 50 + 100 k: at epochs
    # 8, 13, 18, ..., 148.
    assert len(list(itertools.islice(source(), 3001))) == 3001
  assert [m for m in caplog.messages if m.startswith("Finished data epoch")] == [
      "Finished data epochs 1-8 (160 examples); starting the next."] + [
          f"Finished data epochs {e - 4}-{e} (100 examples); starting the next."
          for e in range(13, 149, 5)]
  # The one bad record, met in each of the 150 epochs, is logged and counted once.
  assert [m for m in caplog.messages if m.startswith("Data: ")] == [
      "Data: skipped 1 records (invalid JSON: 1)"]
  assert sum(": record 20: skipped, invalid JSON" in m for m in caplog.messages) == 1
  assert source.skips.counts == {"invalid JSON": 1}
  caplog.clear()
  # Without an interval: a line per epoch.
  with caplog.at_level("INFO", logger="absl"):
    source = data.RecordSource(data_files.DataFiles.find(str(path)), seed=0)
    list(itertools.islice(source(), 41))
  assert [m for m in caplog.messages if m.startswith("Finished data epoch")] == [
      "Finished data epoch 1; starting the next.", "Finished data epoch 2; starting the next."]


@dataclasses.dataclass(frozen=True)
class _SeparatedOptions(settings.Settings):
  record_end: str = settings.setting("\n", "What ends a record.")


class _SeparatedFormat(base.DataFormat):
  """Plain-text records, each its article and its one abstract sentence, ended by the format's
  setting: where a record ends depends on it, as on a CSV file's delimiter."""
  name = label = "separated"
  extensions = (".sep",)
  pretokenized = True
  Options = _SeparatedOptions

  def read(self, path, skips, options=None):
    options = options or self.Options()
    with open(path, encoding="utf-8") as f:
      texts = [text for text in f.read().split(options.record_end) if text]
    for index, text in enumerate(texts):
      yield base.Record(text, [text], path, index)

  def count(self, path, options=None):
    return sum(1 for _ in self.read(path, skips_lib.SkipCounter(), options))


def test_the_record_count_reads_with_the_formats_settings(tmp_path):
  path = tmp_path / "records.sep"
  path.write_text("a b|c\nd|e", encoding="utf-8")
  lines = data_files.DataFiles(str(path), (str(path),), (_SeparatedFormat(),),
                               ("whitespace", False), {})
  assert lines.count() == 2
  bars = dataclasses.replace(lines, fields={"record_end": "|"})
  assert bars.count() == 3 == len(list(bars.read(skips_lib.SkipCounter())))
  # The input pipeline's count (its progress lines and ETAs) is the settled files'.
  assert data.RecordSource(bars, seed=0).num_records == 3
