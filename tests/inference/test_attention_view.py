"""The attention picture: its size, margins, layout, colours and p_gen bars of
attention_view.image, its text's height and descenders at actual size, hand-checked pixels; and
the TensorBoard summaries written with core TensorFlow, read back."""

import types

import numpy as np
from PIL import Image
from PIL import ImageDraw
from PIL import ImageFont
import tensorflow as tf

from pointer_gen.base import tensorboard_log
from pointer_gen.inference import attention_view
from pointer_gen.inference import eval_samples

from helpers import events

CELL, LABEL, MARGIN = attention_view.CELL, attention_view.LABEL_SIZE, attention_view.MARGIN
CORNER = MARGIN + LABEL  # the heatmap's top-left pixel, down and across


def _record(p_gens=(0.5, 1.0)):
  record = {"article_lst": ["the", "__zorbl__", "mayor"],
            "decoded_lst": ["__zorbl__", "mayor"],
            "abstract_str": "zorbl is mayor .",
            # sqrt: 0.6, 0, 0.8 / 1, 0, 0 of the way from paper to HEAT
            "attn_dists": [[0.36, 0.0, 0.64], [1.0, 0.0, 0.0]]}
  if p_gens is not None:
    record["p_gens"] = list(p_gens)
  return record


def _ink(region):
  """bool [h, w]: the pixels that are not paper."""
  return np.any(region != 255, axis=2)


def _written(word, width, colour=attention_view.INK):
  """uint8 [CELL, width, 3]: `word` written as a label independently of attention_view: Pillow's
  bundled font at 13 px, from the top-left corner of a line of paper."""
  picture = Image.new("RGB", (width, CELL), (255, 255, 255))
  ImageDraw.Draw(picture).text((0, 0), word, font=ImageFont.load_default(size=13), fill=colour)
  return np.asarray(picture)


def test_the_picture_layout_margins_colours_and_p_gen_bars():
  pixels = attention_view.image(_record())
  assert pixels.dtype == np.uint8
  width = 2 * MARGIN + LABEL + 3 * CELL + attention_view.P_GEN_WIDTH
  assert pixels.shape == (2 * MARGIN + LABEL + 2 * CELL, width, 3)
  # Paper all round: nothing touches an edge (the p_gen values did).
  for edge in (pixels[:MARGIN], pixels[-MARGIN:], pixels[:, :MARGIN], pixels[:, -MARGIN:]):
    assert not _ink(edge).any()

  def cell(row, column):
    block = pixels[CORNER + row * CELL:CORNER + (row + 1) * CELL,
                   CORNER + column * CELL:CORNER + (column + 1) * CELL]
    colours = np.unique(block.reshape(-1, 3), axis=0)
    assert len(colours) == 1, (row, column)  # one colour a cell
    return tuple(colours[0])

  # 255 - s * (255 - HEAT), HEAT = (8, 48, 140): s = 0.6 -> 106.8, 130.8, 186 -> rounded.
  assert cell(0, 0) == (107, 131, 186)
  assert cell(0, 1) == cell(1, 1) == cell(1, 2) == (255, 255, 255)
  # s = 0.8 -> 57.4, 89.4, 163 -> rounded.
  assert cell(0, 2) == (57, 89, 163)
  assert cell(1, 0) == attention_view.HEAT

  # The summary's words left of their rows, as the font writes them: the OOV in red without
  # its marks, the other in black.
  label = LABEL - 4
  zorbl = pixels[CORNER:CORNER + CELL, MARGIN:MARGIN + label]
  mayor = pixels[CORNER + CELL:CORNER + 2 * CELL, MARGIN:MARGIN + label]
  np.testing.assert_array_equal(zorbl, _written("zorbl", label, attention_view.OOV_INK))
  np.testing.assert_array_equal(mayor, _written("mayor", label))
  # Between the labels and the heatmap, paper.
  assert not _ink(pixels[CORNER:CORNER + 2 * CELL, MARGIN + label:CORNER]).any()
  # The article's tokens above their columns, turned a quarter left (read bottom to top).
  column = pixels[MARGIN:MARGIN + label, CORNER + 2 * CELL:CORNER + 3 * CELL]  # "mayor"
  np.testing.assert_array_equal(np.rot90(column, k=-1), mayor)
  oov = pixels[MARGIN:MARGIN + label, CORNER + CELL:CORNER + 2 * CELL]
  np.testing.assert_array_equal(np.rot90(oov, k=-1), zorbl)
  # The corner: the largest attention, on the two lines above the first row.
  corner = pixels[CORNER - 4 - 2 * CELL:CORNER - 4, MARGIN:MARGIN + label]
  np.testing.assert_array_equal(corner[:CELL], _written("largest", label))
  np.testing.assert_array_equal(corner[CELL:], _written("attn 1.000", label))

  # p_gen: a bar of round(p_gen * 40) pixels after a gap, a pixel of paper above and below.
  gap, bar = 4, attention_view.BAR_WIDTH
  left = CORNER + 3 * CELL + gap
  for row, filled in ((0, 20), (1, 40)):
    line = pixels[CORNER + row * CELL + 3, left:left + bar]
    assert [tuple(p) for p in line] == ([attention_view.BAR] * filled
                                        + [attention_view.BAR_BACKGROUND] * (bar - filled))
    assert not _ink(pixels[CORNER + row * CELL:CORNER + row * CELL + 1, left:left + bar]).any()
  # Its value after the bar: "0.50" and "1.00", whole, before the margin.
  values = pixels[CORNER:CORNER + 2 * CELL, left + bar + gap:width - MARGIN]
  np.testing.assert_array_equal(values[:CELL], _written("0.50", values.shape[1]))
  np.testing.assert_array_equal(values[CELL:], _written("1.00", values.shape[1]))
  assert _ink(values[:, -3:]).any()  # the last digit's right edge: nothing cut off
  # "p_gen" above the bars.
  header = pixels[CORNER - 4 - CELL:CORNER - 4, left:width - MARGIN]
  np.testing.assert_array_equal(header, _written("p_gen", header.shape[1]))

  # The baseline's record has no p_gens: the same picture without the bars.
  baseline = attention_view.image(_record(p_gens=None))
  np.testing.assert_array_equal(baseline[:, :-MARGIN],
                                pixels[:, :CORNER + 3 * CELL])
  assert not _ink(baseline[:, -MARGIN:]).any()


