"""README.md and docs/*.md against the code: every command line they show parses, every `--flag`
they name is a flag of its command, every relative link and named repository file exists.

Docs that name a flag which was renamed, or a file which was moved, send a newcomer's first
command into an error; this test makes such a change fail the suite instead.
"""

import re
import shlex

from absl import flags
import pytest

from helpers import REPO

# Flags absl defines for every program (absl.flags and absl.logging).
ABSL_FLAGS = frozenset({
    "flagfile", "undefok", "help", "helpfull", "helpshort", "helpxml", "only_check_args", "pdb",
    "pdb_post_mortem", "run_with_pdb", "run_with_profiling", "profile_file",
    "use_cprofile_for_profiling",
    "logtostderr", "alsologtostderr", "log_dir", "verbosity", "v", "stderrthreshold",
    "showprefixforinfo", "logger_levels", "log_every_n", "test_srcdir", "test_tmpdir"})

_RUN_COMMAND = "python -m pointer_gen.run"
# A command line in a code block: the project's entry point or one of its tools.
_COMMAND = re.compile(r"python -m pointer_gen\.run\b|python tools/(?:dev/)?\w+\.py\b")
# A flag named in running text, in backticks: `--name` or `--name=value` (absl's style, with
# underscores: pip's and pytest's hyphenated options do not match).
_PROSE_FLAG = re.compile(r"`(--[a-z][a-z0-9_]*)(?:=[^`]*)?`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A repository file named in backticks: a path under one of the project's top-level folders.
_REPO_PATH = re.compile(r"`((?:pointer_gen|tools|flags|tests|docs|\.ci)/[\w./-]*\w)`")
_DEFINE = re.compile(r"DEFINE_\w+\(\s*[\"'](\w+)[\"']")


def doc_files():
  return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _code_lines(markdown):
  """The lines of code blocks (four-space indented or fenced), continuation lines joined."""
  lines, fenced, pending = [], False, ""
  for line in markdown.splitlines():
    if line.lstrip().startswith("```"):
      fenced = not fenced
      continue
    if not (fenced or line.startswith("    ")) and not pending:
      continue
    line = pending + line.strip()
    if line.endswith("\\"):
      pending = line[:-1] + " "
      continue
    pending = ""
    lines.append(line)
  return lines


def commands(markdown):
  """(program, arguments) of every project command in the code blocks: program is
  "pointer_gen.run" or "tools/<name>.py"; arguments stop at a shell operator or comment."""
  found = []
  for line in _code_lines(markdown):
    for match in _COMMAND.finditer(line):
      program = ("pointer_gen.run" if match.group().startswith(_RUN_COMMAND)
                 else match.group().split()[-1])
      args = []
      for token in shlex.split(line[match.end():], comments=True):
        if token in ("&&", "||", "|", ";", ">", "2>", "&"):
          break
        args.append(token)
      found.append((program, args))
  return found


def flag_name(arg):
  """The flag an argument sets (`--name=v`, `--name`, `--noname` -> name), or None."""
  if not arg.startswith("--") or arg == "--":
    return None
  return arg[2:].split("=", 1)[0]


def _tool_flags(path):
  """The flags a tool defines: its own DEFINE_* calls, plus the project's when it defines them."""
  source = path.read_text()
  names = set(_DEFINE.findall(source))
  if "config.define_flags()" in source:
    from absl import flags  # pylint: disable=g-import-not-at-top
    from pointer_gen import run  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    from pointer_gen import usage  # pylint: disable=g-import-not-at-top
    names |= {flag.name for flag in usage.project_flags(flags.FLAGS)}
  return names


def _known(name, defined):
  return (name in defined or name in ABSL_FLAGS
          or (name.startswith("no") and name[2:] in defined))


def problems(markdown, doc_dir, run_flags):
  """What is wrong in one markdown text, as readable lines. `run_flags` parses the arguments of
  one `python -m pointer_gen.run` line (raising on a bad one) and returns the project's flag
  names (absl's own are known anyway; TensorFlow's and the tools' are not the entry point's)."""
  found = []
  run_names = run_flags([])
  all_flags = set(run_names)
  for program, args in commands(markdown):
    if program == "pointer_gen.run":
      unknown = [name for name in filter(None, map(flag_name, args))
                 if not _known(name, run_names)]
      found += [f"`{_RUN_COMMAND}`: --{name} is not a flag of pointer_gen.run" for name in unknown]
      try:
        if not unknown:
          run_flags(args)
      except (flags.Error, ValueError) as e:
        found.append(f"`{_RUN_COMMAND} {' '.join(args)}` does not parse: {e}")
      continue
    tool = REPO / program
    if not tool.is_file():
      found.append(f"`python {program}`: no such tool")
      continue
    defined = _tool_flags(tool)
    all_flags |= defined
    for name in filter(None, map(flag_name, args)):
      if not _known(name, defined):
        found.append(f"`python {program}`: --{name} is not a flag of {program}")
  for tool in (REPO / "tools").rglob("*.py"):
    all_flags |= _tool_flags(tool)
  for flag in _PROSE_FLAG.findall(markdown):
    if not _known(flag[2:], all_flags):
      found.append(f"`{flag}` is not a flag of the project or its tools")
  for target in _LINK.findall(markdown):
    if re.match(r"[a-z]+:", target) or target.startswith("#"):
      continue
    if not (doc_dir / target.split("#", 1)[0]).exists():
      found.append(f"link to {target}: no such file")
  for path in _REPO_PATH.findall(markdown):
    if not any(c in path for c in "*<>{}") and not (REPO / path).exists():
      found.append(f"`{path}`: no such file in the repository")
  return found


@pytest.fixture(scope="module")
def run_flags(monkeypatch_module):
  """Parses `python -m pointer_gen.run` arguments with the entry point's own flags, from the
  repository root (where the docs' --flagfile=flags/... paths are relative to)."""
  from pointer_gen import run  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from pointer_gen import usage  # pylint: disable=g-import-not-at-top
  monkeypatch_module.chdir(REPO)
  names = {flag.name for flag in usage.project_flags(flags.FLAGS)}

  def parse(args):
    flags.FLAGS.unparse_flags()
    try:
      flags.FLAGS(["run", *args])
    finally:
      flags.FLAGS.unparse_flags()
    return names
  return parse


@pytest.fixture(scope="module")
def monkeypatch_module():
  with pytest.MonkeyPatch.context() as patch:
    yield patch


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_docs_match_the_code(doc, run_flags):
  assert problems(doc.read_text(), doc.parent, run_flags) == []


def test_every_docs_file_is_linked_from_the_readme():
  readme = (REPO / "README.md").read_text()
  linked = {(REPO / target.split("#", 1)[0]).resolve() for target in _LINK.findall(readme)}
  assert [p.name for p in doc_files()[1:] if p.resolve() not in linked] == []


def test_planted_mistakes_are_reported(run_flags, tmp_path):
  planted = "\n".join([
      "Run it:",
      "",
      "    python -m pointer_gen.run --mode=train \\",
      "        --max_enc_step=400 --flagfile=flags/demo.cfg",
      "    python -m pointer_gen.run --mode=sing",
      "    python tools/make_vocab.py --output=vocab --vocab_sizes=3",
      "    python tools/no_such_tool.py --x=1",
      "",
      "Set `--coverage` and `--beam_sizes=4`; `--nopointer_gen` and `--helpfull` exist.",
      "See [the recipe](docs/no_such_page.md), [ok](../README.md) and `tools/gone.py`.",
  ])
  (tmp_path / "docs").mkdir()
  (tmp_path / "README.md").write_text("[up](../README.md)\n")
  found = problems(planted, tmp_path / "docs", run_flags)
  assert len(found) == 7, found
  assert found[0] == "`python -m pointer_gen.run`: --max_enc_step is not a flag of pointer_gen.run"
  assert found[1].startswith("`python -m pointer_gen.run --mode=sing` does not parse: ")
  assert "value should be one of <train|eval|decode|export>" in found[1]
  assert found[2] == ("`python tools/make_vocab.py`: --vocab_sizes is not a flag of "
                      "tools/make_vocab.py")
  assert found[3] == "`python tools/no_such_tool.py`: no such tool"
  assert found[4] == "`--beam_sizes` is not a flag of the project or its tools"
  assert found[5] == "link to docs/no_such_page.md: no such file"
  assert found[6] == "`tools/gone.py`: no such file in the repository"


def test_command_lines_are_read_from_code_blocks_only():
  markdown = "\n".join([
      "Prose mentioning python -m pointer_gen.run --not_parsed is not a command.",
      "",
      "    pip install -e . && python -m pointer_gen.run --flagfile=flags/demo.cfg # the demo",
      "```sh",
      "python tools/dev/benchmark.py --tiny > out.txt",
      "```",
  ])
  assert commands(markdown) == [("pointer_gen.run", ["--flagfile=flags/demo.cfg"]),
                                ("tools/dev/benchmark.py", ["--tiny"])]


_SERVED = re.compile(r'python tools/serve_example\.py --saved_model=exports/pgen "([^"]+)"')
_SERVED_SUMMARY = re.compile(r'`\{"summary": "([^"]+)", "log_prob": ')


def test_the_readmes_serving_example_is_text_the_demo_model_knows(demo_corpus):
  """The README serves the demo model one of its validation articles' first sentences (a text
  of words outside the demo's vocab gets "the the the ..."), and the summary it shows holds
  only words of that article and the vocab, none three times."""
  from pointer_gen.formats import data_files  # pylint: disable=g-import-not-at-top
  from pointer_gen.formats import registry  # pylint: disable=g-import-not-at-top
  from pointer_gen.formats import skips  # pylint: disable=g-import-not-at-top
  from pointer_gen.text import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  readme = (REPO / "README.md").read_text()
  [article] = _SERVED.findall(readme)
  [summary] = _SERVED_SUMMARY.findall(readme)
  first_sentences = {r.article.split(" . ")[0] + " ." for r in registry.read_records(
      data_files.expand_glob(demo_corpus["val"]), "auto", skips.SkipCounter())}
  assert article in first_sentences
  words = set(vocab_lib.Vocab.from_file(demo_corpus["vocab"], 519).words) | set(article.split())
  assert set(summary.split()) <= words
  assert max(summary.split().count(w) for w in summary.split()) < 3
