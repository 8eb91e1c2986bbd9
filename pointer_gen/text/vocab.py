"""The vocabulary file of the original code: `word count` lines, specials first at ids 0-3."""

import collections
import json
import os

from absl import logging
import tensorflow as tf

from pointer_gen.base import files
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import flag_text
from pointer_gen.text import cjk

UNK = "[UNK]"
PAD = "[PAD]"
START = "[START]"
STOP = "[STOP]"
SPECIALS = (UNK, PAD, START, STOP)
UNK_ID, PAD_ID, START_ID, STOP_ID = range(4)
# Sentence tags of the abstracts in the .bin format; they never get an id.
SENTENCE_START = "<s>"
SENTENCE_END = "</s>"
FORBIDDEN = frozenset(SPECIALS + (SENTENCE_START, SENTENCE_END))
# tools/make_vocab.py and tools/make_datafiles.py record how they tokenised beside the vocab, in
# `<vocab>.tokenization.json`; the vocab file itself keeps the original's format.
TOKENIZATION_SUFFIX = ".tokenization.json"


class Vocab:
  """Maps words to ids and back, exactly as the original's `data.Vocab`."""

  def __init__(self, words):
    self._id_to_word = list(SPECIALS) + list(words)
    self._word_to_id = {w: i for i, w in enumerate(self._id_to_word)}

  @classmethod
  def from_file(cls, path, max_size):
    """Reads `path`; keeps at most `max_size` entries including the 4 specials (0 = all)."""
    words = []
    seen = {}
    shape = _VocabShape(path)
    skipped = []  # (line number, line) of the lines that are not `word count`
    with open_vocab_file(path) as f:
      for line_no, raw in enumerate(f, start=1):
        if max_size and len(words) + len(SPECIALS) >= max_size:
          break
        # ASCII whitespace only, as the tokenizer (tf.strings.split) and the original (bytes):
        # str.split would also cut at U+00A0 etc. and turn the token 'x\u00a0' into 'x'.
        fields = raw.split()
        shape.add(line_no, fields)
        try:
          line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
          shape.check()
          raise DataError(f"{path}:{line_no}: vocab line is not valid UTF-8 ({e.reason})") from e
        if len(fields) != 2:
          skipped.append((line_no, line.rstrip("\n")))
          continue
        word = fields[0].decode("utf-8")
        if word in FORBIDDEN:
          shape.check()
          raise DataError(f"{path}:{line_no}: vocab file must not contain {word!r}; "
                          f"{', '.join(SPECIALS)} get ids 0-3 automatically")
        if word in seen:
          shape.check()
          raise DataError(f"{path}:{line_no}: duplicate word {word!r} (first on line {seen[word]})")
        seen[word] = line_no
        words.append(word)
    shape.check(final=True)
    # Logged once the file is known to be a vocab: another file would give a warning a line.
    for line_no, line in skipped:
      logging.warning("%s:%d: skipping vocab line that is not 'word count': %r", path, line_no,
                      line)
    vocab = cls(words)
    logging.info("Read %d words from %s (vocab size %d with specials)", len(words), path, len(vocab))
    return vocab

  def __len__(self):
    return len(self._id_to_word)

  @property
  def words(self):
    """All entries in id order, specials included."""
    return list(self._id_to_word)

  def word2id(self, word):
    return self._word_to_id.get(word, UNK_ID)

  def id2word(self, word_id):
    return self._id_to_word[word_id]

  def outputids2words(self, ids, article_oovs):
    """Maps decoder output ids to words; ids >= len(self) index the article's OOV list."""
    words = []
    for i in ids:
      if i < len(self):
        words.append(self._id_to_word[i])
        continue
      k = i - len(self)
      if k >= len(article_oovs):
        raise ValueError(f"id {i} is extended OOV #{k} but the article has only "
                         f"{len(article_oovs)} OOVs")
      words.append(article_oovs[k])
    return words

  def lookup_table(self):
    """A `tf.lookup` table word -> id, unknown words -> [UNK]."""
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(self._id_to_word, tf.string),
        tf.range(len(self._id_to_word), dtype=tf.int32))
    return tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)


