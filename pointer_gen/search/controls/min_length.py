"""Minimum length (`--min_dec_steps`): [STOP] has probability 0 before that step, so no
strategy ends a summary earlier. The original's rule (its beam search drops a [STOP] candidate
before min_dec_steps): as the other tokens keep their probabilities, a beam search's results
are the original's."""

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib
from pointer_gen.search.controls import base
from pointer_gen.text import vocab as vocab_lib


@dataclasses.dataclass(frozen=True)
class MinLengthSettings(base.ControlSettings):
  min_dec_steps: int = settings_lib.setting(
      35, "Minimum generated length when decoding (every --search): [STOP] is not taken "
      "before this step.", settings_lib.at_least(0), example=3)

  @property
  def active(self):
    return self.min_dec_steps > 0


class MinLength(base.Control):
  Options = MinLengthSettings
  sparse = 1

  def banned(self, view):
    ids = tf.fill([tf.shape(view.step)[0], 1], vocab_lib.STOP_ID)  # [M, 1]
    return ids, (view.step < self.options.min_dec_steps)[:, None]
