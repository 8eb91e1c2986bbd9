"""The built-in demo corpus: format, determinism, copyable names, restatements, caching."""

import collections
import os
import pathlib
import re
import struct
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from pointer_gen.data import demo as demo_data
from pointer_gen.text.vocab import SPECIALS, Vocab

REPO = pathlib.Path(__file__).resolve().parents[2]
TEMPLATE_WORDS = demo_data.template_words()
# All template words and nothing else: the vocab_size the demo flagfile should use.
VOCAB_SIZE = len(TEMPLATE_WORDS) + len(SPECIALS)
_SENTENCE = re.compile(r"<s> (.+?) </s>")


def _read_bin(path):
  """An independent reader: length prefix, then a tf.train.Example, to the end of the file."""
  data = pathlib.Path(path).read_bytes()
  examples = []
  pos = 0
  while pos < len(data):
    (length,) = struct.unpack("<q", data[pos:pos + 8])
    example = tf.train.Example.FromString(data[pos + 8:pos + 8 + length])
    pos += 8 + length
    feature = example.features.feature
    examples.append((feature["article"].bytes_list.value[0].decode("utf-8"),
                     feature["abstract"].bytes_list.value[0].decode("utf-8")))
  assert pos == len(data)
  return examples


def _read_split(pattern):
  return [ex for path in sorted(tf.io.gfile.glob(pattern)) for ex in _read_bin(path)]


def _sentences(abstract):
  sentences = _SENTENCE.findall(abstract)
  assert " ".join(f"<s> {s} </s>" for s in sentences) == abstract
  return sentences


def _names(tokens):
  return [t for t in tokens if t not in TEMPLATE_WORDS]


def _tree_bytes(root):
  root = pathlib.Path(root)
  return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  out_dir = tmp_path_factory.mktemp("demo")
  start = time.time()
  paths = demo_data.generate_demo_corpus(str(out_dir), seed=0)
  seconds = time.time() - start
  splits = {split: _read_split(paths[split]) for split in ("train", "val", "test")}
  return {"dir": out_dir, "paths": paths, "seconds": seconds, **splits}


def test_default_corpus_is_generated_quickly(corpus):
  assert corpus["seconds"] < 5


def test_files_and_counts_per_split(corpus):
  chunk_dir = corpus["dir"] / "chunked"
  assert sorted(os.listdir(chunk_dir)) == [
      "test_000.bin", "train_000.bin", "train_001.bin", "val_000.bin"]
  assert corpus["paths"] == {"train": str(chunk_dir / "train_*"), "val": str(chunk_dir / "val_*"),
                             "test": str(chunk_dir / "test_*"),
                             "vocab": str(corpus["dir"] / "vocab")}
  assert len(_read_bin(chunk_dir / "train_000.bin")) == 1000
  assert [len(corpus[s]) for s in ("train", "val", "test")] == [2000, 200, 200]


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_text_is_tokenised_lower_case_with_short_summaries(corpus, split):
  for article, abstract in corpus[split]:
    for text in [article] + _sentences(abstract):
      assert text == text.lower() and text.split(" ") == text.split()
    assert demo_data.MIN_ARTICLE_TOKENS <= len(article.split()) <= demo_data.MAX_ARTICLE_TOKENS
    sentences = _sentences(abstract)
    assert 1 <= len(sentences) <= 2
    assert 8 <= sum(len(s.split()) for s in sentences) <= 25


def test_abstract_names_occur_in_the_article(corpus):
  for split in ("train", "val", "test"):
    for article, abstract in corpus[split]:
      names = _names(" ".join(_sentences(abstract)).split())
      assert names and set(names) <= set(article.split())


def test_each_name_is_rare(corpus):
  articles_per_name = collections.Counter(
      name for article, _ in corpus["train"] for name in set(_names(article.split())))
  assert max(articles_per_name.values()) <= 2


def test_articles_restate_the_summarised_name(corpus):
  for article, abstract in corpus["train"]:
    first_name = _names(" ".join(_sentences(abstract)).split())[0]
    assert article.split().count(first_name) >= 2


def test_vocab_file_is_sorted_by_count_without_specials(corpus):
  lines = pathlib.Path(corpus["paths"]["vocab"]).read_text(encoding="utf-8").splitlines()
  words, counts = zip(*(line.split(" ") for line in lines))
  counts = [int(c) for c in counts]
  assert counts == sorted(counts, reverse=True)
  assert not {"<s>", "</s>"} & set(words)
  assert not [w for w in words if w.startswith("[") and w.endswith("]")]
  expected = collections.Counter(
      t for article, abstract in corpus["train"]
      for t in (article + " " + " ".join(_sentences(abstract))).split())
  assert dict(zip(words, counts)) == expected


