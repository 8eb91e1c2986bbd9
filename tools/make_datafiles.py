r"""Makes the original's CNN/DailyMail `finished_files` from the raw stories or from JSONL.

  python tools/make_datafiles.py --stories_dir=cnn/stories --stories_dir=dailymail/stories \
      --url_lists=url_lists --out_dir=finished_files
  python tools/make_datafiles.py --train_jsonl='cnn_dm/train*.jsonl' \
      --val_jsonl='cnn_dm/validation*.jsonl' --test_jsonl='cnn_dm/test*.jsonl' \
      --out_dir=finished_files

Writes `train.bin`, `val.bin`, `test.bin`, `chunked/<split>_NNN.bin` (--chunk_size records each)
and `vocab` (the train split's --max_size most frequent tokens, `word count` lines) into
--out_dir, laid out as the original's make_datafiles.py wrote them, with the text tokenised by
`pointer_gen.text.tokenizers.tokenize` (--tokenizer=ptb reproduces the original's CoreNLP step)
instead of Java. A story's `.story` file is named by the sha1 hex digest of its url, as in the url
lists all_train.txt, all_val.txt and all_test.txt (all three needed); the file is looked for in each
--stories_dir in turn. A JSONL record is taken as the story it would be: its article's lines,
then each summary sentence (each line of a newline-separated summary string, such as Hugging
Face CNN/DM's `highlights`, read without --abstract_key) as a highlight.

The report names the stories without highlights or with an empty article and every story file
that is not valid UTF-8 (its invalid bytes are dropped, as the original's CoreNLP step did). A
split without records is an error, and nothing is written.

Beside the vocab it writes `vocab.tokenization.json`: the vocab's words are read from the .bin
files with --tokenizer=whitespace (their text is tokenised), and raw text became them by this
run's --tokenizer and --lowercase (`raw_tokenizer`, `raw_lowercase`), which a run trained on the
files records and applies to raw text (--mode=export, decode of raw JSONL).
"""

import collections
import concurrent.futures
import datetime
import glob
import hashlib
import itertools
import os
import shutil
import sys
import time
from typing import Iterator, NamedTuple

from absl import app
from absl import flags
import tensorflow as tf

from pointer_gen import usage
from pointer_gen.base.errors import DataError
from pointer_gen.formats import base
from pointer_gen.formats import bin_format
from pointer_gen.formats import data_files
from pointer_gen.formats import jsonl_format
from pointer_gen.formats import skips as skips_lib
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab

SPLITS = ("train", "val", "test")
HIGHLIGHT_MARKER = "@highlight"
# Hugging Face CNN/DailyMail's summary field, read without --abstract_key.
HF_ABSTRACT_KEY = "highlights"
# The original's chunk and vocab sizes.
CHUNK_SIZE = 1000
VOCAB_SIZE = 200000
# Where the outputs are written until every split is done, so that an interrupted run leaves
# nothing in --out_dir that looks finished; hidden, so that no `chunked/train_*` glob sees it.
STAGING = ".make_datafiles.partial"
# Stories per call of the tokenizer: large enough that the per-call overhead of the TF ops is
# small, small enough that the batches in flight stay a few MB.
BATCH_STORIES = 64
# Seconds between progress lines.
PROGRESS_EVERY = 10.0
# Names of stories without highlights or with an empty article shown in the report.
MAX_NAMED = 5
# Missing stories named in the error.
MAX_MISSING_NAMED = 20

FLAGS = flags.FLAGS


class Story(NamedTuple):
  source: str  # the .story or JSONL file
  index: int  # 0 for a .story file; the 0-based line index in a JSONL file
  article_lines: list[str]
  highlight_lines: list[str]
  invalid_bytes: int = 0  # bytes of the .story file that were not UTF-8, dropped


def record_name(record):
  """The story file, or `file.jsonl: line N`, of a record."""
  if record.source.endswith(".story"):
    return record.source
  return f"{record.source}: line {record.index + 1}"


