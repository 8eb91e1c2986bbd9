"""Property-based fuzzing of the readers: corrupted `.bin` files, hostile JSONL and vocab files.

Every input must end in records that are exactly right plus skips that are counted and logged
with file and record index, or in a DataError whose message names the file: never a hang, another
exception type, a TensorFlow error from inside tf.data, or a silently wrong record.

The oracles are independent of the readers: `.bin` frames are walked with struct and each record
is compared with the known original; JSONL and vocab lines are generated together with the
outcome they must have.

POINTER_GEN_FUZZ_SCALE multiplies the number of examples, and POINTER_GEN_FUZZ_REPORT names a
JSON file that receives the outcome counts; tools/dev/soak.py uses both for its long run.
"""

import collections
import contextlib
import json
import logging
import os
import struct
import threading

from hypothesis import HealthCheck
from hypothesis import assume
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base.errors import DataError
from pointer_gen.data import pipeline as data
from pointer_gen.formats import base
from pointer_gen.formats import bin_format
from pointer_gen.formats import data_files
from pointer_gen.formats import jsonl_format
from pointer_gen.formats import skips as skips_lib
from pointer_gen.text import vocab as vocab_lib

SCALE = float(os.environ.get("POINTER_GEN_FUZZ_SCALE", "1"))
# Reading one small file takes milliseconds; a generous bound still catches any hang.
TIMEOUT_SECS = 30
OUTCOMES = collections.Counter()


