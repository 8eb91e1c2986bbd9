"""Tests of pointer_gen.formats, the data formats and the data tools (make_vocab, convert_data).

Files in the .bin and TFRecord formats are built and walked here with struct, a CRC-32C of the
test's own and tf.train.Example directly, so the readers and writers are checked against an
independent implementation of the formats.
"""

import json
import os
import re
import struct

import pytest
import tensorflow as tf

from helpers import finish_tool_runs, flag_help, start_tool_runs
from pointer_gen.base import settings
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import bin_format
from pointer_gen.formats import data_files
from pointer_gen.formats import jsonl_format
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.formats import tfrecord_format


# ---------------------------------------------------------------- independent .bin helpers


def _example(**features):
  """A serialized tf.train.Example; str values become bytes_list, ints int64_list."""
  feature = {}
  for name, value in features.items():
    if isinstance(value, int):
      feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
    else:
      data = value.encode("utf-8") if isinstance(value, str) else value
      feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _frame(payload):
  return struct.pack("<q", len(payload)) + payload


def _write_frames(path, payloads, tail=b""):
  with open(path, "wb") as f:
    f.write(b"".join(_frame(p) for p in payloads) + tail)
  return str(path)


def _walk(path):
  """Payloads of a .bin file, read with nothing but struct."""
  payloads = []
  with open(path, "rb") as f:
    data = f.read()
  pos = 0
  while pos < len(data):
    (n,) = struct.unpack_from("<q", data, pos)
    payloads.append(data[pos + 8:pos + 8 + n])
    pos += 8 + n
  assert pos == len(data)
  return payloads


def _feature(payload, name):
  return tf.train.Example.FromString(payload).features.feature[name].bytes_list.value[0]


def _good(article="a b c", abstract="<s> a b . </s>"):
  return _example(article=article, abstract=abstract)


def _record(article, sentences, index=0):
  return base.Record(article, sentences, "hand-written", index)


# ---------------------------------------------------------------- real data


def test_read_bin_real_vietnews_matches_struct_walk(vietnews):
  path = str(vietnews / "chunked" / "val_000.bin")
  payloads = _walk(path)
  skips = skips_lib.SkipCounter()
  recs = list(bin_format.BIN.read(path, skips))
  assert len(recs) == len(payloads) == 1000
  assert skips.total == 0
  assert [r.index for r in recs] == list(range(len(payloads)))
  assert all(r.source == path for r in recs)
  first_article = _feature(payloads[0], "article").decode("utf-8")
  assert recs[0].article == first_article
  first_abstract = _feature(payloads[0], "abstract").decode("utf-8")
  assert recs[0].abstract_sentences == [
      s.strip() for s in re.findall(r"<s>(.*?)</s>", first_abstract)]
  last_article = _feature(payloads[-1], "article").decode("utf-8")
  assert recs[-1].article == last_article


def test_check_bin_framing_real_files(vietnews):
  paths = data_files.expand_glob(str(vietnews / "chunked" / "val_*.bin"))
  assert [os.path.basename(p) for p in paths] == ["val_000.bin", "val_1000.bin", "val_2000.bin"]
  counts = [bin_format.BIN.count(p) for p in paths]
  assert counts == [len(_walk(p)) for p in paths]
  assert sum(counts) == 2322  # the vietnews README's count of val examples


def test_read_jsonl_real_bbc_matches_json_loads(bbc):
  path = str(bbc / "val.jsonl")
  with open(path, encoding="utf-8") as f:
    first = json.loads(f.readline())
  skips = skips_lib.SkipCounter()
  recs = list(jsonl_format.JSONL.read(path, skips))
  assert len(recs) == 200
  assert skips.total == 0
  assert recs[0] == base.Record(first["article"], first["abstract_sentences"], path, 0)
  assert recs[-1].index == 199
  assert "\n" in recs[0].article  # paragraphs survive untouched


def test_read_records_mixes_formats_in_given_order(vietnews, bbc):
  paths = [str(bbc / "val.jsonl"), str(vietnews / "chunked" / "val_2000.bin")]
  skips = skips_lib.SkipCounter()
  sources = [r.source for r in data_formats.read_records(paths, "auto", skips)]
  n_bin = len(_walk(paths[1]))
  assert sources == [paths[0]] * 200 + [paths[1]] * n_bin


# ---------------------------------------------------------------- writing and round trips


HAND_RECORDS = [
    _record("xin chào thế giới\nsecond paragraph", ["câu một .", "câu hai ."], 0),
    _record("an article with no abstract", [], 1),
    _record("  leading and trailing space kept  ", ["only sentence"], 2),
    _record("café \u2028 line separator", ["é"], 3),
]