class Progress:
  """Prints `split: done/total stories, N stories/s, ETA h:mm:ss` every `every` seconds."""

  def __init__(self, split, total, every=PROGRESS_EVERY, clock=time.monotonic, out=sys.stdout):
    self._split = split
    self._total = total
    self._every = every
    self._clock = clock
    self._out = out
    self._start = clock()
    self._last = self._start
    self.done = 0

  def _rate(self, now):
    return self.done / max(now - self._start, 1e-9)

  def step(self, n=1):
    self.done += n
    now = self._clock()
    if now - self._last < self._every:
      return
    self._last = now
    rate = self._rate(now)
    left = max(self._total - self.done, 0) / rate if rate else float("inf")
    eta = "unknown" if left == float("inf") else _clock_text(left)
    print(f"{self._split}: {self.done}/{self._total} stories, {rate:.1f} stories/s, "
          f"ETA {eta}", file=self._out, flush=True)

  def finish(self):
    now = self._clock()
    print(f"{self._split}: {self.done} stories in {_clock_text(now - self._start)} "
          f"({self._rate(now):.1f} stories/s)", file=self._out, flush=True)


def _clock_text(seconds):
  """h:mm:ss, as the training log's ETA."""
  return str(datetime.timedelta(seconds=round(seconds)))


# ---------------------------------------------------------------- reading stories


def url_hash(url):
  """The name the original gives a url's story: sha1 hex digest of the url's bytes."""
  return hashlib.sha1(url).hexdigest()


def read_url_list(path):
  """The urls (bytes, stripped) of a url list; blank lines are skipped."""
  try:
    with open(path, "rb") as f:
      return [line.strip() for line in f if line.strip()]
  except OSError as e:
    raise DataError(f"{path}: cannot read the url list ({e.strerror})") from e


def _listings(stories_dirs):
  listings = []
  for d in stories_dirs:
    try:
      listings.append((d, set(os.listdir(d))))
    except OSError as e:
      raise DataError(f"--stories_dir={d}: cannot list the directory ({e.strerror})") from e
  return listings


def locate_stories(url_lists, stories_dirs):
  """{split: [(url, .story path)]} for {split: url list}, each story from the first of
  `stories_dirs` that has it. Every missing story of every list is named in one error, so that
  a user sees the whole problem at once."""
  listings = _listings(stories_dirs)
  located, missing = {}, []
  for split, list_path in url_lists.items():
    located[split] = []
    for url in read_url_list(list_path):
      name = url_hash(url) + ".story"
      found = next((os.path.join(d, name) for d, names in listings if name in names), None)
      if found is None:
        missing.append(f"{os.path.basename(list_path)}: {url.decode('utf-8', 'replace')} -> "
                       f"{name}")
      located[split].append((url, found))
  if missing:
    shown = "\n  ".join(missing[:MAX_MISSING_NAMED])
    more = (f"\n  ... and {len(missing) - MAX_MISSING_NAMED} more"
            if len(missing) > MAX_MISSING_NAMED else "")
    total = sum(len(v) for v in located.values())
    raise DataError(f"{len(missing)} of the {total} stories listed in --url_lists="
                    f"{os.path.dirname(list_path)} are in no --stories_dir "
                    f"({', '.join(stories_dirs)}); url list: url -> expected file:\n  "
                    f"{shown}{more}")
  return located


def split_story(lines, lowercase):
  """(article lines, highlight lines) of a story's raw lines, as the original: the lines before
  the first `@highlight` line are the article, every other line after it a highlight."""
  article, highlights = [], []
  marker_seen = False
  for line in lines:
    key = line.strip()
    # The original looks for the marker after lower-casing, and only then.
    if lowercase:
      key = key.lower()
    if key.startswith(HIGHLIGHT_MARKER):
      marker_seen = True
    elif marker_seen:
      highlights.append(line)
    else:
      article.append(line)
  return article, highlights