def _settings(examples):
  # No example database: it would be written into the repository (.hypothesis/).
  return settings(max_examples=max(1, int(examples * SCALE)), deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module", autouse=True)
def _report_outcomes():
  yield
  path = os.environ.get("POINTER_GEN_FUZZ_REPORT")
  if path:
    with open(path, "w", encoding="utf-8") as f:
      json.dump(dict(OUTCOMES), f, indent=1, sort_keys=True)


def _within(seconds, fn, *args):
  """fn(*args) in a thread, so that a hang fails the test instead of stalling the suite."""
  result = {}

  def target():
    try:
      result["value"] = fn(*args)
    except BaseException as e:  # pylint: disable=broad-except  (re-raised below)
      result["error"] = e

  thread = threading.Thread(target=target, daemon=True)
  thread.start()
  thread.join(seconds)
  assert not thread.is_alive(), f"{fn.__name__}{args} did not finish within {seconds} s"
  if "error" in result:
    raise result["error"]
  return result["value"]


class _Warnings(logging.Handler):

  def __init__(self):
    super().__init__(logging.WARNING)
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


@contextlib.contextmanager
def _captured_warnings():
  # caplog is function-scoped, which hypothesis refuses for its many examples per test.
  handler = _Warnings()
  root = logging.getLogger()
  root.addHandler(handler)
  try:
    yield handler.messages
  finally:
    root.removeHandler(handler)


def _read(reader, path):
  """(records, skips, DataError or None); any other exception propagates and fails the test."""
  skips = skips_lib.SkipCounter()
  got = []
  try:
    for record in reader(path, skips):
      got.append(record)
  except DataError as e:
    return got, skips, e
  return got, skips, None


def _assert_skips_logged(kind, path, indices, skips, messages):
  assert skips.total == len(indices), (sorted(indices), dict(skips.counts))
  for i in indices:
    assert any(m.startswith(f"{path}: record {i}: skipped, ") for m in messages), (i, messages)
  for reason, n in skips.counts.items():
    OUTCOMES[f"{kind}: skipped, {reason}"] += n


# ------------------------------------------------------------------------------- .bin files


class _BinCorpus:
  """A clean .bin file's bytes, its payloads, records and the byte spans of their texts."""

  def __init__(self, blob):
    self.blob = blob
    frames, broken = _walk(blob)
    assert not broken
    self.payloads = [blob[s:e] for s, e in frames]
    self.records = []
    self.spans = []
    for payload in self.payloads:
      feature = tf.train.Example.FromString(payload).features.feature
      article = feature["article"].bytes_list.value[0]
      abstract = feature["abstract"].bytes_list.value[0]
      spans = []
      for text in (article, abstract):
        assert payload.count(text) == 1  # so that find() locates the value itself
        spans.append((payload.find(text), payload.find(text) + len(text)))
      self.spans.append(spans)
      self.records.append((article.decode("utf-8"),
                           base.abstract_to_sentences(abstract.decode("utf-8"))))


def _walk(blob):
  """(start, end) of each payload and whether framing breaks, by the rules of docs/bad-input.md."""
  frames, pos = [], 0
  while pos < len(blob):
    if len(blob) - pos < 8:
      return frames, True
    (length,) = struct.unpack_from("<q", blob, pos)
    if length < 0 or length > len(blob) - pos - 8:
      return frames, True
    frames.append((pos + 8, pos + 8 + length))
    pos += 8 + length
  return frames, False


@pytest.fixture(scope="module")
def made_corpus(tmp_path_factory):
  root = tmp_path_factory.mktemp("bin_corpora")
  written = [
      base.Record("the mayor of grasvismouth resigned on monday .",
                     ["the mayor resigned .", "the council met ."], "made", 0),
      base.Record("Thảm đỏ của Hoa hậu Việt Nam — “đẹp” 😀 ở Hà Nội", ["tóm tắt ngắn ."],
                     "made", 1),
      base.Record("a third article , short", ["one sentence ."], "made", 2),
  ]
  bin_format.BIN.write(str(root / "made.bin"), written)
  return _BinCorpus((root / "made.bin").read_bytes())


@pytest.fixture(scope="module")
def vietnews_corpus(vietnews):
  """The first records of a real chunk, read as bytes (never copied into the repository)."""
  with open(vietnews / "chunked" / "val_000.bin", "rb") as f:
    head = f.read(1 << 16)
  frames, _ = _walk(head)
  return _BinCorpus(head[:frames[2][1]])


@st.composite
def _bin_mutation(draw, blob):
  """A corrupted copy of `blob`: bit flips, overwrites, a bad length, truncation, insertion,
  deletion, appended garbage, or a file of garbage."""
  kind = draw(st.sampled_from(["flip", "overwrite", "length", "truncate", "insert", "delete",
                               "append", "garbage"]))
  n = len(blob)
  pos = draw(st.integers(0, n - 1))
  junk = draw(st.binary(min_size=1, max_size=16))
  out = bytearray(blob)
  if kind == "flip":
    for p, bit in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 7)),
                                min_size=1, max_size=4)):
      out[p] ^= 1 << bit
  elif kind == "overwrite":
    out[pos:pos + len(junk)] = junk[:n - pos]
  elif kind == "length":
    frames, _ = _walk(blob)
    start = frames[draw(st.integers(0, len(frames) - 1))][0] - 8
    length = draw(st.one_of(st.sampled_from([-1, 0, 1, n, 2**62, -2**63]),
                            st.integers(-2**63, 2**63 - 1)))
    out[start:start + 8] = struct.pack("<q", length)
  elif kind == "truncate":
    del out[pos:]
  elif kind == "insert":
    out[pos:pos] = junk
  elif kind == "delete":
    del out[pos:pos + len(junk)]
  elif kind == "append":
    out += junk
  else:
    out = bytearray(draw(st.binary(max_size=300)))
  return kind, bytes(out)


def _explain(record, payload, corpus):
  """Checks a record that came through a corrupted file: either its payload is an original one
  and the record is exactly that original, or only the bytes of an original's texts changed
  (the .bin format has no checksum) and the record holds exactly those bytes. Returns which.

  Payloads are matched by content, not index: junk that happens to form a valid frame (eight
  zero bytes are an empty record) shifts the indices of the records after it.
  """
  if payload in corpus.payloads:
    assert (record.article, record.abstract_sentences) == corpus.records[
        corpus.payloads.index(payload)]
    return "exact"
  for original, ((a0, a1), (b0, b1)) in zip(corpus.payloads, corpus.spans):
    if len(original) != len(payload):
      continue
    changed = [k for k in range(len(payload)) if payload[k] != original[k]]
    if all(a0 <= k < a1 or b0 <= k < b1 for k in changed):
      expected = (payload[a0:a1].decode("utf-8"),
                  base.abstract_to_sentences(payload[b0:b1].decode("utf-8")))
      assert (record.article, record.abstract_sentences) == expected
      return "text bytes changed"
  pytest.fail(f"record {record.index} came through from a payload whose structure (not only "
              f"its texts) was corrupted: {record}")


