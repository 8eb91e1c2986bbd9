"""The input pipeline: records -> per-example id tensors -> padded, length-bucketed batches.

Records are read and validated in Python (`formats`, so bad input is reported with its file
and record index); everything from tokenisation on is TensorFlow ops (`example_features`), whose
article half (`article_features`) the serving graph shares so that both see exactly the same ids.
"""

import collections
import itertools
import random
from typing import NamedTuple

from absl import logging
import tensorflow as tf

from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import flag_text
from pointer_gen.data.batch import Batch
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as formats_registry
from pointer_gen.formats import skips as skips_lib
from pointer_gen.text import cjk
from pointer_gen.text import tokenizers as text
from pointer_gen.text import vocab as vocab_lib

# Number of batches whose examples are grouped by article length, as the original's
# bucketing cache (bucketing_cache_size=100).
BUCKETING_CACHE_BATCHES = 100
_BUCKET_WIDTH = 25


class ArticleFeatures(NamedTuple):
  """One article's tokens and ids (`article_features`)."""
  article_tokens: tf.Tensor  # [L] string: the tokens, truncated to max_enc_steps
  enc_input: tf.Tensor  # [L] int32: their ids, out-of-vocab words as UNK_ID
  enc_input_ext: tf.Tensor  # [L] int32: the k-th OOV as vocab_size + k (pointer_gen)
  article_oovs: tf.Tensor  # [N] string: the OOVs, in order of first occurrence


def article_features(article, table, vocab_size, max_enc_steps, pointer_gen=True,
                     tokenizer="whitespace", lowercase=False, repair_utf8=False):
  """The article half of `example_features`, also the serving graph's: one scalar string ->
  its ArticleFeatures.

  Only as much of the article is tokenised as its first max_enc_steps tokens need
  (text.tokenize_prefix): a long article costs what a short one does. repair_utf8: invalid
  UTF-8 becomes U+FFFD first.
  `vocab_size` is the number of entries actually in the vocab: article OOVs get the temporary
  ids vocab_size + k, k in order of first occurrence, as the original's article2ids.
  """
  article_tokens = text.tokenize_prefix(article, max_enc_steps, tokenizer, lowercase,
                                        repair_utf8)  # [L]
  enc_input = table.lookup(article_tokens)  # [L]
  is_oov = tf.equal(enc_input, vocab_lib.UNK_ID)  # [L]
  oov_positions = tf.where(is_oov)  # [n_oov_tokens, 1]
  article_oovs, oov_index = tf.unique(tf.boolean_mask(article_tokens, is_oov))  # [N], [n_oov_tokens]
  if pointer_gen:
    enc_input_ext = tf.tensor_scatter_nd_update(enc_input, oov_positions,
                                                vocab_size + oov_index)  # [L]
  else:
    enc_input_ext = enc_input
  return ArticleFeatures(article_tokens=article_tokens, enc_input=enc_input,
                         enc_input_ext=enc_input_ext, article_oovs=article_oovs)


def example_features(article, abstract, table, vocab_size, max_enc_steps, max_dec_steps,
                     pointer_gen=True, tokenizer="whitespace", lowercase=False):
  """Turns one article and its abstract (scalar strings) into the model's id tensors: one
  example, a Batch's fields without the batch dimension."""
  features = article_features(article, table, vocab_size, max_enc_steps, pointer_gen, tokenizer,
                              lowercase)
  enc_input, article_oovs = features.enc_input, features.article_oovs

  abstract_tokens = text.tokenize(abstract, tokenizer, lowercase)  # [A]
  abstract_ids = table.lookup(abstract_tokens)  # [A]
  if pointer_gen:
    abstract_ids = _copyable_oov_ids(abstract_tokens, abstract_ids, article_oovs, vocab_size)
  start = tf.constant([vocab_lib.START_ID], tf.int32)
  stop = tf.constant([vocab_lib.STOP_ID], tf.int32)
  # The decoder input never sees temporary ids: it is fed in-vocab ids only.
  dec_input = tf.concat([start, table.lookup(abstract_tokens)], 0)[:max_dec_steps]  # [T]
  target = tf.concat([abstract_ids, stop], 0)[:max_dec_steps]  # [T]
  return Batch(
      enc_input=enc_input,  # [L]
      enc_input_ext=features.enc_input_ext,  # [L]
      enc_len=tf.size(enc_input, out_type=tf.int32),
      num_oovs=tf.size(article_oovs, out_type=tf.int32),
      dec_input=dec_input,  # [T]
      target=target,  # [T]
      dec_len=tf.size(dec_input, out_type=tf.int32),
      article=article,
      abstract=abstract,
      article_oovs=article_oovs)  # [N]