def read_story(url, path, lowercase):
  try:
    with open(path, "rb") as f:
      raw = f.read()
  except OSError as e:
    raise DataError(f"{path}: cannot read the story of {url.decode('utf-8', 'replace')} "
                    f"({e.strerror})") from e
  # Invalid bytes become U+FFFD, which the tokenizer deletes, as CoreNLP reading UTF-8 did.
  decoded = raw.decode("utf-8", "replace")
  invalid = 0
  if "\ufffd" in decoded:
    # One U+FFFD can stand for up to three bytes, and the text may hold real ones: each invalid
    # byte is one lone surrogate under surrogateescape.
    invalid = sum(1 for c in raw.decode("utf-8", "surrogateescape") if "\udc80" <= c <= "\udcff")
  article, highlights = split_story(decoded.split("\n"), lowercase)
  return Story(path, 0, article, highlights, invalid)


def jsonl_story(record):
  """A JSONL record as the story it would be: each line of a summary sentence a highlight."""
  highlights = [line for s in record.abstract_sentences for line in s.split("\n")]
  return Story(record.source, record.index, [record.article], highlights)


# ---------------------------------------------------------------- tokenising


def line_tokenizer(tokenizer, lowercase):
  """A function from a 1-D string tensor to the space-joined tokens of each element."""

  @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize(texts):
    tokens = text.tokenize(texts, tokenizer, lowercase)  # [n, (tokens)]
    return tf.strings.reduce_join(tokens, axis=-1, separator=" ")  # [n]

  return tokenize


def _texts(stories):
  """The article and highlight texts of a batch of stories, flat, as the tokenizer takes them."""
  texts = []
  for story in stories:
    texts.append("\n".join(story.article_lines))
    texts.extend(story.highlight_lines)
  return texts


def _records(stories, joined):
  """Rebuilds each story's record from the flat tokenised texts; empty highlights drop out."""
  out = []
  pos = 0
  for story in stories:
    article = joined[pos].decode("utf-8")
    n = len(story.highlight_lines)
    highlights = [h.decode("utf-8") for h in joined[pos + 1:pos + 1 + n] if h]
    pos += 1 + n
    out.append(base.Record(article, highlights, story.source, story.index))
  return out


def _tokenize_batch(tokenize, stories):
  return tokenize(tf.constant(_texts(stories), tf.string)).numpy()


def tokenized_records(stories, tokenize, workers=None):
  """Yields a record per story, in order, tokenising batches of stories on `workers` threads
  (TensorFlow runs the ops without Python's lock, so each thread keeps a core busy)."""
  workers = workers or os.cpu_count() or 1
  with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    pending = collections.deque()
    stories = iter(stories)
    for batch in iter(lambda: list(itertools.islice(stories, BATCH_STORIES)), []):
      pending.append((batch, pool.submit(_tokenize_batch, tokenize, batch)))
      # One batch queued per worker beyond the running ones keeps both busy, memory bounded.
      if len(pending) > 2 * workers:
        done, future = pending.popleft()
        yield from _records(done, future.result())
    while pending:
      done, future = pending.popleft()
      yield from _records(done, future.result())


# ---------------------------------------------------------------- writing


class SplitStats:
  """What the report says about a split: its records, stories without highlights or with an
  empty article, which the original writes as they are (empty abstract or article), and story
  files that are not valid UTF-8, whose invalid bytes the original drops."""

  def __init__(self):
    self.records = 0
    self.no_highlights = []
    self.empty_article = []
    self.not_utf8 = []  # (story file, invalid bytes)

  def read(self, stories):
    """Passes stories through, noting those that were not valid UTF-8."""
    for story in stories:
      if story.invalid_bytes:
        self.not_utf8.append((story.source, story.invalid_bytes))
      yield story

  def add(self, record):
    self.records += 1
    if not record.abstract_sentences:
      self.no_highlights.append(record_name(record))
    if not record.article:
      self.empty_article.append(record_name(record))

  def summary(self, split):
    """A line per kind of story the original writes without a word, naming a few of them."""
    lines = []
    for what, names in (("without highlights (written with an empty abstract)",
                         self.no_highlights),
                        ("with an empty article (written as it is)", self.empty_article)):
      if names:
        more = ", ..." if len(names) > MAX_NAMED else ""
        lines.append(f"{split}: {len(names)} stories {what}: "
                     f"{', '.join(names[:MAX_NAMED])}{more}")
    if self.not_utf8:
      # Each is named: a story that lost characters is worth a look, and they are rare.
      lines.append(f"{split}: {len(self.not_utf8)} stories not valid UTF-8 (their invalid "
                   f"bytes dropped, as the original's CoreNLP step did):")
      lines += [f"  {name}: {n} byte{'s' if n > 1 else ''}" for name, n in self.not_utf8]
    return "\n".join(lines)


