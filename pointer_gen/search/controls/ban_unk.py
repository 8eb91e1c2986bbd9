"""Banning [UNK] (`--ban_unk`, OpenNMT-py's -ban_unk_token): [UNK] has probability 0 at every
step, whether generated or copied from an article word the vocabulary lacks (without
--pointer_gen every such word is [UNK])."""

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib
from pointer_gen.search.controls import base
from pointer_gen.text import vocab as vocab_lib


@dataclasses.dataclass(frozen=True)
class BanUnkSettings(base.ControlSettings):
  ban_unk: bool = settings_lib.setting(
      False, "Decoding control (every --search), off by default: never put [UNK] in a summary.",
      example=True)

  @property
  def active(self):
    return self.ban_unk

  def dir_suffix(self):
    return "_banunk"


class BanUnk(base.Control):
  Options = BanUnkSettings
  sparse = 1

  def banned(self, view):
    rows = tf.shape(view.step)[0]
    return tf.fill([rows, 1], vocab_lib.UNK_ID), tf.ones([rows, 1], tf.bool)  # [M, 1] each