def _copyable_oov_ids(tokens, ids, article_oovs, vocab_size):
  """Gives abstract OOVs that occur in the article their temporary id; others stay [UNK]."""
  num_oovs = tf.size(article_oovs, out_type=tf.int32)
  # An always-true last column keeps argmax defined and, for a word not among the article's
  # OOVs, points past them (index N), which marks it as not copyable.
  matches = tf.concat([tf.equal(tokens[:, None], article_oovs[None, :]),
                       tf.ones([tf.size(tokens), 1], tf.bool)], axis=1)  # [A, N+1]
  first_match = tf.argmax(tf.cast(matches, tf.int32), axis=1, output_type=tf.int32)  # [A]
  copyable = tf.equal(ids, vocab_lib.UNK_ID) & (first_match < num_oovs)  # [A]
  return tf.where(copyable, vocab_size + first_match, ids)


def _padding():
  """(padded shapes, padding values) of an example's fields: sequences padded to the longest of
  the batch with PAD_ID, or b"" for the OOVs."""
  ids, count, string = [None], [], []
  pad, zero, empty = (tf.constant(vocab_lib.PAD_ID, tf.int32), tf.constant(0, tf.int32),
                      tf.constant(b"", tf.string))
  shapes = Batch(enc_input=ids, enc_input_ext=ids, enc_len=count, num_oovs=count, dec_input=ids,
                 target=ids, dec_len=count, article=string, abstract=string, article_oovs=[None])
  values = Batch(enc_input=pad, enc_input_ext=pad, enc_len=zero, num_oovs=zero, dec_input=pad,
                 target=pad, dec_len=zero, article=empty, abstract=empty, article_oovs=empty)
  return shapes, values


def files_of(hps):
  """The DataFiles of --data_path: as settled (HParams.data, settle.py), else, for HParams made
  without settling them (tests, tools), found here."""
  if hps.data is not None:
    if hps.data.pattern != hps.data_path:
      raise ValueError(f"HParams.data holds {hps.data.pattern}, not --data_path={hps.data_path}: "
                       "replace data_path together with data")
    return hps.data
  return data_files.DataFiles.find(hps.data_path, hps.data_format, hps.reads,
                                   formats_registry.fields_of(hps))