def _counted(recs, stats, progress, counts):
  """Passes records through, updating the stats, the progress line and (unless `counts` is
  None) the vocab counts."""
  tokens = []
  for record in recs:
    stats.add(record)
    progress.step()
    if counts is not None:
      # As the original: tokens split on single spaces, empty ones dropped. count_words also
      # leaves out the tags and the vocab's specials, which a vocab file must not hold.
      tokens.append([t for t in record.article.split(" ") if t])
      tokens.extend(s.split(" ") for s in record.abstract_sentences)
      if len(tokens) >= CHUNK_SIZE:
        counts.update(vocab.count_words(tokens))
        tokens = []
    yield record
  if counts is not None:
    counts.update(vocab.count_words(tokens))


def _concatenate(paths, out_path):
  """A .bin file is its records back to back: the split's file is its chunks joined."""
  with open(out_path, "wb") as out:
    for path in paths:
      with open(path, "rb") as f:
        shutil.copyfileobj(f, out)


def write_split(recs, staging, split, chunk_size):
  """Writes `{split}.bin` and `chunked/{split}_NNN.bin` into `staging`; returns their paths
  relative to it."""
  chunks = bin_format.BIN.write_chunks(recs, os.path.join(staging, "chunked"), split,
                                       chunk_size)
  _concatenate(chunks, os.path.join(staging, f"{split}.bin"))
  return [f"{split}.bin"] + [os.path.join("chunked", os.path.basename(p)) for p in chunks]


def _outputs_present(out_dir, splits):
  """The finished files of `splits` (and the vocab, made from train) already in `out_dir`."""
  root = glob.escape(out_dir)
  present = []
  for split in splits:
    present += glob.glob(os.path.join(root, f"{split}.bin"))
    present += sorted(glob.glob(os.path.join(root, "chunked", f"{split}_*.bin")))
  if "train" in splits:
    present += glob.glob(os.path.join(root, "vocab"))
  return present


def _publish(staging, out_dir, names):
  """Moves the staged files into place; renames within one file system, so each is atomic."""
  os.makedirs(os.path.join(out_dir, "chunked"), exist_ok=True)
  for name in names:
    os.replace(os.path.join(staging, name), os.path.join(out_dir, name))
  shutil.rmtree(staging)


# ---------------------------------------------------------------- the whole run


class Source(NamedTuple):
  split: str
  total: int  # stories expected, for the ETA
  stories: Iterator[Story]  # read lazily
  origin: str = ""  # the input, named if the split comes out empty
  skips: skips_lib.SkipCounter | None = None  # where a JSONL source counts the records it skips


def story_sources(stories_dirs, url_lists, lowercase):
  """Every split of the url lists in `url_lists`; all stories are located before any is read."""
  lists = {s: os.path.join(url_lists, f"all_{s}.txt") for s in SPLITS}
  missing = [p for p in lists.values() if not os.path.isfile(p)]
  if missing:
    raise DataError(f"--url_lists={url_lists}: no {', '.join(missing)} (the url lists of the "
                    f"train, val and test splits, all three needed)")
  located = locate_stories(lists, stories_dirs)
  return [Source(s, len(stories), (read_story(url, p, lowercase) for url, p in stories),
                 lists[s]) for s, stories in located.items()]


