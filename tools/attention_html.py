"""Turns decode's attention-visualisation JSON into one self-contained HTML page.

  python tools/attention_html.py --input=attn_vis_data.json --output=page.html

The page shows the reference, the decoded summary and the article. Hovering over a summary word
shades every article word by that decoder step's attention (blue, scaled so the most-attended word
is fully shaded); clicking pins the word. Summary words are shaded by p_gen: green when generated
from the vocabulary (p_gen near 1), orange when copied from the article (p_gen near 0); the value is
in the tooltip. OOV words, which decode writes as `__word__`, are shown without the underscores,
underlined with a dashed line. Opening the page as `page.html#step=3` pre-selects summary word 3
(counting from 0), which is how a headless browser can screenshot the shading.

Input keys: article_lst, decoded_lst (lists of words), abstract_str (the reference), attn_dists
(one list per decoded word, one float per article word) and, for the pointer-generator only,
p_gens (one float per decoded word). Optional, from a run whose text is written with some words
together (`--tokenizer=cjk`: no space between two CJK characters): decoded_separators and
article_separators, what goes before each word; without them, words are separated by spaces.
"""

import html
import json
import math
import re
import sys

from absl import app
from absl import flags
from pointer_gen import usage

FLAGS = flags.FLAGS
flags.DEFINE_string("input", "", "Attention-visualisation JSON written by decode mode.")
flags.DEFINE_string("output", "", "HTML file to write.")

# decode marks article OOVs as __word__; the original's reference string additionally marks OOVs
# that are not in the article (so cannot be copied) as !!__word__!!.
_OOV = re.compile(r"^__(.+)__$")
_OOV_ABSENT = re.compile(r"^!!__(.+)__!!$")

_CSS = """
body { font-family: Georgia, serif; margin: 2em auto; max-width: 60em; line-height: 1.9;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.3em; }
h2 { font-size: 1.05em; margin-bottom: 0.2em; font-family: sans-serif; }
.help, .legend, #status { font-family: sans-serif; font-size: 0.85em; color: #555; }
.legend .swatch { display: inline-block; padding: 0 0.5em; border-radius: 3px; }
.gradient { display: inline-block; width: 10em; height: 0.9em; vertical-align: middle;
            background: linear-gradient(to right, hsl(40, 85%, 75%), hsl(120, 85%, 75%)); }
.text span { padding: 0.1em 0.05em; border-radius: 3px; }
.oov { text-decoration: underline dashed #a00; text-underline-offset: 0.2em; }
.oov.absent { text-decoration-style: dotted; color: #a00; }
#decoded .dec { cursor: pointer; }
#decoded .dec.selected { outline: 2px solid #1a55c4; }
#status { min-height: 1.5em; }
"""