class RecordSource:
  """Yields (article, abstract) strings from the data files, in the order the mode needs.

  Training: file order shuffled each epoch, forever, with a line in the log for the epochs
  finished: one per epoch, or with `log_every`, at most one per interval of the training log.
  single_pass: files sorted, one pass.
  Abstract sentences are joined with newlines, which the decoder's reference writer splits on
  and tokenisation treats as spaces (whitespace, punct) or as line ends (ptb: each sentence is
  a line, with its own missing period added, as in the original's data).
  """

  def __init__(self, files, single_pass=False, seed=None, num_shards=1, shard_index=0, skip=0,
               log_every=0, log_ahead=0):
    self.files = files  # data_files.DataFiles
    # This worker's shard of the files, as indices into files.paths.
    self.order = list(range(len(files.paths)))[shard_index::num_shards]
    if not self.order:
      raise DataError(f"--data_path={files.pattern}: fewer files than the {num_shards} input "
                      "shards (one per worker)")
    # Data smaller than the training log's interval would otherwise print a line per pass: the
    # examples of one interval, and how many the pipeline takes ahead of the training.
    self.log_every = log_every
    self.log_ahead = log_ahead
    # Framing is checked up front so a broken file fails now, not hours into training.
    self.num_records = files.count(self.order)
    self.skip = skip
    self.single_pass = single_pass
    self.skips = skips_lib.SkipCounter()
    self._rng = random.Random(seed)
    self.error = None

  def __call__(self):
    # An exception raised in here would reach the user wrapped in a TF error with a traceback
    # from inside tf.data; instead the data just ends and `raise_if_failed` re-raises it.
    self.error = None
    try:
      yield from self._examples()
    except DataError as e:
      self.error = e

  def raise_if_failed(self):
    if self.error is not None:
      raise self.error

  def _examples(self):
    epoch = 0
    total = 0  # examples yielded
    logged = (0, 0)  # the epoch and the total of the last line
    next_interval = 0  # the first interval of the training log without a line
    while True:
      order = list(self.order)
      if not self.single_pass:
        self._rng.shuffle(order)
      yielded = 0
      examples = self.files.read(self.skips, order)
      if self.single_pass and self.skip:
        examples = itertools.islice(examples, self.skip, None)
      for record in examples:
        yielded += 1
        yield record.article, "\n".join(record.abstract_sentences)
      if self.single_pass:
        self.skips.log_summary()
        logging.info("Finished one pass over %d files (%d examples).", len(order), yielded)
        return
      if not yielded:
        raise _no_usable_example(self.files.paths[i] for i in order)
      epoch += 1
      total += yielded
      interval = self._interval(total)
      if interval >= next_interval:
        self._log_epochs(logged[0] + 1, epoch, total - logged[1])
        logged, next_interval = (epoch, total), interval + 1

  def _interval(self, total):
    """The interval of the training log (each epoch without `log_every`) that the training is
    in when `total` examples have been yielded, counted from the middle of an interval: how far
    the pipeline runs ahead varies, and a line half an interval from either end stays in it."""
    if not self.log_every:
      return total
    return (total - self.log_ahead - self.log_every // 2) // self.log_every

  def _log_epochs(self, first, last, examples):
    self.skips.log_summary()
    if first == last:
      logging.info("Finished data epoch %d; starting the next.", last)
    else:
      logging.info("Finished data epochs %d-%d (%d examples); starting the next.", first, last,
                   examples)


def input_pipeline(hps, vocab, single_pass, batch_size=None, skip=0, num_shards=1,
                   shard_index=0):
  """(source, batches) of --data_path as every mode reads it: the data flags of `hps` (format,
  JSONL fields, seed) pick and order the records, its tokenizer, case and lengths make the ids
  from `vocab` (as settled: `HParams.reads`; raw JSONL in a run trained on pre-tokenised text:
  as that text was made). single_pass: every record once, in order, from the `skip`th on, in padded
  batches; else shuffled forever and bucketed by article length, from this worker's shard of the
  files. The source counts the records and skips and keeps the error that ended the data
  (`raise_if_failed`)."""
  batch = batch_size or hps.batch_size
  # Data-epoch lines per interval of the training log, which is taken no shorter than the
  # bucketing cache the source fills ahead of the training: that fill varies by more than half
  # a shorter interval.
  source = RecordSource(files_of(hps), single_pass=single_pass, seed=hps.seed,
                        num_shards=num_shards, shard_index=shard_index, skip=skip,
                        log_every=max(hps.log_every_n_steps, BUCKETING_CACHE_BATCHES) * batch,
                        log_ahead=BUCKETING_CACHE_BATCHES * batch)
  reads = hps.reads
  batches = make_dataset(source, vocab.lookup_table(), len(vocab),
                         hps.replace(single_pass=single_pass, tokenizer=reads.tokenizer,
                                     lowercase=reads.lowercase), batch_size)
  return source, batches


def make_dataset(source, table, vocab_size, hps, batch_size=None):
  """Batches of `example_features`, bucketed by article length unless single_pass."""
  batch_size = batch_size or hps.batch_size
  ds = tf.data.Dataset.from_generator(
      source, output_signature=(tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.string)))

  @tf.autograph.experimental.do_not_convert
  def featurize(article, abstract):
    return example_features(article, abstract, table, vocab_size, hps.max_enc_steps,
                            hps.max_dec_steps, hps.pointer_gen, hps.tokenizer, hps.lowercase)

  ds = ds.map(featurize, num_parallel_calls=tf.data.AUTOTUNE,
              deterministic=hps.single_pass or hps.seed is not None)
  shapes, values = _padding()
  if hps.single_pass:
    ds = ds.padded_batch(batch_size, padded_shapes=shapes, padding_values=values)
  else:
    boundaries = list(range(_BUCKET_WIDTH, hps.max_enc_steps + 1, _BUCKET_WIDTH))
    ds = ds.bucket_by_sequence_length(
        element_length_func=tf.autograph.experimental.do_not_convert(lambda ex: ex.enc_len),
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        padded_shapes=shapes, padding_values=values, drop_remainder=True)
    ds = ds.shuffle(BUCKETING_CACHE_BATCHES, seed=hps.seed)
  return ds.prefetch(tf.data.AUTOTUNE)


