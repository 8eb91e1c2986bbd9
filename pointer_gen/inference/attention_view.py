"""The attention of a decoded summary, as a record and as a picture.

The record (`record`) is what continuous decode writes as `attn_vis` JSON; the picture (`image`),
drawn from a record, is eval's TensorBoard view of its samples: the same record gives the same
picture, pixel for pixel, whichever mode made it.

The picture is a heatmap with a row for each summary word and a column for each article token,
the words on its axes and each word's p_gen beside its row, inside a MARGIN of paper. In pixels:
each heatmap cell is CELL square, one line of text high; summary words are written left of their
row, article tokens bottom to top above their column, each cut to the LABEL_SIZE it has (OOV
words, which the record marks `__word__`, in red without the marks). The text is Pillow's bundled
font (ImageFont.load_default) at FONT_SIZE: its capitals and ascenders over 11 px to the foot of
its descenders, which sit inside the line. A cell's blue grows with the square root of its
attention, from white at 0 to HEAT at 1, so that attention spread thin over many tokens still
shows; the top-left corner gives the largest attention in the picture. Right of each row, a
green bar as long as p_gen of BAR_WIDTH and its value (pointer-generator only).
"""

import numpy as np
from PIL import Image
from PIL import ImageDraw
from PIL import ImageFont

from pointer_gen.text import tokenizers as text

FONT_SIZE = 13
_FONT = ImageFont.load_default(size=FONT_SIZE)
_ASCENT, _DESCENT = _FONT.getmetrics()
CELL = _ASCENT + _DESCENT  # a heatmap cell: one line of text high, and wide when turned
MARGIN = 8  # paper around the picture
_GAP = 4  # paper between a label and what it names, and around the p_gen bars
LABEL_SIZE = 124  # the row labels' width and the column labels' height, their gap included
BAR_WIDTH = 40
_P_GEN_TEXT = int(np.ceil(_FONT.getlength("0.00")))
P_GEN_WIDTH = _GAP + BAR_WIDTH + _GAP + _P_GEN_TEXT

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


def record(summary, article, pointer_gen, tokenizer="whitespace"):
  """The attention record of a summaries.DecodedSummary whose article's tokens are `article`
  (article_tokens). OOVs are marked `__word__`; a row for each summary word ([STOP] left out).
  `tokenizer`: the run's raw tokenizer; for one whose text for people writes some tokens
  without a space between (text.written: cjk), the reference is written so, and the record
  holds what goes before each summary word and article token (`decoded_separators`,
  `article_separators`), for tools/attention_html.py."""
  result = {
      "article_lst": [f"__{w}__" if w in summary.oovs else w for w in article],
      "decoded_lst": [f"__{w}__" if w in summary.oovs else w for w in summary.words],
      "abstract_str": text.written_sentences(summary.reference, tokenizer),
      "attn_dists": summary.attn[:len(summary.words)].tolist(),
  }
  if pointer_gen:
    result["p_gens"] = summary.p_gens[:len(summary.words)].tolist()
  if text.writes_together(tokenizer):
    result["decoded_separators"] = text.separators_of(summary.words, tokenizer)
    result["article_separators"] = text.separators_of(article, tokenizer)
  return result


def _words(marked):
  """Words as the record has them -> (words without the OOV marks, [N] bool: OOV)."""
  oov = [len(w) > 4 and w.startswith("__") and w.endswith("__") for w in marked]
  return [w[2:-2] if o else w for w, o in zip(marked, oov)], oov


def _fitted(word, width):
  """`word` cut to the longest start of it that the font writes in `width` pixels."""
  end = len(word)
  while end and _FONT.getlength(word[:end]) > width:
    end -= 1
  return word[:end]


def _label(word, width, colour):
  """A PIL picture of one line of text, `width` x CELL: `word` cut to fit, from its left edge,
  its descenders inside the line."""
  picture = Image.new("RGB", (width, CELL), PAPER)
  ImageDraw.Draw(picture).text((0, 0), _fitted(word, width), font=_FONT, fill=colour)
  return picture