def test_write_bin_bytes_and_read_back(tmp_path):
  path = str(tmp_path / "hand.bin")
  assert bin_format.BIN.write(path, iter(HAND_RECORDS)) == 4
  assert os.listdir(tmp_path) == ["hand.bin"]  # no .tmp left behind
  payloads = _walk(path)
  assert len(payloads) == 4
  assert _feature(payloads[0], "abstract") == "<s> câu một . </s> <s> câu hai . </s>".encode()
  assert _feature(payloads[1], "abstract") == b""
  assert _feature(payloads[0], "article") == HAND_RECORDS[0].article.encode("utf-8")
  skips = skips_lib.SkipCounter()
  back = list(bin_format.BIN.read(path, skips))
  assert skips.total == 0
  assert [(r.article, r.abstract_sentences, r.index) for r in back] == [
      (r.article, r.abstract_sentences, r.index) for r in HAND_RECORDS]
  assert bin_format.BIN.count(path) == 4


def test_write_jsonl_bytes_and_read_back(tmp_path):
  path = str(tmp_path / "hand.jsonl")
  assert jsonl_format.JSONL.write(path, HAND_RECORDS) == 4
  with open(path, "rb") as f:
    lines = f.read().split(b"\n")
  assert lines[-1] == b"" and len(lines) == 5  # one line per record, U+2028 stays inside
  assert "câu một .".encode("utf-8") in lines[0]  # ensure_ascii=False
  assert json.loads(lines[0]) == {
      "article": HAND_RECORDS[0].article,
      "abstract": "câu một . câu hai .",
      "abstract_sentences": ["câu một .", "câu hai ."],
  }
  back = list(jsonl_format.JSONL.read(path, skips_lib.SkipCounter()))
  assert [(r.article, r.abstract_sentences) for r in back] == [
      (r.article, r.abstract_sentences) for r in HAND_RECORDS]


def test_bbc_jsonl_to_bin_to_jsonl_round_trip(bbc, tmp_path):
  src = str(bbc / "val.jsonl")
  original = list(jsonl_format.JSONL.read(src, skips_lib.SkipCounter()))
  paths = bin_format.BIN.write_chunks(original, str(tmp_path / "chunks"), "val", chunk_size=64)
  assert [os.path.basename(p) for p in paths] == [f"val_{i:03d}.bin" for i in range(4)]
  assert [len(_walk(p)) for p in paths] == [64, 64, 64, 8]
  skips = skips_lib.SkipCounter()
  from_bin = list(data_formats.read_records(paths, "auto", skips))
  assert skips.total == 0
  out = str(tmp_path / "back.jsonl")
  jsonl_format.JSONL.write(out, from_bin)
  with open(src, encoding="utf-8") as f_src, open(out, encoding="utf-8") as f_out:
    for line_src, line_out in zip(f_src, f_out, strict=True):
      want, got = json.loads(line_src), json.loads(line_out)
      assert got == {k: want[k] for k in ("article", "abstract", "abstract_sentences")}


def test_write_chunked_sizes_and_empty(tmp_path):
  recs = [_record(f"article {i}", [f"s {i}"], i) for i in range(5)]
  paths = bin_format.BIN.write_chunks(iter(recs), str(tmp_path / "out"), "test", chunk_size=2)
  assert [os.path.basename(p) for p in paths] == ["test_000.bin", "test_001.bin", "test_002.bin"]
  assert [len(_walk(p)) for p in paths] == [2, 2, 1]
  assert bin_format.BIN.write_chunks([], str(tmp_path / "none"), "test") == []


def test_write_bin_refuses_sentence_with_tags_and_leaves_no_file(tmp_path):
  path = str(tmp_path / "bad.bin")
  recs = [_record("ok", ["fine"], 0), base.Record("ok", ["a <s> b"], "src.jsonl", 7)]
  with pytest.raises(DataError, match=r"src\.jsonl: record 7: .*'a <s> b'"):
    bin_format.BIN.write(path, recs)
  assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- .bin framing errors


GOOD = _good()
GOOD_END = 8 + len(GOOD)  # byte offset of record 1 in the broken files below