def jsonl_sources(globs, skips, article_key, abstract_key):
  sources = []
  for split, pattern in globs.items():
    paths = data_files.expand_glob(pattern, f"--{split}_jsonl")
    keys = [jsonl_format.summary_key(p, article_key, abstract_key, (HF_ABSTRACT_KEY,))
            for p in paths]
    recs = (r for p, key in zip(paths, keys)
            for r in jsonl_format.JSONL.read(p, skips,
                                             jsonl_format.JsonlSettings(article_key, key)))
    total = sum(jsonl_format.JSONL.count(p) for p in paths)
    sources.append(Source(split, total, (jsonl_story(r) for r in recs),
                          f"--{split}_jsonl={pattern}", skips))
  return sources


def _write_all(sources, staging, tokenizer, lowercase, chunk_size, max_size, out):
  """Writes every split and the train split's vocab into `staging`; returns the paths written,
  relative to it."""
  tokenize = line_tokenizer(tokenizer, lowercase)
  names = []
  counts = None
  for source in sources:
    stats = SplitStats()
    progress = Progress(source.split, source.total, out=out)
    split_counts = collections.Counter() if source.split == "train" else None
    skipped_before = collections.Counter(source.skips.counts if source.skips else ())
    recs = _counted(tokenized_records(stats.read(source.stories), tokenize), stats, progress,
                    split_counts)
    names += write_split(recs, staging, source.split, chunk_size)
    progress.finish()
    if not stats.records:
      raise DataError(_empty_split(source, skipped_before))
    summary = stats.summary(source.split)
    if summary:
      print(summary, file=out, flush=True)
    if split_counts is not None:
      counts = split_counts
  if counts is not None:
    written = vocab.write_vocab(os.path.join(staging, "vocab"), counts, max_size)
    sidecar = vocab.write_tokenization(os.path.join(staging, "vocab"), "whitespace", False,
                                       raw_tokenizer=tokenizer, raw_lowercase=lowercase)
    names += ["vocab", os.path.basename(sidecar)]
    print(f"vocab: {written} words (of {len(counts)} distinct in train)", file=out)
  return names


def _empty_split(source, skipped_before):
  """The error for a split without records: its input and, for JSONL, what was skipped."""
  why = ""
  if source.skips is not None:
    skipped = skips_lib.SkipCounter()
    skipped.counts = source.skips.counts - skipped_before
    why = f": {skipped.summary()}"
  return f"{source.split}: no records from {source.origin}{why}; nothing written"


def check_out_dir(out_dir, splits):
  """Refuses an --out_dir that cannot be made or written in, or that holds finished files of
  `splits`; cheap, so that it is checked before any input is read."""
  if not out_dir:
    raise DataError("--out_dir is required (the directory for the finished files)")
  existing = os.path.abspath(out_dir)
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if not os.path.isdir(existing):
    raise DataError(f"--out_dir={out_dir}: {existing} is a file, not a directory")
  if not os.access(existing, os.W_OK | os.X_OK):
    raise DataError(f"--out_dir={out_dir}: {existing} is not writable")
  present = _outputs_present(out_dir, splits)
  if present:
    raise DataError(f"--out_dir={out_dir} already holds {len(present)} finished files (e.g. "
                    f"{present[0]}); remove them or choose another directory")


def make_datafiles(sources, out_dir, tokenizer, lowercase, chunk_size=CHUNK_SIZE,
                   max_size=VOCAB_SIZE, out=sys.stdout):
  """Tokenises and writes every source's split, then the vocab of the train split; a split
  without records is an error, and nothing is written."""
  check_out_dir(out_dir, [s.split for s in sources])
  staging = os.path.join(out_dir, STAGING)
  # Left by a run that was killed: nothing in it is finished.
  shutil.rmtree(staging, ignore_errors=True)
  try:
    os.makedirs(staging)
  except OSError as e:
    raise DataError(f"--out_dir={out_dir}: cannot create {staging} ({e.strerror})") from e
  try:
    names = _write_all(sources, staging, tokenizer, lowercase, chunk_size, max_size, out)
  except BaseException:
    shutil.rmtree(staging, ignore_errors=True)
    raise
  _publish(staging, out_dir, names)
  print(f"Wrote {', '.join(n for n in names if not n.startswith('chunked'))} and "
        f"{sum(n.startswith('chunked') for n in names)} chunked files to {out_dir}", file=out)