def _check_bin(path, blob, corpus, got, skips, error, messages):
  frames, broken = _walk(blob)
  assert (error is not None) == broken, (error, broken)
  if error is not None:
    assert path in str(error)
    OUTCOMES["bin: DataError"] += 1
  indices = [r.index for r in got]
  assert indices == sorted(set(indices)) and all(i < len(frames) for i in indices)
  for record in got:
    assert record.source == path
    start, end = frames[record.index]
    OUTCOMES[f"bin: records through, {_explain(record, blob[start:end], corpus)}"] += 1
  _assert_skips_logged("bin", path, set(range(len(frames))) - set(indices), skips, messages)


@pytest.mark.parametrize("name", ["made", "vietnews"])
def test_corrupted_bin_files(request, tmp_path_factory, name):
  corpus = request.getfixturevalue(f"{name}_corpus")
  path = str(tmp_path_factory.mktemp(f"fuzz_{name}") / "corrupt.bin")

  @_settings(150)
  @given(mutation=_bin_mutation(corpus.blob))
  def check(mutation):
    kind, blob = mutation
    with open(path, "wb") as f:
      f.write(blob)
    OUTCOMES[f"bin: inputs ({kind})"] += 1
    with _captured_warnings() as messages:
      got, skips, error = _within(TIMEOUT_SECS, _read, bin_format.BIN.read, path)
      framing_error = None
      try:
        _within(TIMEOUT_SECS, bin_format.BIN.count, path)
      except DataError as e:
        framing_error = e
    # The start-up check and the reader agree on broken framing.
    assert (framing_error is None) == (error is None)
    _check_bin(path, blob, corpus, got, skips, error, messages)

  check()  # pylint: disable=no-value-for-parameter


def test_every_single_bit_flip_of_a_record(made_corpus, tmp_path):
  """Exhaustive over one small record: each bit of each byte, not a sample."""
  corpus = made_corpus
  blob = corpus.blob[:8 + len(corpus.payloads[0])]
  single = _BinCorpus(blob)
  path = str(tmp_path / "flip.bin")
  for pos in range(len(blob)):
    for bit in range(8):
      flipped = bytearray(blob)
      flipped[pos] ^= 1 << bit
      with open(path, "wb") as f:
        f.write(flipped)
      OUTCOMES["bin: inputs (single bit flip, exhaustive)"] += 1
      with _captured_warnings() as messages:
        got, skips, error = _read(bin_format.BIN.read, path)
      _check_bin(path, bytes(flipped), single, got, skips, error, messages)


# ------------------------------------------------------------------------------- JSONL files

_CHARS = st.characters(blacklist_categories=("Cs",))
_TEXT = st.text(_CHARS, min_size=1, max_size=25).filter(
    lambda s: s.strip() and vocab_lib.SENTENCE_START not in s and vocab_lib.SENTENCE_END not in s)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(_CHARS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(_CHARS), inner,
                                                                max_size=3),
    max_leaves=8)
_NOT_STRING = _JSON.filter(lambda v: not isinstance(v, str))
_NOT_OBJECT = _JSON.filter(lambda v: not isinstance(v, dict))


def _dumps(draw, obj):
  return json.dumps(obj, ensure_ascii=draw(st.booleans())).encode("utf-8")


@st.composite
def _record_line(draw):
  """A usable line: (article, abstract sentences, bytes)."""
  article = draw(_TEXT)
  if draw(st.booleans()):
    sentences = draw(st.lists(_TEXT, max_size=3))
    obj = {"article": article, "abstract_sentences": sentences}
  else:
    sentences = [draw(_TEXT)]
    obj = {"abstract": sentences[0], "article": article}
  if draw(st.booleans()):
    obj["extra"] = draw(_JSON)
  return article, sentences, _dumps(draw, obj)