@pytest.mark.parametrize("tail, message", [
    (struct.pack("<q", 100) + b"x" * 10, r"record length 100 but only 10 bytes left"),
    (b"\x05\x00\x00", r"truncated length prefix \(3 of 8 bytes"),
    (struct.pack("<q", 1 << 40), rf"record length {1 << 40} but only 0 bytes left"),
    (struct.pack("<q", -5) + GOOD, r"negative record length -5"),
], ids=["truncated_record", "truncated_prefix", "length_beyond_file", "negative_length"])
def test_broken_framing_raises_with_file_record_and_offset(tmp_path, tail, message):
  path = _write_frames(tmp_path / "broken.bin", [GOOD], tail)
  where = rf"broken\.bin: record 1 at byte {GOOD_END}: "
  with pytest.raises(DataError, match=where + message):
    bin_format.BIN.count(path)
  got = []
  with pytest.raises(DataError, match=where + message):
    for record in bin_format.BIN.read(path, skips_lib.SkipCounter()):
      got.append(record)
  assert [r.article for r in got] == ["a b c"]  # what came before the break was fine


def test_length_beyond_file_in_first_record(tmp_path):
  path = _write_frames(tmp_path / "first.bin", [], struct.pack("<q", 50) + b"short")
  with pytest.raises(DataError, match=r"first\.bin: record 0 at byte 0: record length 50 "
                                      r"but only 5 bytes left"):
    bin_format.BIN.count(path)


def test_empty_bin_file_has_no_records(tmp_path):
  path = _write_frames(tmp_path / "empty.bin", [])
  assert bin_format.BIN.count(path) == 0
  assert list(bin_format.BIN.read(path, skips_lib.SkipCounter())) == []


# ---------------------------------------------------------------- .bin content skips


def test_bad_bin_records_are_skipped_and_counted(tmp_path, caplog):
  payloads = [
      _good("first good", "<s> one </s>"),
      b"\xff\xff\xff not a protobuf",
      _example(abstract="<s> x </s>"),
      _example(article="no abstract here"),
      _example(article=b"bad \xc3\x28 utf8", abstract="<s> x </s>"),
      _good("  \n\t ", "<s> x </s>"),
      _example(article=7, abstract="<s> x </s>"),
      _example(article="ok", abstract=b"\xe2\x82"),
      _good("last good", "<s> two </s> <s> three </s>"),
  ]
  path = _write_frames(tmp_path / "mixed.bin", payloads)
  skips = skips_lib.SkipCounter()
  with caplog.at_level("WARNING"):
    recs = list(bin_format.BIN.read(path, skips))
  assert [(r.index, r.article, r.abstract_sentences) for r in recs] == [
      (0, "first good", ["one"]), (8, "last good", ["two", "three"])]
  assert dict(skips.counts) == {
      "not a tf.train.Example": 1,
      "missing 'article' feature": 1,
      "missing 'abstract' feature": 1,
      "invalid UTF-8": 2,
      "empty article": 1,
      "'article' feature is not a non-empty bytes_list": 1,
  }
  assert skips.total == 7
  messages = [r.getMessage() for r in caplog.records]
  assert any(re.search(r"mixed\.bin: record 1: skipped, not a tf\.train\.Example", m)
             for m in messages)
  assert any(re.search(r"mixed\.bin: record 4: skipped, invalid UTF-8 \('article'", m)
             for m in messages)
  assert any(re.search(r"mixed\.bin: record 7: skipped, invalid UTF-8 \('abstract'", m)
             for m in messages)
  assert "skipped 7 records" in skips.summary()
  assert "invalid UTF-8: 2" in skips.summary()


def test_skip_counter_limits_log_lines(caplog):
  skips = skips_lib.SkipCounter()
  with caplog.at_level("WARNING"):
    for i in range(skips_lib.MAX_LOGGED_PER_REASON + 5):
      skips.skip("f.bin", i, "empty article")
    skips.skip("f.bin", 99, "invalid JSON", "line 100")
  assert skips.counts == {"empty article": skips_lib.MAX_LOGGED_PER_REASON + 5, "invalid JSON": 1}
  assert skips.total == skips_lib.MAX_LOGGED_PER_REASON + 6
  per_record = [r.getMessage() for r in caplog.records if ": record " in r.getMessage()]
  assert len(per_record) == skips_lib.MAX_LOGGED_PER_REASON + 1
  assert per_record[-1] == "f.bin: record 99: skipped, invalid JSON (line 100)"
  assert sum("only counted" in r.getMessage() for r in caplog.records) == 1
  assert f"only the first {skips_lib.MAX_LOGGED_PER_REASON}" in skips.summary()
  assert skips_lib.SkipCounter().summary() == "skipped 0 records"


# ---------------------------------------------------------------- TFRecord


def _crc32c(data):
  """CRC-32C (Castagnoli), bit by bit."""
  crc = 0xFFFFFFFF
  for byte in data:
    crc ^= byte
    for _ in range(8):
      crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
  return crc ^ 0xFFFFFFFF