def test_the_text_is_11_pixels_tall_with_descenders_inside_its_line():
  """At actual size: a capital or ascender reaches 11 px or more above the foot of a descender,
  and g, j, p, q, y go below the line other letters stand on, within the row."""
  record = {"article_lst": ["x"], "decoded_lst": ["Hill", "gypsy", "mama"],
            "attn_dists": [[1.0]] * 3}
  pixels = attention_view.image(record)

  def rows_inked(row):
    label = pixels[CORNER + row * CELL:CORNER + (row + 1) * CELL, MARGIN:CORNER]
    return np.flatnonzero(_ink(label).any(axis=1))  # the inked pixel rows, 0..CELL-1

  hill, gypsy, mama = rows_inked(0), rows_inked(1), rows_inked(2)
  baseline = hill[-1]  # H, i and l stand on it
  assert mama[-1] == baseline  # no descender: nothing below it
  assert gypsy[-1] >= baseline + 3  # descenders, 3 px or more below it
  assert gypsy[-1] < CELL  # inside the row: not cut, not in the next row
  assert gypsy[-1] - hill[0] + 1 >= 11  # capital top to descender foot
  assert baseline - hill[0] + 1 >= 9  # the capital alone


def test_an_empty_summary_draws_the_article_alone():
  record = {"article_lst": ["a", "b"], "decoded_lst": [], "attn_dists": [], "p_gens": []}
  assert attention_view.image(record).shape == (2 * MARGIN + LABEL, 2 * MARGIN + LABEL
                                                + 2 * CELL + attention_view.P_GEN_WIDTH, 3)


def test_text_pictures_and_scalars_written_with_core_tensorflow_read_back(tmp_path):
  pixels = tf.constant(attention_view.image(_record()))
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default():
    tensorboard_log.text("samples/text_0", "**bold** and *italics*", 7, "the text")
    tensorboard_log.image("samples/attention_0", pixels, 7, "the picture")
    tensorboard_log.scalar("samples/mean_length", 12.5, 7)
  writer.close()
  written = events.read_tensors(str(tmp_path))
  [(step, text, plugin)] = written["samples/text_0"]
  assert (step, text.item(), plugin) == (7, b"**bold** and *italics*", "text")
  [(step, image, plugin)] = written["samples/attention_0"]
  assert (step, plugin) == (7, "images")
  # The images plugin's layout: width, height, then the PNG.
  height, width, _ = pixels.shape
  assert list(image[:2]) == [str(width).encode(), str(height).encode()]
  np.testing.assert_array_equal(tf.io.decode_png(image[2]).numpy(), pixels.numpy())
  assert events.read_scalars(str(tmp_path)) == {"samples/mean_length": [(7, 12.5)]}


def test_sample_markdown_marks_copied_and_oov_words_and_escapes_the_text():
  assert eval_samples.escape("a*b_c|d<e&f [g](h) #1.") == (
      r"a\*b\_c\|d&lt;e&amp;f \[g\]\(h\) \#1\.")
  summary = types.SimpleNamespace(
      words=["zorbl", "said", "hello", "*"], oovs={"zorbl"}, reference=["zorbl said hi ."],
      p_gens=np.array([0.125, 0.5, 0.75, 0.875, 0.9]))  # the last: the [STOP] step
  article = ["zorbl", "said", "*", "."] * 20  # 80 tokens
  text = eval_samples.markdown(summary, article, pointer_gen=True).splitlines()
  # In the article: bold; OOV: italics too; the rest plain.
  assert text[2] == r"***zorbl*** **said** hello **\***"
  assert text[6] == r"zorbl said hi \."
  assert text[8] == "**Article** (its first 60 of 80 tokens)"
  assert text[10] == " ".join([r"*zorbl* said \* \."] * 15) + " …"
  assert text[12:] == ["| # | word | p_gen |", "|---:|---|---:|", "| 0 | ***zorbl*** | 0.125 |",
                       "| 1 | **said** | 0.500 |", "| 2 | hello | 0.750 |",
                       r"| 3 | **\*** | 0.875 |"]
  baseline = eval_samples.markdown(summary, article[:3], pointer_gen=False).splitlines()
  assert baseline[8] == "**Article** (3 tokens)" and "p_gen" not in "".join(baseline)
