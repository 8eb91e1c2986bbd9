import html.parser
import json
import pathlib
import re
import subprocess
import sys

import pytest

from helpers import REPO, load_tool

SCRIPT = REPO / "tools" / "attention_html.py"
CHROMIUM = "/usr/bin/chromium"

attention_html = load_tool("attention_html")


def _example(p_gens=True):
  data = {
      "article_lst": ["the", "__zorblat__", "firm", "said", "<b>", "profits", "rose", "."],
      "decoded_lst": ["__zorblat__", "profits", "rose", "sharply", "."],
      "abstract_str": "zorblat 's profits rose at AT&T . !!__kept__!! quiet .",
      "attn_dists": [
          [0.05, 0.80, 0.05, 0.02, 0.02, 0.02, 0.02, 0.02],
          [0.01, 0.02, 0.02, 0.03, 0.02, 0.85, 0.03, 0.02],
          [0.01, 0.01, 0.02, 0.02, 0.02, 0.02, 0.875, 0.025],
          [0.10, 0.10, 0.10, 0.10, 0.10, 0.10, 0.30, 0.10],
          [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
      ],
  }
  if p_gens:
    data["p_gens"] = [0.1, 0.25, 0.3, 0.9, 0.5]
  return data


def _embedded_numbers(page):
  match = re.search(r'<script type="application/json" id="attn-data">(.*?)</script>', page, re.S)
  return json.loads(match.group(1))


def test_render_escapes_text_and_marks_oovs():
  page = attention_html.render(_example())
  assert "&lt;b&gt;" in page and "<b>" not in page
  assert "AT&amp;T" in page
  # __zorblat__ is shown without its markers, underlined through the oov class.
  assert '<span class="art oov" title="OOV">zorblat</span>' in page
  assert re.search(r'<span class="dec oov" title="p_gen = 0\.100; OOV" data-step="0" '
                   r'style="[^"]*">zorblat</span>', page)
  assert "__zorblat__" not in page
  # An OOV of the reference that is not in the article, as the original marks it.
  assert '<span class="oov absent" title="OOV, not in the article">kept</span>' in page
  # Every article and summary word becomes one span, in order.
  assert re.findall(r'<span class="art[^"]*"[^>]*>([^<]*)</span>', page) == [
      "the", "zorblat", "firm", "said", "&lt;b&gt;", "profits", "rose", "."]
  assert re.findall(r'data-step="(\d+)"', page) == ["0", "1", "2", "3", "4"]


def test_render_embeds_attention_and_p_gens():
  data = _example()
  page = attention_html.render(data)
  assert _embedded_numbers(page) == {"attn_dists": data["attn_dists"], "p_gens": data["p_gens"]}
  assert 'title="p_gen = 0.900"' in page
  # p_gen 0.1 (copied) is shaded near orange (hue 40), p_gen 0.9 (generated) near green (hue 120).
  assert "hsl(48.0, 85%, 75%)" in page
  assert "hsl(112.0, 85%, 75%)" in page
  # Self-contained: nothing is fetched from elsewhere.
  assert not re.search(r'(src|href)=|https?://|@import', page)


def test_page_says_the_shading_is_relative_to_the_most_attended_word():
  page = attention_html.render(_example())
  statement = re.search(r'<span id="relative-shading">(.*?)</span>', page, re.S).group(1)
  assert " ".join(statement.split()) == (
      "The shading is relative to the most attended word of the step, which is fully shaded: "
      "it does not show how peaked the attention is (hover an article word for its value).")


def test_render_without_p_gens():
  page = attention_html.render(_example(p_gens=False))
  assert _embedded_numbers(page)["p_gens"] is None
  assert "p_gen =" not in page
  assert "baseline model" in page


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("attn_dists"), "missing key 'attn_dists'"),
    (lambda d: d.pop("abstract_str"), "missing key 'abstract_str'"),
    (lambda d: d["attn_dists"].pop(), "attn_dists has 4 rows but decoded_lst has 5 words"),
    (lambda d: d["attn_dists"][2].pop(), r"attn_dists\[2\] has 7 values but article_lst has 8"),
    (lambda d: d["attn_dists"][1].__setitem__(3, float("nan")),
     r"attn_dists\[1\]\[3\] = nan is not a finite number"),
    (lambda d: d["p_gens"].append(0.5), "p_gens has 6 values but decoded_lst has 5 words"),
    (lambda d: d["p_gens"].__setitem__(0, "high"), r"p_gens\[0\] = 'high' is not a finite"),
    (lambda d: d.__setitem__("article_lst", "the firm said"), "article_lst must be a list"),
])
def test_render_rejects_bad_input(change, message):
  data = _example()
  change(data)
  with pytest.raises(ValueError, match=f"^example.json: {message}"):
    attention_html.render(data, source="example.json")