# Keeps all per-step work in the browser: the attention matrix travels once as JSON and each hover
# recolours the article spans rendered by Python, so the page reads fine without JavaScript too.
_JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("attn-data").textContent);
  var articleSpans = document.querySelectorAll("#article .art");
  var decodedSpans = document.querySelectorAll("#decoded .dec");
  var status = document.getElementById("status");
  var pinned = null;

  function show(step) {
    decodedSpans.forEach(function (span, i) { span.classList.toggle("selected", i === step); });
    if (step === null) {
      articleSpans.forEach(function (span) {
        span.style.backgroundColor = "";
        span.style.color = "";
        span.removeAttribute("title");
      });
      status.textContent = "";
      return;
    }
    var row = data.attn_dists[step];
    var best = 0;
    row.forEach(function (a, i) { if (a > row[best]) best = i; });
    var max = row.length ? row[best] : 0;
    articleSpans.forEach(function (span, i) {
      var alpha = max > 0 ? row[i] / max : 0;
      span.style.backgroundColor = "rgba(40, 110, 230, " + alpha.toFixed(3) + ")";
      span.style.color = alpha > 0.6 ? "#fff" : "";
      span.title = "attention " + row[i].toFixed(4);
    });
    var text = "Step " + step + " \\u00ab" + decodedSpans[step].textContent + "\\u00bb";
    if (data.p_gens) text += ": p_gen " + data.p_gens[step].toFixed(3);
    if (row.length) {
      text += "; most attended \\u00ab" + articleSpans[best].textContent + "\\u00bb (" +
          max.toFixed(3) + ")";
    }
    status.textContent = text;
  }

  function stepFromHash() {
    var match = /^#step=(\\d+)$/.exec(window.location.hash);
    var step = match ? parseInt(match[1], 10) : null;
    return step !== null && step < decodedSpans.length ? step : null;
  }

  var decoded = document.getElementById("decoded");
  decoded.addEventListener("mouseover", function (event) {
    var span = event.target.closest(".dec");
    if (span) show(parseInt(span.dataset.step, 10));
  });
  decoded.addEventListener("mouseleave", function () { show(pinned); });
  decoded.addEventListener("click", function (event) {
    var span = event.target.closest(".dec");
    if (!span) return;
    var step = parseInt(span.dataset.step, 10);
    pinned = pinned === step ? null : step;
    // replaceState keeps the pinned step in the URL (shareable) without a history entry per click.
    window.history.replaceState(null, "", pinned === null ? "#" : "#step=" + pinned);
    show(pinned);
  });
  window.addEventListener("hashchange", function () { pinned = stepFromHash(); show(pinned); });
  pinned = stepFromHash();
  show(pinned);
})();
"""


def _is_number(value):
  # bool is an int subclass but never a probability; NaN/inf would also break JSON.parse.
  return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_words(data, key, source):
  words = data[key]
  if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
    raise ValueError(f"{source}: {key} must be a list of strings")


def validate(data, source="attention data"):
  """Raises ValueError naming `source` and the problem if `data` cannot be rendered."""
  if not isinstance(data, dict):
    raise ValueError(f"{source}: expected a JSON object, got {type(data).__name__}")
  for key in ("article_lst", "decoded_lst", "abstract_str", "attn_dists"):
    if key not in data:
      raise ValueError(f"{source}: missing key {key!r}")
  _check_words(data, "article_lst", source)
  _check_words(data, "decoded_lst", source)
  if not isinstance(data["abstract_str"], str):
    raise ValueError(f"{source}: abstract_str must be a string")
  n_dec, n_art = len(data["decoded_lst"]), len(data["article_lst"])
  attn = data["attn_dists"]
  if not isinstance(attn, list) or len(attn) != n_dec:
    length = len(attn) if isinstance(attn, list) else type(attn).__name__
    raise ValueError(f"{source}: attn_dists has {length} rows but decoded_lst has {n_dec} words")
  for step, row in enumerate(attn):
    if not isinstance(row, list) or len(row) != n_art:
      length = len(row) if isinstance(row, list) else type(row).__name__
      raise ValueError(f"{source}: attn_dists[{step}] has {length} values but article_lst has "
                       f"{n_art} words")
    for i, value in enumerate(row):
      if not _is_number(value):
        raise ValueError(f"{source}: attn_dists[{step}][{i}] = {value!r} is not a finite number")
  for key, words in (("decoded_separators", "decoded_lst"), ("article_separators", "article_lst")):
    if key in data:
      _check_words(data, key, source)
      if len(data[key]) != len(data[words]):
        raise ValueError(f"{source}: {key} has {len(data[key])} entries but {words} has "
                         f"{len(data[words])} words")
  p_gens = data.get("p_gens")
  if p_gens is not None:
    if not isinstance(p_gens, list) or len(p_gens) != n_dec:
      length = len(p_gens) if isinstance(p_gens, list) else type(p_gens).__name__
      raise ValueError(f"{source}: p_gens has {length} values but decoded_lst has {n_dec} words")
    for step, value in enumerate(p_gens):
      if not _is_number(value):
        raise ValueError(f"{source}: p_gens[{step}] = {value!r} is not a finite number")


def _word(word, css_class, extra_attrs="", title=""):
  """One word as an escaped span, with OOV markers removed and turned into classes."""
  classes = [css_class] if css_class else []
  absent = _OOV_ABSENT.match(word)
  oov = absent or _OOV.match(word)
  if oov:
    word = oov.group(1)
    classes.append("oov absent" if absent else "oov")
    note = "OOV, not in the article" if absent else "OOV"
    title = f"{title}; {note}" if title else note
  attrs = f' class="{" ".join(classes)}"' if classes else ""
  if title:
    attrs += f' title="{html.escape(title)}"'
  return f"<span{attrs}{extra_attrs}>{html.escape(word)}</span>"


def _p_gen_colour(p_gen):
  # Hue 40 (orange, copied) to 120 (green, generated); clamped as float error can leave [0, 1].
  p_gen = min(max(p_gen, 0.0), 1.0)
  return f"hsl({40 + 80 * p_gen:.1f}, 85%, 75%)"


def _joined(spans, separators):
  """The spans with what goes before each (`separators`), or separated by spaces (None)."""
  if separators is None:
    return " ".join(spans)
  return "".join(html.escape(s) + span for s, span in zip(separators, spans))


def render(data, source="attention data"):
  """Returns the HTML page for one decoded example (see the module docstring for `data`)."""
  validate(data, source)
  p_gens = data.get("p_gens")
  decoded = []
  for step, word in enumerate(data["decoded_lst"]):
    extra = f' data-step="{step}"'
    title = ""
    if p_gens is not None:
      extra += f' style="background-color: {_p_gen_colour(p_gens[step])}"'
      title = f"p_gen = {p_gens[step]:.3f}"
    decoded.append(_word(word, "dec", extra, title))
  article = [_word(w, "art") for w in data["article_lst"]]
  reference = [_word(w, "") for w in data["abstract_str"].split()]
  if p_gens is not None:
    legend = ('<span class="swatch" style="background-color: hsl(40, 85%, 75%)">copied</span> '
              'p_gen 0 <span class="gradient"></span> 1 '
              '<span class="swatch" style="background-color: hsl(120, 85%, 75%)">generated'
              '</span>')
  else:
    legend = "No p_gens in the input (baseline model without the pointer): words are unshaded."
  # Only numbers go into the JSON block (validate checked them), so it cannot contain "</script>".
  numbers = json.dumps({"attn_dists": data["attn_dists"], "p_gens": p_gens}, allow_nan=False,
                       separators=(",", ":"))
  return f"""<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>Attention visualisation</title>
