"""The interface of a decoding control, what it reads of the rows it controls, and the one way
a control zeroes probabilities."""

from typing import NamedTuple

import dataclasses

import tensorflow as tf

from pointer_gen.base import settings as settings_lib


class View(NamedTuple):
  """What a control may read of M decoder rows at one step."""
  step: tf.Tensor  # [M] int32: the row's step; its tokens before it are generated
  tokens: tf.Tensor  # [M, T] int32: the row's generated extended ids, [PAD] from `step` on


def zero_ids(values, ids, where):
  """values [M, W] with values[r, ids[r, b]] set to 0 where `where` [M, B] (ids [M, B] int32 in
  [0, W))."""
  rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))  # [M, B]
  found = tf.where(where)  # [P, 2]
  indices = tf.stack([tf.gather_nd(rows, found), tf.gather_nd(ids, found)], axis=1)  # [P, 2]
  return tf.tensor_scatter_nd_update(values, indices,
                                     tf.zeros([tf.shape(found)[0]], values.dtype))


@dataclasses.dataclass(frozen=True)
class ControlSettings(settings_lib.Settings):
  """A control's settings (its Control.Options): a settings.Settings, each field declared with
  settings.setting and named as the flag that sets it, that says whether it asks for the
  control and how it is written out."""

  @property
  def active(self):
    """Whether the settings ask for the control at all (off: the shared step skips it)."""
    raise NotImplementedError

  def written(self, constants=False):
    """{flag name: value} (constants: values a tf.constant holds) in the fields' order."""
    del constants  # the fields' own values are both
    return dataclasses.asdict(self)

  def dir_suffix(self):
    """What single-pass decode's directory name adds when the control is active."""
    return ""


class Control:
  """A decoding control: its settings (`Options`, a ControlSettings whose fields are its
  flags) and what it does to a step's final distribution. A subclass sets Options and
  implements `apply`; one that only zeroes a few known ids (at most `sparse` a
  row) implements `banned` instead, which the shared step applies to the top candidates
  without building the whole distribution.

  Probabilities are changed, never renormalised: the others keep their values, so a control
  that only forbids tokens leaves every other token's score as it was (the original's minimum
  length drops [STOP] so).
  """

  Options = ControlSettings
  # At most this many ids a row zeroed by `banned` (0: the control needs the whole distribution).
  sparse = 0

  def __init__(self, options, vocab=None):
    del vocab  # a control whose settings name words reads it
    self.options = options

  @classmethod
  def from_values(cls, values, vocab=None):
    """The control with its settings from `values` (a mapping; missing ones at their
    defaults)."""
    return cls(cls.Options.of(values), vocab)

  @property
  def active(self):
    return self.options.active

  def banned(self, view):
    """Sparse controls: the ids [M, sparse] int32 and whether each is banned [M, sparse]."""
    raise NotImplementedError

  def apply(self, dist, view):
    """dist [M, W] (the final distribution over the extended vocabulary) controlled."""
    return zero_ids(dist, *self.banned(view))

  def _key(self):
    return type(self), self.options

  def __eq__(self, other):
    return isinstance(other, Control) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"{type(self).__name__}({self.options})"