def _masked_crc(data):
  """TFRecord's stored checksum: the CRC-32C rotated right by 15 bits plus a constant."""
  crc = _crc32c(data)
  return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _tfrecord_frame(payload):
  length = struct.pack("<Q", len(payload))
  return (length + struct.pack("<I", _masked_crc(length)) + payload
          + struct.pack("<I", _masked_crc(payload)))


def _walk_tfrecord(path):
  """Payloads of a TFRecord file, read with struct, every checksum checked."""
  with open(path, "rb") as f:
    data = f.read()
  payloads, pos = [], 0
  while pos < len(data):
    length = data[pos:pos + 8]
    (n,) = struct.unpack("<Q", length)
    assert struct.unpack_from("<I", data, pos + 8)[0] == _masked_crc(length)
    payload = data[pos + 12:pos + 12 + n]
    assert struct.unpack_from("<I", data, pos + 12 + n)[0] == _masked_crc(payload)
    payloads.append(payload)
    pos += 16 + n
  assert pos == len(data)
  return payloads


def test_the_registry_tells_every_format_apart():
  extensions = [e for f in data_formats.FORMATS for e in f.extensions]
  assert len(set(extensions)) == len(extensions)
  assert all(e.startswith(".") and e == e.lower() for e in extensions)
  assert len(set(data_formats.NAMES)) == len(data_formats.FORMATS)
  assert [f.name for f in data_formats.FORMATS if f.original] == ["bin"]
  for f in data_formats.FORMATS:
    assert all(data_formats.detect(f"d/x{e.upper()}") is f for e in f.extensions)
    assert data_formats.get(f.name) is f and f.label and isinstance(f.pretokenized, bool)


def test_the_built_in_formats_keep_their_facts():
  facts = {f.name: (f.pretokenized, f.chunked) for f in data_formats.FORMATS}
  assert {name: facts[name] for name in ("bin", "jsonl", "tfrecord")} == {
      "bin": (True, True), "jsonl": (False, False), "tfrecord": (True, False)}


@pytest.mark.parametrize("name", data_formats.NAMES)
def test_every_format_writes_what_it_reads(tmp_path, name):
  """Each registered format: the hand records written as one file and as chunks are read back
  as they were (directly, and through the input pipeline's settled files), counted, and named
  by their extension."""
  fmt = data_formats.get(name)
  path = str(tmp_path / f"hand{fmt.extensions[0]}")
  assert fmt.write(path, iter(HAND_RECORDS)) == len(HAND_RECORDS)
  assert os.listdir(tmp_path) == [os.path.basename(path)]  # nothing else left behind
  skips = skips_lib.SkipCounter()
  back = list(fmt.read(path, skips))
  assert skips.total == 0 and fmt.count(path) == len(HAND_RECORDS)
  assert [(r.article, r.abstract_sentences, r.source) for r in back] == [
      (r.article, r.abstract_sentences, path) for r in HAND_RECORDS]
  chunks = fmt.write_chunks(iter(HAND_RECORDS), str(tmp_path / "chunked"), "val", chunk_size=3)
  assert [os.path.basename(c) for c in chunks] == [f"val_{i:03d}{fmt.extensions[0]}"
                                                   for i in (0, 1)]
  files = data_files.DataFiles.find(str(tmp_path / "chunked" / "val_*"))
  assert files.formats == (fmt, fmt) and files.count() == len(HAND_RECORDS)
  assert [r.article for r in files.read(skips_lib.SkipCounter())] == [
      r.article for r in HAND_RECORDS]


@pytest.mark.parametrize("name", data_formats.NAMES)
def test_every_formats_settings_are_flags_hparams_fields_and_recorded(name):
  from absl import flags  # pylint: disable=g-import-not-at-top
  from pointer_gen import config  # pylint: disable=g-import-not-at-top
  from pointer_gen import run  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from pointer_gen.data import run_record  # pylint: disable=g-import-not-at-top
  fmt = data_formats.get(name)
  defaults = config.HParams()
  for field in settings.declarations(fmt.Options):
    setting = field.name
    assert flags.FLAGS[setting].default == field.default == getattr(defaults, setting)
    assert flags.FLAGS[setting].help == flag_help(field)
    # The data's layout: inherited from the run, and free to differ in eval and decode.
    assert setting in run_record.data_layout(defaults)
  assert fmt.Options.from_hparams(defaults) == fmt.Options()