@st.composite
def _jsonl_line(draw):
  """(expected outcome, bytes of one line without its newline); outcome is ("record", article,
  sentences), ("skip",), ("blank",) or ("bom",) (a record only as the file's first line)."""
  kind = draw(st.sampled_from([
      "record", "record", "record", "wrong type", "missing field", "empty article",
      "not an object", "cut short", "invalid UTF-8", "deep nesting", "huge integer",
      "lone surrogate", "blank", "bom", "duplicate key", "garbage"]))
  if kind == "record":
    article, sentences, line = draw(_record_line())
    return ("record", article, sentences), line
  if kind == "duplicate key":
    # The last value of a repeated key counts, as in json.loads.
    article, abstract = draw(_TEXT), draw(_TEXT)
    line = (b'{"article": ' + _dumps(draw, draw(_JSON)) + b', "article": '
            + _dumps(draw, article) + b', "abstract": ' + _dumps(draw, abstract) + b"}")
    return ("record", article, [abstract]), line
  if kind == "bom":
    article, sentences, line = draw(_record_line())
    return ("bom", article, sentences), b"\xef\xbb\xbf" + line
  if kind == "blank":
    return ("blank",), draw(st.sampled_from([b"", b" ", b"\t", b"\r", b"  \t \r"]))
  if kind == "wrong type":
    field = draw(st.sampled_from(["article", "abstract", "abstract_sentences"]))
    bad = draw(_NOT_STRING)
    if field == "abstract_sentences":
      bad = draw(st.one_of(_NOT_OBJECT.filter(lambda v: not isinstance(v, list)),
                           st.lists(_NOT_STRING, min_size=1, max_size=3)))
    obj = {"article": draw(_TEXT), "abstract": draw(_TEXT)}
    obj[field] = bad
    return ("skip",), _dumps(draw, obj)
  if kind == "missing field":
    obj = draw(st.sampled_from([{"abstract": "x"}, {"article": "x"}, {}, {"Article": "x"}]))
    return ("skip",), _dumps(draw, obj)
  if kind == "empty article":
    obj = {"article": draw(st.sampled_from(["", " ", "\n\t", "\u3000", "\xa0"])), "abstract": "x"}
    return ("skip",), _dumps(draw, obj)
  if kind == "not an object":
    return ("skip",), _dumps(draw, draw(_NOT_OBJECT))
  if kind == "cut short":
    _, _, line = draw(_record_line())
    return ("skip",), line[:draw(st.integers(1, len(line) - 1))]
  if kind == "invalid UTF-8":
    _, _, line = draw(_record_line())
    pos = draw(st.integers(0, len(line)))
    line = line[:pos] + bytes([draw(st.sampled_from([0x80, 0xbf, 0xc0, 0xf8, 0xff]))]) + line[pos:]
    return ("skip",), line
  if kind == "deep nesting":
    depth = draw(st.integers(1, 200_000))
    nested = b"[" * depth + b"]" * depth
    return ("skip",), draw(st.sampled_from([nested, b'{"article": ' + nested + b"}"]))
  if kind == "huge integer":
    # Over Python's 4300-digit limit for int(): json.loads cannot take the line at all.
    return ("skip",), b'{"article": "a", "abstract": "b", "n": ' + b"7" * 5000 + b"}"
  if kind == "lone surrogate":
    field = draw(st.sampled_from([b'"article": "a \\ud83d b", "abstract": "x"',
                                  b'"article": "a", "abstract": "\\udc00"',
                                  b'"article": "a", "abstract_sentences": ["ok", "\\ud800"]']))
    return ("skip",), b"{" + field + b"}"
  garbage = draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b"")
  assume(garbage.strip())
  return ("skip",), garbage


def _jsonl_file(lines, crlf):
  """The file's bytes and the outcome each line index must have."""
  ending = b"\r\n" if crlf else b"\n"
  outcomes = []
  for index, (outcome, _) in enumerate(lines):
    if outcome[0] == "bom":
      # A byte-order mark is accepted at the start of the file only.
      outcome = ("record",) + outcome[1:] if index == 0 else ("skip",)
    outcomes.append(outcome)
  return ending.join(line for _, line in lines) + ending, outcomes