def _heatmap(attn):
  """uint8 [T * CELL, L * CELL, 3] of the attention [T, L]."""
  shade = np.sqrt(np.clip(attn, 0.0, 1.0))  # [T, L]
  paper, heat = np.array(PAPER, np.float32), np.array(HEAT, np.float32)
  cells = np.round(paper - shade[..., None] * (paper - heat)).astype(np.uint8)  # [T, L, 3]
  return np.repeat(np.repeat(cells, CELL, axis=0), CELL, axis=1)


def _p_gen_bars(p_gens):
  """uint8 [T * CELL, BAR_WIDTH, 3]: each row's bar, a pixel of paper above and below."""
  filled = np.arange(BAR_WIDTH)[None, :] < np.round(
      np.asarray(p_gens, np.float32) * BAR_WIDTH)[:, None]  # [T, BAR_WIDTH]
  bars = np.where(filled[..., None], np.array(BAR, np.uint8),
                  np.array(BAR_BACKGROUND, np.uint8))  # [T, BAR_WIDTH, 3]
  rows = np.repeat(bars[:, None], CELL, axis=1)  # [T, CELL, BAR_WIDTH, 3]
  rows[:, [0, -1]] = PAPER
  return rows.reshape(-1, BAR_WIDTH, 3)


def image(attention):
  """uint8 [height, width, 3]: the picture of an attention record, "article_lst" [L] and
  "decoded_lst" [T] (words, OOVs as `__word__`), "attn_dists" [T][L] and, for the
  pointer-generator, "p_gens" [T]. height = 2 * MARGIN + LABEL_SIZE + T * CELL; width =
  2 * MARGIN + LABEL_SIZE + L * CELL, + P_GEN_WIDTH with p_gens."""
  summary, summary_oov = _words(attention["decoded_lst"])
  article, article_oov = _words(attention["article_lst"])
  rows, columns = len(summary), len(article)
  p_gens = attention.get("p_gens")
  width = 2 * MARGIN + LABEL_SIZE + columns * CELL + (P_GEN_WIDTH if p_gens is not None else 0)
  picture = Image.new("RGB", (width, 2 * MARGIN + LABEL_SIZE + rows * CELL), PAPER)
  top = left = MARGIN + LABEL_SIZE  # the heatmap's corner
  attn = np.asarray(attention["attn_dists"], np.float32).reshape(rows, columns)  # [T, L]
  if rows and columns:
    picture.paste(Image.fromarray(_heatmap(attn)), (left, top))
  label_width = LABEL_SIZE - _GAP
  for row, (word, oov) in enumerate(zip(summary, summary_oov)):
    picture.paste(_label(word, label_width, OOV_INK if oov else INK),
                  (MARGIN, top + row * CELL))
  # Article tokens turned a quarter left: read bottom to top, each starting at its column's foot.
  for column, (word, oov) in enumerate(zip(article, article_oov)):
    turned = _label(word, label_width, OOV_INK if oov else INK).transpose(Image.ROTATE_90)
    picture.paste(turned, (left + column * CELL, MARGIN))
  largest = float(attn.max()) if attn.size else 0.0
  for line, words in enumerate(("largest", f"attn {largest:.3f}")):
    picture.paste(_label(words, label_width, INK),
                  (MARGIN, top - _GAP - (2 - line) * CELL))
  if p_gens is not None:
    right = left + columns * CELL  # the p_gen panel's left edge
    picture.paste(_label("p_gen", P_GEN_WIDTH - _GAP, INK), (right + _GAP, top - _GAP - CELL))
    if rows:
      picture.paste(Image.fromarray(_p_gen_bars(p_gens)), (right + _GAP, top))
    for row, p_gen in enumerate(p_gens):
      picture.paste(_label(f"{p_gen:.2f}", _P_GEN_TEXT, INK),
                    (right + 2 * _GAP + BAR_WIDTH, top + row * CELL))
  return np.asarray(picture)