def test_write_tfrecord_bytes_and_read_back(tmp_path):
  path = str(tmp_path / "hand.tfrecord")
  assert tfrecord_format.TFRECORD.write(path, iter(HAND_RECORDS)) == 4
  assert os.listdir(tmp_path) == ["hand.tfrecord"]  # no .tmp left behind
  # The .bin's payloads, in TFRecord's framing.
  bin_format.BIN.write(str(tmp_path / "hand.bin"), HAND_RECORDS)
  assert _walk_tfrecord(path) == _walk(str(tmp_path / "hand.bin"))
  skips = skips_lib.SkipCounter()
  back = list(tfrecord_format.TFRECORD.read(path, skips))
  assert skips.total == 0
  assert [(r.article, r.abstract_sentences, r.source, r.index) for r in back] == [
      (r.article, r.abstract_sentences, path, r.index) for r in HAND_RECORDS]
  assert tfrecord_format.TFRECORD.count(path) == 4


def test_bad_tfrecord_examples_are_skipped_as_in_bin(tmp_path, caplog):
  payloads = [_good("first good", "<s> one </s>"), b"\xff\xff\xff not a protobuf",
              _example(abstract="<s> x </s>"), _good("last good", "<s> two </s>")]
  path = tmp_path / "mixed.tfrecord"
  path.write_bytes(b"".join(_tfrecord_frame(p) for p in payloads))
  skips = skips_lib.SkipCounter()
  with caplog.at_level("WARNING"):
    recs = list(tfrecord_format.TFRECORD.read(str(path), skips))
  assert [(r.index, r.article) for r in recs] == [(0, "first good"), (3, "last good")]
  assert dict(skips.counts) == {"not a tf.train.Example": 1, "missing 'article' feature": 1}
  assert any(re.search(r"mixed\.tfrecord: record 1: skipped, not a tf\.train\.Example",
                       r.getMessage()) for r in caplog.records)
  assert tfrecord_format.TFRECORD.count(str(path)) == 4


FIRST = _tfrecord_frame(GOOD)
SECOND = _tfrecord_frame(_good("second", "<s> two </s>"))


def _flipped(data, position):
  return data[:position] + bytes([data[position] ^ 0x10]) + data[position + 1:]


@pytest.mark.parametrize("data, message", [
    (FIRST + _flipped(SECOND, 20), r"record 1 at byte {end}: corrupted record: its checksum does "
                                   r"not match its bytes \(a damaged file, or not a TFRecord"),
    (FIRST + _flipped(SECOND, 2), r"record 1 at byte {end}: corrupted record"),
    (FIRST + _flipped(SECOND, len(SECOND) - 1), r"record 1 at byte {end}: corrupted record"),
    (FIRST + SECOND[:30], r"record 1 at byte {end}: truncated record \(the file ends inside it"),
    (FIRST + SECOND + SECOND[:5], r"record 2 at byte {end2}: truncated length field \(5 bytes at "
                                  r"the end of the file\)"),
], ids=["payload_byte", "length_byte", "checksum_byte", "truncated_record", "truncated_length"])
def test_a_corrupt_tfrecord_is_an_error_naming_file_and_record(tmp_path, data, message):
  path = tmp_path / "broken.tfrecord"
  path.write_bytes(data)
  where = r"broken\.tfrecord: " + message.format(end=len(FIRST), end2=len(FIRST + SECOND))
  with pytest.raises(DataError, match=where):
    tfrecord_format.TFRECORD.count(str(path))
  got = []
  with pytest.raises(DataError, match=where):
    for record in data_formats.read_records([str(path)], "auto", skips_lib.SkipCounter()):
      got.append(record.article)
  assert got == ["a b c", "second"][:2 if "record 2" in message else 1]


# ---------------------------------------------------------------- JSONL skips


def test_bad_jsonl_lines_are_skipped_and_counted(tmp_path, caplog):
  lines = [
      json.dumps({"article": "good one", "abstract_sentences": ["s1", "s2"]}).encode(),
      b'{"article": "unterminated',
      b"[1, 2]",
      json.dumps({"article": 5, "abstract": "x"}).encode(),
      json.dumps({"abstract": "x"}).encode(),
      json.dumps({"article": "no abstract"}).encode(),
      json.dumps({"article": "a", "abstract_sentences": "not a list"}).encode(),
      json.dumps({"article": "a", "abstract_sentences": ["ok", 3]}).encode(),
      json.dumps({"article": "a", "abstract": ["list"]}).encode(),
      b'{"article": "bad \xff byte", "abstract": "x"}',
      json.dumps({"article": " \n ", "abstract": "x"}).encode(),
      b"   ",
      json.dumps({"article": "tagged", "abstract": "<s> t1 </s> <s> t2 </s>"}).encode(),
      json.dumps({"article": "plain", "abstract": "one plain abstract ."}).encode(),
      json.dumps({"article": "both", "abstract": "ignored", "abstract_sentences": ["used"]},
                 ensure_ascii=False).encode(),
  ]
  path = tmp_path / "mixed.jsonl"
  path.write_bytes(b"\n".join(lines) + b"\n\n")
  skips = skips_lib.SkipCounter()
  with caplog.at_level("WARNING"):
    recs = list(jsonl_format.JSONL.read(str(path), skips))
  assert [(r.index, r.article, r.abstract_sentences) for r in recs] == [
      (0, "good one", ["s1", "s2"]),
      (12, "tagged", ["t1", "t2"]),
      (13, "plain", ["one plain abstract ."]),
      (14, "both", ["used"]),
  ]
  assert dict(skips.counts) == {
      "invalid JSON": 1,
      "not a JSON object": 1,
      "wrong type for 'article'": 1,
      "missing field 'article'": 1,
      "missing field 'abstract_sentences' or 'abstract'": 1,
      "wrong type for 'abstract_sentences'": 2,
      "wrong type for 'abstract'": 1,
      "invalid UTF-8": 1,
      "empty article": 1,
  }
  messages = [r.getMessage() for r in caplog.records]
  assert any(re.search(r"mixed\.jsonl: record 1: skipped, invalid JSON \(line 2", m)
             for m in messages)
  assert any(re.search(r"mixed\.jsonl: record 9: skipped, invalid UTF-8 \(line 10", m)
             for m in messages)
  assert not any("record 11" in m for m in messages)  # blank lines are not skips