def test_vocab_cut_keeps_template_words_and_leaves_names_to_copy(corpus):
  vocab = Vocab.from_file(corpus["paths"]["vocab"], VOCAB_SIZE)
  assert set(vocab.words[len(SPECIALS):]) == TEMPLATE_WORDS
  in_vocab = set(vocab.words)
  oovs_per_article = []
  copyable = total = 0
  for article, abstract in corpus["train"] + corpus["val"]:
    article_tokens = article.split()
    oovs_per_article.append(len({t for t in article_tokens if t not in in_vocab}))
    abstract_oovs = [t for t in " ".join(_sentences(abstract)).split() if t not in in_vocab]
    total += len(abstract_oovs)
    copyable += sum(t in article_tokens for t in abstract_oovs)
  assert sum(oovs_per_article) / len(oovs_per_article) >= 3
  assert copyable >= 0.9 * total > 0


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
  sizes = {"num_train": 40, "num_val": 5, "num_test": 5}
  for name, seed in (("a", 3), ("b", 3), ("c", 4)):
    demo_data.generate_demo_corpus(str(tmp_path / name), seed=seed, **sizes)
  first = _tree_bytes(tmp_path / "a")
  assert first == _tree_bytes(tmp_path / "b")
  other = _tree_bytes(tmp_path / "c")
  assert first.keys() == other.keys()
  # The vocab's .tokenization.json says how any demo corpus is tokenised.
  assert all(first[k] != other[k] for k in first if not k.endswith(".tokenization.json"))


@pytest.mark.slow
def test_same_bytes_in_another_process(tmp_path):
  # A fresh interpreter has other hash seeds and other addresses: catches order that depends
  # on set iteration or on protobuf map hashing.
  code = ("import sys; from pointer_gen.data import demo as demo_data; "
          "demo_data.generate_demo_corpus(sys.argv[1], seed=1, num_train=20, num_val=2, "
          "num_test=2)")
  env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(REPO))
  subprocess.run([sys.executable, "-c", code, str(tmp_path / "child")], env=env, check=True,
                 capture_output=True)
  demo_data.generate_demo_corpus(str(tmp_path / "here"), seed=1, num_train=20, num_val=2,
                                 num_test=2)
  assert _tree_bytes(tmp_path / "child") == _tree_bytes(tmp_path / "here")


def _state(out_dir):
  train = out_dir / "chunked" / "train_000.bin"
  return train.stat().st_ino, train.stat().st_mtime_ns, (out_dir / "DONE").stat().st_mtime_ns


def test_ensure_reuses_then_regenerates(tmp_path):
  out_dir = tmp_path / "demo"
  paths = demo_data.ensure_demo_corpus(str(out_dir))
  assert paths["vocab"] == str(out_dir / "vocab")
  assert paths["train"] == str(out_dir / "chunked" / "train_*")
  demo_data.generate_demo_corpus(str(tmp_path / "plain"))
  assert _tree_bytes(out_dir / "chunked") == _tree_bytes(tmp_path / "plain" / "chunked")
  assert sorted(os.listdir(tmp_path)) == ["demo", "plain"]
  before = _state(out_dir)

  assert demo_data.ensure_demo_corpus(str(out_dir)) == paths
  assert _state(out_dir) == before

  (out_dir / "DONE").unlink()
  demo_data.ensure_demo_corpus(str(out_dir))
  assert (out_dir / "DONE").exists()
  assert _state(out_dir)[0] != before[0]
  assert sorted(os.listdir(tmp_path)) == ["demo", "plain"]


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_the_corpus_directory_has_the_umasks_mode(tmp_path, umask):
  """As a plain mkdir makes it (0755 under umask 022), not private to its maker as a temporary
  directory is (0700)."""
  before = os.umask(umask)
  try:
    demo_data.ensure_demo_corpus(str(tmp_path / "demo"))
  finally:
    os.umask(before)
  assert (tmp_path / "demo").stat().st_mode & 0o777 == 0o777 & ~umask


def test_ensure_regenerates_for_another_seed(tmp_path):
  out_dir = tmp_path / "demo"
  demo_data.ensure_demo_corpus(str(out_dir), seed=0)
  before = _tree_bytes(out_dir / "chunked")
  demo_data.ensure_demo_corpus(str(out_dir), seed=1)
  assert _tree_bytes(out_dir / "chunked") != before


def test_ensure_replaces_a_half_written_corpus(tmp_path):
  out_dir = tmp_path / "demo"
  (out_dir / "chunked").mkdir(parents=True)
  (out_dir / "chunked" / "train_000.bin").write_bytes(b"\x07")
  demo_data.ensure_demo_corpus(str(out_dir))
  assert len(_read_split(str(out_dir / "chunked" / "train_*"))) == 2000