# The article tokens of the first examples are looked up to catch a vocab that does not fit the
# data. On BBC news (200 validation articles), a 50k vocab counted with the whitespace tokenizer,
# case kept, leaves 11.7 % of a `--tokenizer=punct --lowercase` run's tokens unknown, the
# matching vocab 2.2 %: a rate alone does not tell, a rate that another tokenisation would halve
# does. Over OOV_REFUSAL_RATE, a training is refused (docs/bad-input.md says why 50 %).
OOV_CHECK_EXAMPLES = 200
OOV_WARNING_RATE = 0.15
OOV_REFUSAL_RATE = 0.5
OOV_MIN_GAIN = 0.03
# A vocab is taken as one of other data when fewer than half of its most frequent words occur in
# the first articles: a vocab counted from the data, even from another split of it, has nearly
# all of them there.
TOP_WORDS = 100
TOP_WORDS_PRESENT = 0.5


def _no_usable_example(paths):
  return DataError(f"--data_path: no usable example in {', '.join(paths)}")


class _Sample:
  """The truncated article tokens of the first OOV_CHECK_EXAMPLES examples of --data_path, by
  tokenisation, read from the files once."""

  def __init__(self, hps):
    self.max_enc_steps = hps.max_enc_steps
    examples = files_of(hps).read(skips_lib.SkipCounter())
    self.articles = [r.article for r in itertools.islice(examples, OOV_CHECK_EXAMPLES)]
    self._tokens = {}

  def tokens(self, tokenization):
    """The tokens as `tokenization` (tokenizer, lowercase) makes them."""
    if tokenization not in self._tokens:
      ragged = text.tokenize(self.articles, *tokenization)[:, :self.max_enc_steps]  # [N, (L)]
      self._tokens[tokenization] = ragged.flat_values  # [sum of L]
    return self._tokens[tokenization]

  def unknown_rate(self, vocab, tokenization):
    """The share of the tokens not in `vocab`; None without tokens."""
    ids = vocab.lookup_table().lookup(self.tokens(tokenization))  # [sum of L]
    total = int(tf.size(ids))
    if not total:
      return None
    return int(tf.reduce_sum(tf.cast(ids == vocab_lib.UNK_ID, tf.int32))) / total

  def top_words_present(self, vocab, tokenization):
    """(present, considered): how many of the vocab's TOP_WORDS most frequent words occur."""
    top = vocab.words[len(vocab_lib.SPECIALS):len(vocab_lib.SPECIALS) + TOP_WORDS]
    seen = set(self.tokens(tokenization).numpy().tolist())
    return sum(w.encode("utf-8") in seen for w in top), len(top)


def check_unknown_words(hps, vocab):
  """Looks up the first articles' tokens in `vocab`; returns the share out of vocabulary. A
  training over OOV_REFUSAL_RATE is a DataError unless --allow_unknown_words; otherwise a rate
  over OOV_WARNING_RATE, or one another --tokenizer/--lowercase would halve, is a warning. Both
  name the rate, the vocab, the tokenisation and the causes the data and vocab show (`_causes`).
  Data without a usable example, which can neither train nor decode, is a DataError."""
  sample = _Sample(hps)
  if not sample.articles:
    # Before the model is built: every file was read, and nothing in them can be used.
    raise _no_usable_example(files_of(hps).paths)
  reads = hps.reads
  rate = sample.unknown_rate(vocab, reads)
  if rate is None:
    return None
  sidecar = vocab_lib.read_tokenization(hps.vocab_path)
  same_tokenization = sidecar is not None and reads in (
      (sidecar["tokenizer"], sidecar["lowercase"]),
      (sidecar.get("raw_tokenizer"), sidecar.get("raw_lowercase")))
  rates = {}
  if not same_tokenization:
    others = [(t, l) for t in text.TOKENIZERS for l in (False, True) if (t, l) != reads]
    rates = {s: sample.unknown_rate(vocab, s) for s in others}
  best = min(rates, key=lambda s: rates[s], default=None)
  better = best if best is not None and _much_lower(rates[best], rate) else None
  # Text written without spaces is named even when its vocab knows its "words" (one counted the
  # same way): a run on whole clauses as tokens has learnt nothing useful whatever the rate.
  found = cjk.unsplit(collections.Counter(
      t.decode("utf-8", "replace") for t in sample.tokens(reads).numpy().tolist()))
  if rate <= OOV_WARNING_RATE and better is None and found is None:
    return rate
  causes = _causes(hps, vocab, sample, rate, better and (better, rates[better]), sidecar,
                   same_tokenization, found)
  message = (f"{100 * rate:.1f} % of the article tokens of the first examples (up to "
             f"{OOV_CHECK_EXAMPLES}) of --data_path={hps.data_path} are out of the vocabulary "
             f"{hps.vocab_path} with --tokenizer={reads.tokenizer} "
             f"--lowercase={flag_text(reads.lowercase)}: "
             f"{causes}")
  if hps.mode == "train" and rate > OOV_REFUSAL_RATE and not hps.allow_unknown_words:
    raise DataError(f"{message} Training on articles mostly unknown to the vocab is refused "
                    f"(over {100 * OOV_REFUSAL_RATE:.0f} %); --allow_unknown_words trains anyway.")
  logging.warning("%s", message)
  return rate