def test_jsonl_with_utf8_bom(tmp_path):
  path = tmp_path / "bom.jsonl"
  path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"article": "a", "abstract": "b"}).encode())
  assert [r.article for r in jsonl_format.JSONL.read(str(path), skips_lib.SkipCounter())] == ["a"]


# ---------------------------------------------------------------- globs, formats, abstracts


def test_expand_glob_sorts_files_and_skips_directories(tmp_path):
  for name in ("b.bin", "a.bin", "c.jsonl"):
    (tmp_path / name).write_bytes(b"")
  (tmp_path / "dir.bin").mkdir()
  assert data_files.expand_glob(str(tmp_path / "*.bin")) == [
      str(tmp_path / "a.bin"), str(tmp_path / "b.bin")]


@pytest.mark.parametrize("pattern, flag, message", [
    ("{tmp}/nothing_*.bin", "--data_path", r"--data_path=.*/nothing_\*\.bin: no files match"),
    ("", "--input", r"--input is empty"),
    ("{tmp}/sub*", "--input", r"--input=.*/sub\*: no files match \(only directories match"),
])
def test_expand_glob_errors_name_flag_and_pattern(tmp_path, pattern, flag, message):
  (tmp_path / "subdir").mkdir()
  with pytest.raises(DataError, match=message):
    data_files.expand_glob(pattern.format(tmp=tmp_path), flag)


@pytest.mark.parametrize("path, data_format, expected", [
    ("d/train_000.bin", "auto", "bin"),
    ("d/x.jsonl", "auto", "jsonl"),
    ("d/x.JL", "auto", "jsonl"),
    ("d/x.json", "auto", "jsonl"),
    ("d/x.txt", "bin", "bin"),
    ("d/x.bin", "jsonl", "jsonl"),
    ("d/val.tfrecord", "auto", "tfrecord"),
    ("d/val.TFRecords", "auto", "tfrecord"),
])
def test_detect_format(path, data_format, expected):
  assert data_formats.detect(path, data_format).name == expected


def test_detect_format_errors():
  # The registered formats, as the messages list them (a new format joins them), and a name and
  # an extension no format will take (.txt or .csv might be a new format's).
  choices = re.escape(f"--data_format={'|'.join(data_formats.NAMES)}")
  with pytest.raises(DataError, match=rf"d/x\.no_format: .*'\.no_format'.*{choices}"):
    data_formats.detect("d/x.no_format")
  with pytest.raises(DataError, match=rf"d/noext: .*{choices}"):
    data_formats.detect("d/noext")
  with pytest.raises(DataError, match=re.escape(
      f"--data_format='no_format': expected auto or one of {', '.join(data_formats.NAMES)}")):
    data_formats.detect("d/x.bin", "no_format")


def test_read_records_checks_every_format_before_reading(tmp_path):
  good = _write_frames(tmp_path / "a.bin", [GOOD])
  # An extension no format will take (.csv or .txt might be a new format's).
  with pytest.raises(DataError, match=r"b\.no_format: cannot tell the data format"):
    next(data_formats.read_records([good, str(tmp_path / "b.no_format")], "auto",
                                   skips_lib.SkipCounter()))


