"""A repetition penalty (`--repetition_penalty`, Hugging Face's RepetitionPenaltyLogitsProcessor
on the final distribution): each token its row has already generated gets its log-probability
multiplied by the penalty (Hugging Face's rule for a negative score), so its probability p
becomes p ** penalty; other tokens keep theirs (as Hugging Face's beam search, no
renormalisation: sampling renormalises what it draws from anyway)."""

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib
from pointer_gen.search.controls import base


@dataclasses.dataclass(frozen=True)
class RepetitionPenaltySettings(base.ControlSettings):
  repetition_penalty: float = settings_lib.setting(
      1.0, "Decoding control (every --search), off at 1: the probability p of a token the "
      "summary already holds becomes p ** penalty.", settings_lib.at_least(1.0),
      example=2.0)

  @property
  def active(self):
    return self.repetition_penalty != 1.0

  def dir_suffix(self):
    return f"_reppen{self.repetition_penalty:g}"


def generated(tokens, step, width):
  """[M, W] bool: the ids among each row's tokens [M, T] before its step [M]."""
  rows, total = tf.shape(tokens)[0], tf.shape(tokens)[1]
  valid = tf.range(total)[None, :] < step[:, None]  # [M, T]
  found = tf.where(valid)  # [P, 2]
  indices = tf.stack([found[:, 0], tf.cast(tf.gather_nd(tokens, found), tf.int64)], axis=1)
  return tf.scatter_nd(indices, tf.ones([tf.shape(found)[0]], tf.int32),
                       tf.cast(tf.stack([rows, width]), tf.int64)) > 0  # [M, W]


class RepetitionPenalty(base.Control):
  Options = RepetitionPenaltySettings

  def apply(self, dist, view):
    seen = generated(view.tokens, view.step, tf.shape(dist)[1])  # [M, W]
    return tf.where(seen, tf.pow(dist, self.options.repetition_penalty), dist)

