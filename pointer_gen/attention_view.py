"""The attention of a decoded summary, as a record and as a picture.

The record (`record`) is what continuous decode writes as `attn_vis` JSON; the picture (`image`),
drawn with TensorFlow ops from a record, is eval's TensorBoard view of its samples: the same
record gives the same picture, pixel for pixel, whichever mode made it.

The picture is a heatmap with a row for each summary word and a column for each article token,
the words on its axes and each word's p_gen beside its row. In pixels: each heatmap cell is
CELL square; summary words are written left of their row, article tokens bottom to top above
their column, both cut to LABEL_CHARS characters (OOV words, which the record marks `__word__`,
in red without the marks; characters outside ASCII as `?`). A cell's blue grows with the square
root of its attention, from white at 0 to HEAT at 1, so that attention spread thin over many
tokens still shows; the top-left corner gives the largest attention in the picture. Right of
each row, a green bar as long as p_gen of BAR_WIDTH and its value (pointer-generator only).
"""

import numpy as np
import tensorflow as tf

from pointer_gen import bitmap_font
from pointer_gen import text

CELL = bitmap_font.CELL_HEIGHT  # a heatmap cell: one line of text high, and wide when turned
LABEL_CHARS = 12
LABEL_SIZE = LABEL_CHARS * bitmap_font.CELL_WIDTH  # the row labels' width, column labels' height
BAR_WIDTH = 40
_P_GEN_CHARS = 4  # "0.42"
_GAP = 4
P_GEN_WIDTH = _GAP + BAR_WIDTH + _GAP + _P_GEN_CHARS * bitmap_font.CELL_WIDTH

PAPER = (255, 255, 255)
INK = (0, 0, 0)
OOV_INK = (200, 0, 0)
HEAT = (8, 48, 140)  # attention 1; attention 0 is PAPER
BAR = (60, 150, 60)
BAR_BACKGROUND = (225, 225, 225)


def article_tokens(article, reads, max_enc_steps):
  """The tokens of `article` the model saw (strings): its first max_enc_steps, tokenised as
  `reads` (HParams.reads: (tokenizer, lowercase)) from only as much of it as they need, as
  data.article_features reads them."""
  tokens = text.tokenize_prefix(article, max_enc_steps, *reads)  # [<= max_enc_steps]
  return [t.decode("utf-8") for t in tokens.numpy()]


def record(summary, article, pointer_gen):
  """The attention record of a decode.Summary whose article's tokens are `article`
  (article_tokens). OOVs are marked `__word__`; a row for each summary word ([STOP] left out)."""
  result = {
      "article_lst": [f"__{w}__" if w in summary.oovs else w for w in article],
      "decoded_lst": [f"__{w}__" if w in summary.oovs else w for w in summary.words],
      "abstract_str": " ".join(summary.reference),
      "attn_dists": summary.attn[:len(summary.words)].tolist(),
  }
  if pointer_gen:
    result["p_gens"] = summary.p_gens[:len(summary.words)].tolist()
  return result


def _words(marked):
  """Words as the record has them -> (words without the OOV marks, [N] bool: OOV)."""
  oov = [len(w) > 4 and w.startswith("__") and w.endswith("__") for w in marked]
  return [w[2:-2] if o else w for w, o in zip(marked, oov)], oov


def _labels(words, oov):
  """uint8 [N, CELL, LABEL_SIZE, 3]: each of `words` (strings) in INK, OOV_INK where `oov`, on
  PAPER."""
  words = tf.reshape(tf.convert_to_tensor(words, tf.string), [len(oov)])  # [N]
  ink = bitmap_font.text_masks(words, LABEL_CHARS)  # [N, CELL, LABEL_SIZE]
  colours = tf.constant([OOV_INK if o else INK for o in oov], tf.uint8,
                        shape=[len(oov), 3])  # [N, 3]
  return tf.where(ink[..., None], colours[:, None, None, :], tf.constant(PAPER, tf.uint8))


def _corner(largest):
  """uint8 [LABEL_SIZE, LABEL_SIZE, 3]: the largest attention, written above the row labels."""
  lines = tf.stack(["largest", tf.strings.join(["attn ", tf.strings.as_string(largest,
                                                                              precision=3)])])
  text = _labels(lines, [False, False])  # [2, CELL, LABEL_SIZE, 3]
  text = tf.reshape(text, [2 * CELL, LABEL_SIZE, 3])
  blank = tf.fill([LABEL_SIZE - 2 * CELL, LABEL_SIZE, 3], tf.constant(255, tf.uint8))
  return tf.concat([blank, text], axis=0)