@pytest.mark.parametrize("text, expected", [
    ("<s> one . </s> <s> two . </s>", ["one .", "two ."]),
    ("<s>tight</s><s>  spaced   </s>", ["tight", "spaced"]),
    ("<s> </s> <s> b </s>", ["", "b"]),
    ("before <s> in </s> after", ["in"]),
    ("<s> closed </s> <s> never closed", ["closed"]),
    ("no tags at all ", ["no tags at all"]),
    ("   ", []),
    ("", []),
    ("<s> a </s> </s> <s> b </s>", ["a", "b"]),
])
def test_abstract_to_sentences(text, expected):
  assert base.abstract_to_sentences(text) == expected


# ---------------------------------------------------------------- tools, run as subprocesses

VOCAB_BIN = [
    _good("the cat sat on the mat", "<s> the cat </s> <s> sat </s>"),
    _good("a dog . the dog <s>", "<s> dog sat </s>"),
]
VOCAB_JSONL = [
    b'{"article": "The Dog, the end.", "abstract_sentences": ["The end."]}',
    b"{broken json",
]
HF_XSUM = [
    {"id": "1", "document": "Rain, rain.", "summary": "Wet day."},
    {"id": "2", "document": "Sun!", "summary": ["Dry.", "Warm day."]},
]
CONVERT_RECORDS = [
    {"article": "Tiếng Việt có dấu.\nSecond paragraph.", "abstract_sentences": ["Một.", "Hai."]},
    {"article": "no abstract sentences", "abstract_sentences": []},
    {"article": "plain abstract", "abstract": "one string"},
    {"article": "fourth", "abstract_sentences": ["4"]},
    {"article": "fifth", "abstract_sentences": ["5a", "5b"]},
]


def _run_tool(tool, runs):
  """The process running `python tools/<tool> args` for each name: args of `runs`
  (helpers.start_tool_runs), and the names."""
  return start_tool_runs(tool, list(runs.values())), list(runs)


@pytest.fixture(scope="module")
def tool_runs(tmp_path_factory):
  """Runs each tool on every case, the two tools at once, and waits for both."""
  tmp = tmp_path_factory.mktemp("tools")
  _write_frames(tmp / "vocab_in.bin", VOCAB_BIN)
  (tmp / "vocab_in.jsonl").write_bytes(b"\n".join(VOCAB_JSONL) + b"\n")
  convert_in = tmp / "convert_in.jsonl"
  convert_in.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CONVERT_RECORDS),
                        encoding="utf-8")
  _write_frames(tmp / "convert_in.bin", [
      _example(article=r["article"], abstract=" ".join(
          f"<s> {s} </s>" for s in r.get("abstract_sentences", [r.get("abstract")])))
      for r in CONVERT_RECORDS])
  (tmp / "occupied").mkdir()
  (tmp / "occupied" / "train_000.bin").write_bytes(b"")
  # Hugging Face layouts: XSum's document/summary, CNN/DM's article/highlights.
  (tmp / "xsum.jsonl").write_text("".join(json.dumps(r) + "\n" for r in HF_XSUM),
                                  encoding="utf-8")
  procs = [
      _run_tool("make_vocab.py", {
          "vocab": [f"--data_path={tmp}/vocab_in.*", f"--output={tmp}/vocab", "--lowercase",
                    "--max_size=8"],
          "vocab_hf": [f"--data_path={tmp}/xsum.jsonl", f"--output={tmp}/hf_vocab",
                       "--tokenizer=punct", "--article_key=document", "--abstract_key=summary"],
      }),
      _run_tool("convert_data.py", {
          "to_bin": [f"--input={convert_in}", f"--output={tmp}/chunks", "--to=bin",
                     "--split=test", "--chunk_size=2"],
          "to_jsonl": [f"--input={tmp}/convert_in.bin", f"--output={tmp}/out/converted.jsonl",
                       "--to=jsonl"],
          "to_tfrecord": [f"--input={tmp}/convert_in.bin",
                          f"--output={tmp}/out/converted.tfrecord", "--to=tfrecord"],
          "to_bin_hf": [f"--input={tmp}/xsum.jsonl", f"--output={tmp}/hf_chunks", "--to=bin",
                        "--article_key=document", "--abstract_key=summary"],
          "occupied": [f"--input={convert_in}", f"--output={tmp}/occupied", "--to=bin"],
      }),
  ]
  results = {}
  for proc, names in procs:
    results.update(zip(names, finish_tool_runs(proc, timeout=120)))
  return tmp, results


def _ok(results, name):
  code, out, err = results[name]
  assert code == 0, f"{name} failed:\n{err}"
  return out