def _jsonl_globs():
  """{split: glob} of the --<split>_jsonl flags given; flags that contradict are an error."""
  globs = {s: FLAGS[f"{s}_jsonl"].value for s in SPLITS if FLAGS[f"{s}_jsonl"].value}
  if globs and (FLAGS.stories_dir or FLAGS.url_lists):
    raise DataError("give either --stories_dir and --url_lists or --train_jsonl/--val_jsonl/"
                    "--test_jsonl, not both")
  return globs


def _sources_from_flags():
  globs = _jsonl_globs()
  if globs:
    skips = skips_lib.SkipCounter()
    return jsonl_sources(globs, skips, FLAGS.article_key, FLAGS.abstract_key), skips
  if not FLAGS.stories_dir or not FLAGS.url_lists:
    raise DataError("give --stories_dir (repeatable) and --url_lists, or --train_jsonl/"
                    "--val_jsonl/--test_jsonl")
  return story_sources(FLAGS.stories_dir, FLAGS.url_lists, FLAGS.lowercase), None


def _define_flags():
  """The command line's flags, defined only when this runs as a script: tests import it beside
  pointer_gen.config, which has its own --tokenizer, --lowercase, --article_key, ..."""
  flags.DEFINE_multi_string("stories_dir", [], "A directory of .story files (repeatable: "
                            "cnn/stories, dailymail/stories); needs --url_lists.")
  flags.DEFINE_string("url_lists", "", "Directory holding all_train.txt, all_val.txt and "
                      "all_test.txt: the urls of each split's stories.")
  flags.DEFINE_string("train_jsonl", "", "Glob of the train split's JSONL files (instead of "
                      "--stories_dir).")
  flags.DEFINE_string("val_jsonl", "", "Glob of the val split's JSONL files.")
  flags.DEFINE_string("test_jsonl", "", "Glob of the test split's JSONL files.")
  flags.DEFINE_string("out_dir", "", "Directory for the finished files.")
  flags.DEFINE_string("article_key", jsonl_format.ARTICLE_KEY,
                      "JSONL: the field holding the article.")
  flags.DEFINE_string("abstract_key", jsonl_format.DEFAULT_ABSTRACT_KEY,
                      "JSONL: the field holding the "
                      "summary (a newline-separated string such as Hugging Face CNN/DM's "
                      "highlights, or a list of sentences). Empty: abstract_sentences if present, "
                      "else abstract, else highlights.")
  flags.DEFINE_enum("tokenizer", "ptb", text.TOKENIZERS,
                    "ptb tokenises as the original's CoreNLP step.")
  flags.DEFINE_bool("lowercase", True, "Lower-case the text, as the original.")
  flags.DEFINE_integer("chunk_size", CHUNK_SIZE, "Records per chunked/<split>_NNN.bin file.",
                       lower_bound=1)
  flags.DEFINE_integer("max_size", VOCAB_SIZE, "Most words in the vocab (0 = all).", lower_bound=0)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    check_out_dir(FLAGS.out_dir, list(_jsonl_globs()) or SPLITS)
    sources, skips = _sources_from_flags()
    make_datafiles(sources, FLAGS.out_dir, FLAGS.tokenizer, FLAGS.lowercase, FLAGS.chunk_size,
                   FLAGS.max_size)
    if skips is not None:
      print(f"JSONL: {skips.summary()}")
  except DataError as e:
    sys.exit(f"make_datafiles: error: {e}")


if __name__ == "__main__":
  _define_flags()
  usage.run_tool(main)