def _check_jsonl(path, outcomes, got, skips, messages):
  expected = [(i, o[1], o[2]) for i, o in enumerate(outcomes) if o[0] == "record"]
  assert [(r.index, r.article, r.abstract_sentences) for r in got] == expected
  assert all(r.source == path for r in got)
  OUTCOMES["jsonl: records through, exact"] += len(got)
  _assert_skips_logged("jsonl", path, {i for i, o in enumerate(outcomes) if o[0] == "skip"},
                       skips, messages)


_JSONL_FILES = st.tuples(st.lists(_jsonl_line(), min_size=1, max_size=12), st.booleans())


def test_hostile_jsonl_lines(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("fuzz_jsonl") / "hostile.jsonl")

  @_settings(150)
  @given(spec=_JSONL_FILES)
  def check(spec):
    blob, outcomes = _jsonl_file(*spec)
    with open(path, "wb") as f:
      f.write(blob)
    OUTCOMES["jsonl: inputs"] += 1
    with _captured_warnings() as messages:
      got, skips, error = _within(TIMEOUT_SECS, _read, jsonl_format.JSONL.read, path)
    assert error is None  # content problems are skips; only a file-level problem is an error
    _check_jsonl(path, outcomes, got, skips, messages)

  check()  # pylint: disable=no-value-for-parameter


def test_jsonl_lines_of_several_megabytes(tmp_path):
  size = 3 << 20
  article = " ".join(["word"] * (size // 5))
  lines = [
      json.dumps({"article": article, "abstract": "short ."}).encode("utf-8"),
      b'{"article": "' + b"\xff" * size + b'", "abstract": "x"}',
      b"[" * size,
      b'{"article": "' + b"a" * size,  # an unterminated string to the end of the line
      json.dumps({"article": "after the big ones", "abstract": "y"}).encode("utf-8"),
  ]
  path = str(tmp_path / "huge.jsonl")
  with open(path, "wb") as f:
    f.write(b"\n".join(lines))
  with _captured_warnings() as messages:
    got, skips, error = _within(TIMEOUT_SECS, _read, jsonl_format.JSONL.read, path)
  assert error is None
  outcomes = [("record", article, ["short ."]), ("skip",), ("skip",), ("skip",),
              ("record", "after the big ones", ["y"])]
  _check_jsonl(path, outcomes, got, skips, messages)
  assert dict(skips.counts) == {"invalid UTF-8": 1, "invalid JSON": 2}


# ------------------------------------------------------------------------------- vocab files

_WORD = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\x0b\x0c"),
                min_size=1, max_size=8).filter(lambda w: w not in vocab_lib.FORBIDDEN)


@st.composite
def _vocab_file(draw):
  """(lines as bytes, the words read, the 1-based line of the first error or None, the number
  of lines skipped with a warning, max_size).

  The expectation follows docs/bad-input.md: specials, sentence tags, duplicates and invalid
  UTF-8 are errors naming file and line; lines that are not `word count` are skipped with a warning;
  reading stops once max_size entries (with the 4 specials) are in. A file whose non-blank lines
  read are mostly not `word count`, or hold none, is not a vocab: an error naming its first such
  line (0 when it has none: a file of blank lines).
  """
  max_size = draw(st.sampled_from([0, 0, 5, 8]))
  lines, words, error_line, skipped = [], [], None, 0
  num_good, num_bad, first_bad = 0, 0, None
  for _ in range(draw(st.integers(0, 14))):
    if max_size and len(words) + 4 >= max_size:
      # Lines past the limit are never read, so even forbidden ones do no harm.
      lines.append(draw(st.sampled_from([b"[UNK] 1\n", b"\xff\n", b"a b c\n"])))
      break
    kind = draw(st.sampled_from(["word", "word", "word", "special", "duplicate", "bad utf-8",
                                 "no count", "extra field", "blank"]))
    count = str(draw(st.integers(0, 10**6))).encode()
    if kind == "duplicate" and not words:
      kind = "word"
    if kind == "word":
      word = draw(_WORD)
      if word in words:
        kind = "duplicate"
      line = word.encode("utf-8") + draw(st.sampled_from([b" ", b"\t", b"  "])) + count
    elif kind == "duplicate":
      word = draw(st.sampled_from(words))
      line = word.encode("utf-8") + b" " + count
    elif kind == "special":
      line = draw(st.sampled_from(sorted(vocab_lib.FORBIDDEN))).encode("utf-8") + b" " + count
    elif kind == "bad utf-8":
      # A stray byte, a cut-off sequence, an encoded surrogate.
      bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]))
      line = draw(_WORD).encode("utf-8") + bad + b" " + count
    elif kind == "no count":
      line = draw(_WORD).encode("utf-8")
    elif kind == "extra field":
      line = draw(_WORD).encode("utf-8") + b" " + count + b" " + draw(_WORD).encode("utf-8")
    else:
      line = draw(st.sampled_from([b"", b" ", b"\t\r"]))
    lines.append(line + draw(st.sampled_from([b"\n", b"\r\n"])))
    if kind in ("no count", "extra field"):
      num_bad += 1
      first_bad = first_bad or len(lines)
    elif kind != "blank":
      num_good += 1
    if kind == "word":
      words.append(word)
    elif kind in ("no count", "extra field", "blank"):
      skipped += 1
    else:
      error_line = len(lines) if num_good >= num_bad else first_bad
      break
  if error_line is None and (num_bad > num_good or not num_good):
    error_line = first_bad or 0
  return lines, words, error_line, skipped, max_size