def _causes(hps, vocab, sample, rate, better, sidecar, same_tokenization, unsplit):
  """The likely causes of `rate`, each only where the data and the vocab show it: text written
  without spaces read by another tokenizer than cjk (`unsplit`: cjk.Unsplit, or None), which
  also explains a vocab that seems of other data; a --vocab_size that cut off words the whole
  file has; another tokenisation (`better`: it and its rate) that would halve it; a vocab of
  other data, whose most frequent words the articles lack. Without any of them, a vocab too
  small for the data."""
  causes = []
  if unsplit is not None:
    causes.append(f"the articles' tokens are {unsplit.said()}. Pass --tokenizer=cjk, with a "
                  "vocab made so (tools/make_vocab.py --tokenizer=cjk).")
  whole = _whole_vocab_rate(hps, vocab, sample, rate)
  if whole is not None:
    causes.append(f"--vocab_size={hps.vocab_size} keeps only the file's first entries; the whole "
                  f"file ({whole[0]} entries, --vocab_size=0) would leave {100 * whole[1]:.1f} %: "
                  "a larger --vocab_size makes fewer words unknown.")
  tokenizations = [hps.reads]
  if better is not None:
    (tokenizer, lowercase), other_rate = better
    tokenizations.append((tokenizer, lowercase))
    causes.append(f"the vocab seems made with another tokenisation (tools/make_vocab.py "
                  f"--tokenizer, --lowercase): with --tokenizer={tokenizer} "
                  f"--lowercase={flag_text(lowercase)} it would be {100 * other_rate:.1f} %.")
  present, considered = max(sample.top_words_present(vocab, t) for t in tokenizations)
  if unsplit is None and considered and present < TOP_WORDS_PRESENT * considered:
    causes.append(f"the vocab seems made from other data: only {present} of its {considered} most "
                  "frequent words occur in these articles. Give the vocab of this data "
                  "(tools/make_vocab.py makes one).")
  if causes:
    # Each cause a sentence: those after the first begin with a capital.
    return " ".join([causes[0], *(cause[0].upper() + cause[1:] for cause in causes[1:])])
  recorded = (f", made with this tokenisation ({vocab_lib.tokenization_path(hps.vocab_path)} "
              "records it)," if same_tokenization and sidecar is not None else "")
  return (f"the vocab{recorded} holds too few of this data's words ({len(vocab)} entries): make "
          "it from more of the training data (tools/make_vocab.py).")


def _much_lower(other_rate, rate):
  """Whether `other_rate` is less than half of `rate` and OOV_MIN_GAIN below it."""
  return other_rate < rate / 2 and rate - other_rate >= OOV_MIN_GAIN


def _whole_vocab_rate(hps, vocab, sample, rate):
  """(entries, rate) of the whole vocab file when --vocab_size kept only its first entries and
  the whole file would leave much fewer tokens unknown than `rate`, else None. Read only when a
  message is due: the file may hold millions of words."""
  if not hps.vocab_size or len(vocab) < hps.vocab_size:
    return None  # the whole file was read
  whole = vocab_lib.Vocab.from_file(hps.vocab_path, 0)
  if len(whole) == len(vocab):
    return None
  whole_rate = sample.unknown_rate(whole, hps.reads)
  return (len(whole), whole_rate) if _much_lower(whole_rate, rate) else None