def open_vocab_file(path):
  """`path` opened for reading as bytes; a DataError naming --vocab_path when it is empty, a
  directory, missing or unreadable, each with its own message: a directory reported as missing
  sent the user looking for a file that is there."""
  if not path:
    raise DataError("--vocab_path is required (the vocab file of the data set)")
  if os.path.isdir(path):
    raise DataError(f"--vocab_path={path}: a directory, not a vocab file: give the vocab file "
                    "('word count' lines) itself, e.g. the file named vocab in it")
  if not os.path.exists(path):
    raise DataError(f"--vocab_path={path}: no such file")
  try:
    f = open(path, "rb")
  except OSError as e:
    raise DataError(f"--vocab_path={path}: cannot read the file ({e.strerror})") from e
  head = f.peek(8)
  for magic, (kind, tool) in _COMPRESSED.items():
    if head.startswith(magic):
      f.close()
      raise DataError(f"--vocab_path={path}: a {kind}-compressed file, not a vocab file: "
                      f"decompress it ({tool}) and give the vocab file it holds")
  return f


# The first bytes of the compressed files a vocab may come in (a downloaded vocab.gz), none of
# which a text file starts with: the kind, and the command that decompresses it. Others are
# binary files (`_is_binary`).
_COMPRESSED = {b"\x1f\x8b": ("gzip", "gunzip"), b"\xfd7zXZ\x00": ("xz", "unxz"),
               b"PK\x03\x04": ("zip", "unzip")}


def _is_binary(line):
  """Whether a line read from a vocab file holds bytes no text holds (NUL, control characters,
  bytes that are not UTF-8): such a file is never shown on the terminal."""
  return "\ufffd" in line or any(ord(c) < 32 and c not in "\t\r\n" for c in line)


class _VocabShape:
  """Tells a vocab file from another file given as one (a data file, a README): the original
  skips a line that is not `word count` with a warning, which for such a file means hundreds of
  warnings, a vocab of the 4 specials alone and a run trained on nothing but [UNK]. A file is
  taken as a vocab when at least half of its non-blank lines read are `word <integer>`."""

  def __init__(self, path):
    self.path = path
    self.good = 0
    self.bad = 0
    self.first_bad = None  # (line number, line)

  def add(self, line_no, fields):
    """Counts one line, split on ASCII whitespace (as bytes)."""
    if not fields:
      return
    if len(fields) == 2 and fields[1].isdigit():
      self.good += 1
      return
    self.bad += 1
    if self.first_bad is None:
      self.first_bad = (line_no, b" ".join(fields).decode("utf-8", "replace"))

  def check(self, final=False):
    """Raises DataError when the lines so far are mostly not `word count` or, at the end of
    the lines read (`final`), when none is."""
    if self.bad > self.good or (final and not self.good):
      if self.first_bad is None:
        raise DataError(f"--vocab_path={self.path}: not a vocab file: it holds no 'word count' "
                        "line (the vocab of the data, most frequent word first; "
                        "tools/make_vocab.py writes one)")
      line_no, line = self.first_bad
      if _is_binary(line):
        raise DataError(f"{self.path}:{line_no}: not a vocab file: a binary file (its lines "
                        "are not shown). --vocab_path takes the vocab of the data, 'word count' "
                        "lines, most frequent word first (tools/make_vocab.py writes one)")
      raise DataError(
          f"{self.path}:{line_no}: not a vocab file: {self.bad} of the {self.good + self.bad} "
          f"non-blank lines read are not 'word count' lines, the first this one: {line[:80]!r}. "
          "--vocab_path takes the vocab of the data, 'word count' lines, most frequent word "
          "first (tools/make_vocab.py writes one)")


