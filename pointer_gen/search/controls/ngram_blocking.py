"""N-gram blocking (`--block_ngram_repeat=n`, OpenNMT-py's -block_ngram_repeat): a token that
would complete an n-gram the row has already generated has probability 0, so no summary
repeats an n-gram; with `--ignore_when_blocking` (a comma-separated list of words, as
OpenNMT-py's -ignore_when_blocking, e.g. `.`), an n-gram holding one of those words may
repeat."""

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib
from pointer_gen.base.errors import DataError
from pointer_gen.search.controls import base


@dataclasses.dataclass(frozen=True)
class BlockingSettings(base.ControlSettings):
  block_ngram_repeat: int = settings_lib.setting(
      0, "Decoding control (every --search), off by default: forbid a summary to repeat any of "
      "its n-grams of this length.", settings_lib.at_least(0), metrics_after="rouge_tokenizer",
      example=2)
  ignore_when_blocking: str = settings_lib.setting(
      "", "With --block_ngram_repeat: a comma-separated list of words (e.g. `.`) whose n-grams "
      "may repeat.", example=".")

  def __post_init__(self):
    super().__post_init__()
    if self.ignore_when_blocking and not self.block_ngram_repeat:
      raise DataError(f"--ignore_when_blocking={self.ignore_when_blocking}: applies only with "
                      "--block_ngram_repeat > 0")

  @property
  def exempt_words(self):
    return tuple(word for word in self.ignore_when_blocking.split(",") if word)

  @property
  def active(self):
    return self.block_ngram_repeat > 0

  def dir_suffix(self):
    return f"_block{self.block_ngram_repeat}gram"


def repeating(tokens, step, n, exempt=()):
  """Where each row would repeat an n-gram: the ids [M, J] that would complete one of its
  earlier n-grams (J = T - n + 1, one per start) and whether each does [M, J] bool, for tokens
  [M, T] generated before `step` [M]; an n-gram holding an id of `exempt` never counts. None if
  T < n."""
  total = tokens.shape[1]
  if total is None or total < n:
    return None
  starts = total - n + 1
  # An earlier n-gram starting at j is complete before this step if j + n - 1 <= step - 1.
  match = tf.range(starts)[None, :] <= (step - n)[:, None]  # [M, J]
  for i in range(n - 1):
    # [M]: the (n-1)-token prefix the step would extend
    recent = tf.gather(tokens, tf.maximum(step - n + 1 + i, 0), batch_dims=1)
    match &= tf.equal(tokens[:, i:starts + i], recent[:, None])  # [M, J]
  if exempt:
    is_exempt = tf.reduce_any(tokens[:, :, None] == tf.constant(exempt, tokens.dtype),
                              axis=2)  # [M, T]
    for i in range(n):
      match &= ~is_exempt[:, i:starts + i]  # [M, J]
  return tokens[:, n - 1:], match


class NgramBlocking(base.Control):
  Options = BlockingSettings

  def __init__(self, options, vocab=None):
    super().__init__(options)
    words = options.exempt_words
    if words and vocab is None:
      raise ValueError("--ignore_when_blocking needs the vocabulary")
    unknown = [word for word in words if vocab.id2word(vocab.word2id(word)) != word]
    if unknown:
      raise DataError(f"--ignore_when_blocking={options.ignore_when_blocking}: "
                      f"{', '.join(unknown)} not in the vocabulary")
    self.exempt = tuple(sorted(vocab.word2id(word) for word in words)) if words else ()

  def apply(self, dist, view):
    found = repeating(view.tokens, view.step, self.options.block_ngram_repeat, self.exempt)
    return dist if found is None else base.zero_ids(dist, *found)

  def _key(self):
    return super()._key() + (self.exempt,)