<style>{_CSS}</style>
</head>
<body>
<h1>Attention visualisation</h1>
<p class="help">Hover over a summary word to shade the article by that step's attention; click
to pin it (the address then ends in #step=N, which pre-selects word N, counting from 0).
<span id="relative-shading">The shading is relative to the most attended word of the step, which
is fully shaded: it does not show how peaked the attention is (hover an article word for its
value).</span>
<span class="oov">Underlined</span> words are out of the vocabulary.</p>
<h2>Reference summary</h2>
<p id="reference" class="text">{" ".join(reference)}</p>
<h2>Decoded summary</h2>
<p class="legend">{legend}</p>
<p id="decoded" class="text">{_joined(decoded, data.get("decoded_separators"))}</p>
<p id="status"></p>
<h2>Article</h2>
<p id="article" class="text">{_joined(article, data.get("article_separators"))}</p>
<script type="application/json" id="attn-data">{numbers}</script>
<script>{_JS}</script>
</body>
</html>
"""


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  if not FLAGS.input or not FLAGS.output:
    raise app.UsageError("--input and --output are required")
  try:
    with open(FLAGS.input, encoding="utf-8") as f:
      try:
        data = json.load(f)
      except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{FLAGS.input}: not valid UTF-8 JSON: {e}") from e
    page = render(data, source=FLAGS.input)
    with open(FLAGS.output, "w", encoding="utf-8") as f:
      f.write(page)
  except (OSError, ValueError) as e:
    sys.exit(f"attention_html: error: {e}")
  print(f"Wrote {FLAGS.output}")


if __name__ == "__main__":
  usage.run_tool(main)