def count_words(token_lists):
  """Counts tokens over an iterable of token lists, leaving out specials and sentence tags."""
  counts = collections.Counter()
  for tokens in token_lists:
    counts.update(t for t in tokens if t not in FORBIDDEN)
  return counts


def write_vocab(path, counts, max_size=0):
  """Writes `word count` lines, most frequent first, ties in word order (deterministic)."""
  ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
  if max_size:
    ordered = ordered[:max_size]
  with files.atomic_file(path) as f:
    for word, count in ordered:
      f.write(f"{word} {count}\n")
  return len(ordered)


def tokenization_path(vocab_path):
  return vocab_path + TOKENIZATION_SUFFIX


def write_tokenization(vocab_path, tokenizer, lowercase, **details):
  """Writes the sidecar that says how the words of `vocab_path` were tokenised (atomically)."""
  record = {"tokenizer": tokenizer, "lowercase": lowercase, **details}
  path = tokenization_path(vocab_path)
  files.write_text_atomic(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
  return path


def read_tokenization(vocab_path):
  """The vocab's sidecar as a dict: `tokenizer` and `lowercase`, with which its words are read
  from the data files, and, when the data files hold pre-tokenised text, `raw_tokenizer` and
  `raw_lowercase`, which made those tokens from raw text. None without a sidecar (the
  original's vocab)."""
  path = tokenization_path(vocab_path)
  if not os.path.exists(path):
    return None
  try:
    with open(path, encoding="utf-8") as f:
      record = json.load(f)
    if not isinstance(record, dict) or not {"tokenizer", "lowercase"} <= set(record):
      raise ValueError("expected an object with tokenizer and lowercase")
  except (OSError, ValueError) as e:
    raise DataError(f"{path}: cannot read how the vocab was tokenised ({e}); remake it with "
                    "tools/make_vocab.py or delete it") from e
  return record


def check_tokenization(vocab_path, tokenizer, lowercase, given=()):
  """Raises DataError when the vocab's sidecar says its words were made with another --tokenizer
  or --lowercase than the run's: neither the one that reads its data files nor, when it records
  one, the one that made them from raw text (raw JSONL read as the data was prepared). A vocab
  without a sidecar (the original's) is not checked. `given`: the flags the user set; the
  message calls a value left at its default so."""
  record = read_tokenization(vocab_path)
  if record is None:
    return
  made_with = (record["tokenizer"], record["lowercase"])
  raw = (record.get("raw_tokenizer"), record.get("raw_lowercase"))
  if (tokenizer, lowercase) in (made_with, raw):
    return
  name = "tokenizer" if tokenizer != made_with[0] else "lowercase"
  value = tokenizer if name == "tokenizer" else lowercase
  made_value = made_with[0] if name == "tokenizer" else made_with[1]
  raw_hint = (f" (or, for raw text, --tokenizer={raw[0]} --lowercase={flag_text(raw[1])})"
              if raw[0] is not None else "")
  default = "" if name in given else " (the default)"
  mismatch = (f"--{name}={flag_text(value)}{default}, but the vocab {vocab_path} was made with "
              f"--{name}={flag_text(made_value)} (recorded in {tokenization_path(vocab_path)})")
  # Chinese or Japanese counted without --tokenizer=cjk: going back to the vocab's tokenisation
  # would train on whole clauses, so the fix is the vocab.
  found = cjk.unsplit(dict.fromkeys(Vocab.from_file(vocab_path, 0).words[len(SPECIALS):], 1))
  if found is not None:
    remake = (f"the vocab with tools/make_vocab.py --tokenizer=cjk "
              f"--lowercase={flag_text(lowercase)}")
    fix = (f"Remake {remake}" if tokenizer == "cjk"
           else f"Pass --tokenizer=cjk and remake {remake}")
    raise DataError(f"{mismatch}, and its words are {found.said()}. {fix}.")
  raise DataError(
      f"{mismatch}: its words would not match the tokens. Pass --tokenizer={made_with[0]} "
      f"--lowercase={flag_text(made_with[1])}{raw_hint}, or remake the vocab.")