@pytest.mark.slow
def test_make_vocab_counts_and_order(tool_runs):
  tmp, results = tool_runs
  out = _ok(results, "vocab")
  # Hand count over the lower-cased article and abstract sentences of both files (the stray
  # "<s>" never counts): the 7, dog 3, sat 3, cat 2, end. 2, then ". a dog, mat on" once each;
  # ties go in string order and --max_size=8 drops the last two.
  assert (tmp / "vocab").read_text(encoding="utf-8").splitlines() == [
      "the 7", "dog 3", "sat 3", "cat 2", "end. 2", ". 1", "a 1", "dog, 1"]
  assert "Read 3 records from 2 files" in out
  assert "skipped 1 records (invalid JSON: 1)" in out
  assert "Wrote 8 words (of 10 distinct)" in out


@pytest.mark.slow
def test_make_vocab_reads_hf_field_names_and_records_its_tokenization(tool_runs):
  tmp, results = tool_runs
  _ok(results, "vocab_hf")
  # Hand count of the punct tokens of the documents and summaries (the id field is not read).
  assert (tmp / "hf_vocab").read_text(encoding="utf-8").splitlines() == [
      ". 4", "day 2", "! 1", ", 1", "Dry 1", "Rain 1", "Sun 1", "Warm 1", "Wet 1", "rain 1"]
  with open(tmp / "hf_vocab.tokenization.json", encoding="utf-8") as f:
    sidecar = json.load(f)
  assert (sidecar["tokenizer"], sidecar["lowercase"]) == ("punct", False)


@pytest.mark.slow
def test_convert_reads_hf_field_names(tool_runs):
  tmp, results = tool_runs
  assert "Wrote 2 records to 1 bin files" in _ok(results, "to_bin_hf")
  back = list(data_formats.read_records(data_files.expand_glob(str(tmp / "hf_chunks" / "*")),
                                        "auto", skips_lib.SkipCounter()))
  assert [(r.article, r.abstract_sentences) for r in back] == [
      ("Rain, rain.", ["Wet day."]), ("Sun!", ["Dry.", "Warm day."])]


@pytest.mark.slow
def test_convert_jsonl_to_bin_reads_back(tool_runs):
  tmp, results = tool_runs
  out = _ok(results, "to_bin")
  assert "Wrote 5 records to 3 bin files" in out
  paths = data_files.expand_glob(str(tmp / "chunks" / "*"))
  assert [os.path.basename(p) for p in paths] == ["test_000.bin", "test_001.bin", "test_002.bin"]
  assert [len(_walk(p)) for p in paths] == [2, 2, 1]
  assert _feature(_walk(paths[0])[0], "abstract") == "<s> Một. </s> <s> Hai. </s>".encode()
  back = list(data_formats.read_records(paths, "auto", skips_lib.SkipCounter()))
  assert [(r.article, r.abstract_sentences) for r in back] == [
      (r["article"], r.get("abstract_sentences", [r.get("abstract")])) for r in CONVERT_RECORDS]


@pytest.mark.slow
def test_convert_bin_to_jsonl_reads_back(tool_runs):
  tmp, results = tool_runs
  out = _ok(results, "to_jsonl")
  assert "Wrote 5 records to 1 jsonl files" in out
  with open(tmp / "out" / "converted.jsonl", encoding="utf-8") as f:
    got = [json.loads(line) for line in f]
  for want, obj in zip(CONVERT_RECORDS, got, strict=True):
    sentences = want.get("abstract_sentences", [want.get("abstract")])
    assert obj == {"article": want["article"], "abstract": " ".join(sentences),
                   "abstract_sentences": sentences}


@pytest.mark.slow
def test_convert_bin_to_tfrecord_keeps_each_example_byte_for_byte(tool_runs):
  tmp, results = tool_runs
  out = _ok(results, "to_tfrecord")
  path = tmp / "out" / "converted.tfrecord"
  assert f"Wrote 5 records to 1 tfrecord files: {path}" in out
  # The .bin's tf.train.Examples, in TFRecord's framing: the same strings, the same tokens.
  examples = [tf.train.Example.FromString(p) for p in _walk_tfrecord(path)]
  assert examples == [tf.train.Example.FromString(p) for p in _walk(tmp / "convert_in.bin")]
  back = list(data_formats.read_records([str(path)], "auto", skips_lib.SkipCounter()))
  assert [(r.article, r.abstract_sentences) for r in back] == [
      (r["article"], r.get("abstract_sentences", [r.get("abstract")])) for r in CONVERT_RECORDS]


@pytest.mark.slow
def test_convert_refuses_directory_with_old_chunks(tool_runs):
  tmp, results = tool_runs
  code, _, err = results["occupied"]
  assert code == 1
  assert re.search(r"convert_data: error: --output=.*occupied already holds 1 train_\*\.bin "
                   r"files", err)
  assert os.listdir(tmp / "occupied") == ["train_000.bin"]
