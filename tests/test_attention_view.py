"""The attention picture: the bitmap font, the layout, colours and p_gen bars of
attention_view.image, hand-checked pixels; and the TensorBoard summaries written with core
TensorFlow, read back."""

import types

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import attention_view
from pointer_gen import bitmap_font
from pointer_gen import eval_samples
from pointer_gen import tensorboard_log

CELL, LABEL = attention_view.CELL, attention_view.LABEL_SIZE


def _glyph(char):
  """The glyph's rows as written in the table: [7, 5] bool."""
  return np.array([[p == "#" for p in row] for row in bitmap_font.GLYPHS[char].split()])


def test_the_font_has_every_printable_character_once():
  assert sorted(map(ord, bitmap_font.GLYPHS)) == list(range(32, 127))
  for char, rows in bitmap_font.GLYPHS.items():
    assert [len(row) for row in rows.split()] == [5] * 7, char
    assert set(rows) <= {"#", ".", " "}, char
  # No two characters look the same (the space is the only blank one).
  drawn = {rows.replace(" ", "") for rows in bitmap_font.GLYPHS.values()}
  assert len(drawn) == len(bitmap_font.GLYPHS)
  assert [c for c, rows in bitmap_font.GLYPHS.items() if "#" not in rows] == [" "]


def test_words_are_drawn_cell_by_cell_cut_to_fit_with_unknown_characters_as_question_marks():
  masks = bitmap_font.text_masks(tf.constant(["Ab", "épée 中", "abcdefgh", ""]), 4).numpy()
  assert masks.shape == (4, 8, 24)  # 4 cells of 6 x 8 pixels
  # Each character: its glyph top left in its cell, a blank row below and column right.
  first = masks[0]
  np.testing.assert_array_equal(first[:7, 0:5], _glyph("A"))
  np.testing.assert_array_equal(first[:7, 6:11], _glyph("b"))
  assert not first[7].any() and not first[:, 5].any() and not first[:, 11].any()
  assert not first[:, 12:].any()  # the cells after the word stay blank
  # é and 中 are outside ASCII: one ? each (a character, not its UTF-8 bytes).
  np.testing.assert_array_equal(masks[1], bitmap_font.text_masks(tf.constant(["?p?e"]), 4)[0])
  # Cut after 4 characters; an empty word is blank.
  np.testing.assert_array_equal(masks[2], bitmap_font.text_masks(tf.constant(["abcd"]), 4)[0])
  assert not masks[3].any()


def _record(p_gens=(0.5, 1.0)):
  record = {"article_lst": ["the", "__zorbl__", "mayor"],
            "decoded_lst": ["__zorbl__", "mayor"],
            "abstract_str": "zorbl is mayor .",
            # sqrt: 0.6, 0, 0.8 / 1, 0, 0 of the way from paper to HEAT
            "attn_dists": [[0.36, 0.0, 0.64], [1.0, 0.0, 0.0]]}
  if p_gens is not None:
    record["p_gens"] = list(p_gens)
  return record