def _run_script(*args):
  return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                        timeout=60, check=False)


@pytest.mark.slow
def test_script_writes_page_and_names_bad_file(tmp_path):
  good = tmp_path / "attn_vis_data.json"
  good.write_text(json.dumps(_example()), encoding="utf-8")
  out = tmp_path / "page.html"
  result = _run_script(f"--input={good}", f"--output={out}")
  assert result.returncode == 0, result.stderr
  assert out.read_text(encoding="utf-8") == attention_html.render(_example(), source=str(good))

  bad = tmp_path / "bad.json"
  data = _example()
  data["attn_dists"][0].append(0.0)
  bad.write_text(json.dumps(data), encoding="utf-8")
  result = _run_script(f"--input={bad}", f"--output={tmp_path / 'bad.html'}")
  assert result.returncode != 0
  assert f"{bad}: attn_dists[0] has 9 values but article_lst has 8 words" in result.stderr
  assert not (tmp_path / "bad.html").exists()

  broken = tmp_path / "broken.json"
  broken.write_text("{not json", encoding="utf-8")
  result = _run_script(f"--input={broken}", f"--output={out}")
  assert result.returncode != 0
  assert f"{broken}: not valid UTF-8 JSON" in result.stderr


def _chromium(tmp_path, *args):
  """Runs headless chromium isolated from the network, profile and GPU; returns stdout."""
  result = subprocess.run(
      [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
       "--no-first-run", "--disable-background-networking", "--disable-component-update",
       "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args],
      capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  return result.stdout


class _Spans(html.parser.HTMLParser):
  """Collects (attributes, text) of the article and summary word spans of a DOM dump."""

  def __init__(self, dom):
    super().__init__()
    self.article, self.decoded = [], []
    self._open = None
    self.feed(dom)

  def handle_starttag(self, tag, attrs):
    classes = (dict(attrs).get("class") or "").split()
    if tag == "span" and ("art" in classes or "dec" in classes):
      self._open = (self.article if "art" in classes else self.decoded, dict(attrs))

  def handle_data(self, data):
    if self._open:
      spans, attrs = self._open
      spans.append((attrs, data))
      self._open = None


def _alpha(style):
  # Browsers serialise alpha 1 as rgb(...) and store alpha in 1/255 steps.
  match = re.search(r"background-color: rgba?\(40, 110, 230(?:, ([0-9.]+))?\)", style or "")
  assert match, style
  return float(match.group(1) or 1.0)


def test_page_in_headless_chromium(tmp_path):
  if not pathlib.Path(CHROMIUM).exists():
    pytest.skip("chromium not installed; install with: apt-get install -y chromium")
  page = tmp_path / "page.html"
  page.write_text(attention_html.render(_example()), encoding="utf-8")
  # #step=2 pre-selects the summary word "rose", so the DOM holds the shading the script applied.
  dom = _chromium(tmp_path, "--dump-dom", page.as_uri() + "#step=2")
  assert "Step 2 «rose»: p_gen 0.300; most attended «rose» (0.875)" in dom
  spans = _Spans(dom)

  assert [text for _, text in spans.article] == [
      "the", "zorblat", "firm", "said", "<b>", "profits", "rose", "."]
  row = _example()["attn_dists"][2]
  # Alpha is attention / max attention; "rose" (0.875) is the maximum.
  assert [_alpha(attrs.get("style")) for attrs, _ in spans.article] == pytest.approx(
      [a / max(row) for a in row], abs=0.005)
  assert [attrs["title"] for attrs, _ in spans.article] == [f"attention {a:.4f}" for a in row]
  assert [("selected" in attrs["class"]) for attrs, _ in spans.decoded] == [
      False, False, True, False, False]

  # Without a step nothing is shaded.
  dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
  assert "Step 2" not in dom
  spans = _Spans(dom)
  assert len(spans.article) == 8
  assert all("style" not in attrs for attrs, _ in spans.article)