def _p_gen_panel(p_gens, rows):
  """uint8 [rows * CELL, P_GEN_WIDTH, 3]: each row's p_gen bar and value."""
  p_gens = tf.constant(p_gens, tf.float32, shape=[rows])  # [T]
  filled = tf.range(BAR_WIDTH)[None, :] < tf.cast(
      tf.round(p_gens * BAR_WIDTH), tf.int32)[:, None]  # [T, BAR_WIDTH]
  bar = tf.where(filled[..., None], tf.constant(BAR, tf.uint8),
                 tf.constant(BAR_BACKGROUND, tf.uint8))  # [T, BAR_WIDTH, 3]
  # One pixel of paper above and below each bar, so that rows stay apart.
  bar = tf.tile(bar[:, None], [1, CELL - 2, 1, 1])  # [T, CELL-2, BAR_WIDTH, 3]
  bar = tf.pad(bar, [[0, 0], [1, 1], [_GAP, _GAP], [0, 0]], constant_values=255)
  values = _labels(tf.strings.as_string(p_gens, precision=2), [False] * rows)
  values = values[:, :, :_P_GEN_CHARS * bitmap_font.CELL_WIDTH]  # [T, CELL, 24, 3]
  return tf.reshape(tf.concat([bar, values], axis=2), [rows * CELL, P_GEN_WIDTH, 3])


def _p_gen_header():
  """uint8 [LABEL_SIZE, P_GEN_WIDTH, 3]: "p_gen" above the bars."""
  label = _labels(tf.constant(["p_gen"]), [False])[0]  # [CELL, LABEL_SIZE, 3]
  label = tf.pad(label[:, :P_GEN_WIDTH - _GAP], [[LABEL_SIZE - CELL, 0], [_GAP, 0], [0, 0]],
                 constant_values=255)
  return label


def image(attention):
  """uint8 [height, width, 3]: the picture of an attention record, "article_lst" [L] and
  "decoded_lst" [T] (words, OOVs as `__word__`), "attn_dists" [T][L] and, for the
  pointer-generator, "p_gens" [T]. height = LABEL_SIZE + T * CELL; width = LABEL_SIZE +
  L * CELL, + P_GEN_WIDTH with p_gens."""
  summary, summary_oov = _words(attention["decoded_lst"])
  article, article_oov = _words(attention["article_lst"])
  rows, columns = len(summary), len(article)
  attn = tf.constant(np.asarray(attention["attn_dists"], np.float32).reshape(
      rows, columns))  # [T, L]
  largest = tf.reduce_max(tf.concat([tf.reshape(attn, [-1]), [0.0]], axis=0))
  shade = tf.sqrt(tf.clip_by_value(attn, 0.0, 1.0))  # [T, L]
  paper, heat = tf.constant(PAPER, tf.float32), tf.constant(HEAT, tf.float32)
  cells = tf.cast(tf.round(paper - shade[..., None] * (paper - heat)), tf.uint8)  # [T, L, 3]
  heatmap = tf.repeat(tf.repeat(cells, CELL, axis=0), CELL, axis=1)  # [T*CELL, L*CELL, 3]

  row_labels = tf.reshape(_labels(summary, summary_oov), [rows * CELL, LABEL_SIZE, 3])
  # Article tokens turned a quarter left: read bottom to top, each starting at its column.
  turned = tf.reverse(tf.transpose(_labels(article, article_oov), [0, 2, 1, 3]),
                      axis=[1])  # [L, LABEL_SIZE, CELL, 3]
  column_labels = tf.reshape(tf.transpose(turned, [1, 0, 2, 3]),
                             [LABEL_SIZE, columns * CELL, 3])
  top = [_corner(largest), column_labels]
  bottom = [row_labels, heatmap]
  if attention.get("p_gens") is not None:
    top.append(_p_gen_header())
    bottom.append(_p_gen_panel(attention["p_gens"], rows))
  return tf.concat([tf.concat(top, axis=1), tf.concat(bottom, axis=1)], axis=0)