def test_the_picture_layout_colours_and_p_gen_bars():
  pixels = attention_view.image(_record()).numpy()
  assert pixels.dtype == np.uint8
  assert pixels.shape == (LABEL + 2 * CELL, LABEL + 3 * CELL + attention_view.P_GEN_WIDTH, 3)

  def cell(row, column):
    block = pixels[LABEL + row * CELL:LABEL + (row + 1) * CELL,
                   LABEL + column * CELL:LABEL + (column + 1) * CELL]
    colours = np.unique(block.reshape(-1, 3), axis=0)
    assert len(colours) == 1, (row, column)  # one colour a cell
    return tuple(colours[0])

  # 255 - s * (255 - HEAT), HEAT = (8, 48, 140): s = 0.6 -> 106.8, 130.8, 186 -> rounded.
  assert cell(0, 0) == (107, 131, 186)
  assert cell(0, 1) == cell(1, 1) == cell(1, 2) == (255, 255, 255)
  # s = 0.8 -> 57.4, 89.4, 163 -> rounded.
  assert cell(0, 2) == (57, 89, 163)
  assert cell(1, 0) == attention_view.HEAT

  # The summary's words left of their rows: the OOV in red without its marks, the other in
  # black; each as the font draws it.
  def ink(region):
    return {tuple(c) for c in region.reshape(-1, 3)} - {attention_view.PAPER}

  zorbl = pixels[LABEL:LABEL + CELL, :LABEL]
  mayor = pixels[LABEL + CELL:LABEL + 2 * CELL, :LABEL]
  assert ink(zorbl) == {attention_view.OOV_INK} and ink(mayor) == {attention_view.INK}
  words = bitmap_font.text_masks(tf.constant(["zorbl", "mayor"]), attention_view.LABEL_CHARS)
  np.testing.assert_array_equal(np.any(zorbl != 255, axis=2), words[0])
  np.testing.assert_array_equal(np.any(mayor != 255, axis=2), words[1])
  # The article's tokens above their columns, turned a quarter left (read bottom to top).
  column = pixels[:LABEL, LABEL + 2 * CELL:LABEL + 3 * CELL]  # "mayor"
  np.testing.assert_array_equal(np.rot90(np.any(column != 255, axis=2), k=-1), words[1])
  assert ink(pixels[:LABEL, LABEL + CELL:LABEL + 2 * CELL]) == {attention_view.OOV_INK}

  # p_gen: a bar of round(p_gen * 40) pixels after a gap, on rows 1-6 of the word's row.
  gap, bar = 4, attention_view.BAR_WIDTH
  left = LABEL + 3 * CELL + gap
  for row, filled in ((0, 20), (1, 40)):
    line = pixels[LABEL + row * CELL + 3, left:left + bar]
    assert [tuple(p) for p in line] == ([attention_view.BAR] * filled
                                        + [attention_view.BAR_BACKGROUND] * (bar - filled))
    assert ink(pixels[LABEL + row * CELL, left:left + bar]) == set()
  # Its value after the bar: "0.50" and "1.00".
  values = np.any(pixels[LABEL:, left + bar + gap:] != 255, axis=2)  # [2 * CELL, 24]
  np.testing.assert_array_equal(
      values.reshape(2, CELL, 24), bitmap_font.text_masks(tf.constant(["0.50", "1.00"]), 4))

  # The baseline's record has no p_gens: the same picture without the bars.
  baseline = attention_view.image(_record(p_gens=None)).numpy()
  np.testing.assert_array_equal(baseline, pixels[:, :LABEL + 3 * CELL])


def test_an_empty_summary_draws_the_article_alone():
  record = {"article_lst": ["a", "b"], "decoded_lst": [], "attn_dists": [], "p_gens": []}
  assert attention_view.image(record).shape == (LABEL, LABEL + 2 * CELL +
                                                attention_view.P_GEN_WIDTH, 3)


def test_text_pictures_and_scalars_written_with_core_tensorflow_read_back(tmp_path):
  pixels = attention_view.image(_record())
  writer = tf.summary.create_file_writer(str(tmp_path))
  with writer.as_default():
    tensorboard_log.text("samples/text_0", "**bold** and *italics*", 7, "the text")
    tensorboard_log.image("samples/attention_0", pixels, 7, "the picture")
    tensorboard_log.scalar("samples/mean_length", 12.5, 7)
  writer.close()
  events = tensorboard_log.read_tensors(str(tmp_path))
  [(step, text, plugin)] = events["samples/text_0"]
  assert (step, text.item(), plugin) == (7, b"**bold** and *italics*", "text")
  [(step, image, plugin)] = events["samples/attention_0"]
  assert (step, plugin) == (7, "images")
  # The images plugin's layout: width, height, then the PNG.
  height, width, _ = pixels.shape
  assert list(image[:2]) == [str(width).encode(), str(height).encode()]
  np.testing.assert_array_equal(tf.io.decode_png(image[2]).numpy(), pixels.numpy())
  assert tensorboard_log.read_scalars(str(tmp_path)) == {"samples/mean_length": [(7, 12.5)]}


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