def test_vocab_files_with_bad_lines(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("fuzz_vocab") / "vocab")

  @_settings(150)
  @given(spec=_vocab_file(), drop_last_newline=st.booleans())
  def check(spec, drop_last_newline):
    lines, words, error_line, skipped, max_size = spec
    blob = b"".join(lines)
    # Without its newline a last line of nothing else would vanish rather than be skipped.
    if drop_last_newline and lines and lines[-1] != b"\n":
      blob = blob[:-1]
    with open(path, "wb") as f:
      f.write(blob)
    OUTCOMES["vocab: inputs"] += 1
    with _captured_warnings() as messages:
      try:
        vocab = _within(TIMEOUT_SECS, vocab_lib.Vocab.from_file, path, max_size)
      except DataError as e:
        assert error_line is not None, e
        assert (f"{path}:{error_line}:" if error_line else f"--vocab_path={path}: not a vocab "
                "file") in str(e)
        OUTCOMES["vocab: DataError"] += 1
        return
    assert error_line is None, f"no error for line {error_line}"
    assert vocab.words == list(vocab_lib.SPECIALS) + words
    assert sum("skipping vocab line" in m and path in m for m in messages) == skipped
    OUTCOMES["vocab: read"] += 1
    OUTCOMES["vocab: lines skipped with a warning"] += skipped

  check()  # pylint: disable=no-value-for-parameter


# ------------------------------------------------------------------- through the tf.data pipeline


@pytest.fixture(scope="module")
def demo_vocab(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab"
  path.write_text("".join(f"w{i} {100 - i}\n" for i in range(60)), encoding="utf-8")
  return vocab_lib.Vocab.from_file(str(path), 0)


def _pipeline(path, vocab):
  """All (article, abstract) strings of a single-pass dataset over `path`, and its source."""
  hps = config.HParams(single_pass=True, batch_size=3, max_enc_steps=50, max_dec_steps=10)
  source = data.RecordSource(data_files.DataFiles.find(path), single_pass=True)
  pairs = []
  for batch in data.make_dataset(source, vocab.lookup_table(), len(vocab), hps):
    pairs += [(a.decode("utf-8"), b.decode("utf-8"))
              for a, b in zip(batch.article.numpy(), batch.abstract.numpy())]
  return pairs, source


def test_hostile_jsonl_through_the_pipeline(tmp_path_factory, demo_vocab):
  """Lone surrogates, deep nesting and the rest end as counted skips, not as TF errors."""
  path = str(tmp_path_factory.mktemp("pipeline_jsonl") / "hostile.jsonl")

  @_settings(5)
  @given(spec=_JSONL_FILES)
  def check(spec):
    blob, outcomes = _jsonl_file(*spec)
    with open(path, "wb") as f:
      f.write(blob)
    OUTCOMES["pipeline: JSONL inputs"] += 1
    with _captured_warnings():
      pairs, source = _within(TIMEOUT_SECS * 4, _pipeline, path, demo_vocab)
    source.raise_if_failed()
    assert pairs == [(o[1], "\n".join(o[2])) for o in outcomes if o[0] == "record"]
    assert source.skips.total == sum(o[0] == "skip" for o in outcomes)
    OUTCOMES["pipeline: records through"] += len(pairs)

  check()  # pylint: disable=no-value-for-parameter


def test_corrupted_bin_through_the_pipeline(made_corpus, tmp_path_factory, demo_vocab):
  """Broken framing is a DataError at start-up; otherwise the pipeline delivers exactly the
  records the reader accepts, with the same skips."""
  corpus = made_corpus
  path = str(tmp_path_factory.mktemp("pipeline_bin") / "corrupt.bin")

  @_settings(6)
  @given(mutation=_bin_mutation(corpus.blob))
  def check(mutation):
    kind, blob = mutation
    with open(path, "wb") as f:
      f.write(blob)
    OUTCOMES[f"pipeline: .bin inputs ({kind})"] += 1
    with _captured_warnings():
      try:
        pairs, source = _within(TIMEOUT_SECS * 4, _pipeline, path, demo_vocab)
      except DataError as e:
        assert path in str(e) and _walk(blob)[1]
        OUTCOMES["pipeline: DataError"] += 1
        return
      source.raise_if_failed()
      got, skips, error = _read(bin_format.BIN.read, path)
    assert error is None
    assert pairs == [(r.article, "\n".join(r.abstract_sentences)) for r in got]
    assert source.skips.counts == skips.counts
    OUTCOMES["pipeline: records through"] += len(pairs)

  check()  # pylint: disable=no-value-for-parameter


def test_file_cut_short_after_start_up_is_a_data_error_not_a_tf_error(vietnews_corpus, tmp_path,
                                                                      demo_vocab):
  """Framing is checked at start-up; a file that breaks afterwards (another process truncating
  it) must still end in a DataError naming it, through source.raise_if_failed()."""
  corpus = vietnews_corpus
  path = tmp_path / "shrinks.bin"
  path.write_bytes(corpus.blob)
  hps = config.HParams(single_pass=True, batch_size=2, max_enc_steps=50, max_dec_steps=10)
  source = data.RecordSource(data_files.DataFiles.find(str(path)), single_pass=True)
  assert source.num_records == 3
  dataset = data.make_dataset(source, demo_vocab.lookup_table(), len(demo_vocab), hps)
  cut = len(corpus.blob) - len(corpus.payloads[-1]) // 2
  path.write_bytes(corpus.blob[:cut])
  batches = _within(TIMEOUT_SECS * 4, list, dataset)
  assert sum(int(b.enc_len.shape[0]) for b in batches) == 2
  with pytest.raises(DataError, match=f"{path}: record 2 at byte"):
    source.raise_if_failed()


def test_bin_file_replaced_by_garbage_after_start_up(tmp_path, demo_vocab, made_corpus):
  path = tmp_path / "garbage.bin"
  path.write_bytes(made_corpus.blob)
  hps = config.HParams(single_pass=True, batch_size=2, max_enc_steps=50, max_dec_steps=10)
  source = data.RecordSource(data_files.DataFiles.find(str(path)), single_pass=True)
  dataset = data.make_dataset(source, demo_vocab.lookup_table(), len(demo_vocab), hps)
  path.write_bytes(b"\x07" * 37)
  assert _within(TIMEOUT_SECS * 4, list, dataset) == []
  with pytest.raises(DataError, match=f"{path}: record 0 at byte 0"):
    source.raise_if_failed()
