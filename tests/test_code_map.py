"""The code map in pointer_gen/__init__.py is the import graph's order: every module (a package
is one, its modules' imports together) is on it once, and each imports only from its own layer
and the layers listed before it."""

import ast
import re

from helpers import REPO

PACKAGE = REPO / "pointer_gen"


def _layers():
  """[(layer title, [module])] in the map's order, read from the package's docstring."""
  doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")))
  layers = []
  for line in doc.split("Tools (`tools/`)")[0].splitlines():
    if re.fullmatch(r"\S.*:", line):
      layers.append((line, []))
    elif layers and (match := re.match(r"  (\w+) ", line)):
      layers[-1][1].append(match.group(1))
  return layers


def _imports(path):
  """The pointer_gen modules `path` imports, at any depth of its code."""
  names = set()
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.ImportFrom) and node.module == "pointer_gen":
      names |= {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pointer_gen."):
      names.add(node.module.split(".")[1])
    elif isinstance(node, ast.Import):
      names |= {a.name.split(".")[1] for a in node.names if a.name.startswith("pointer_gen.")}
  return names


def _entries():
  """{entry on the map: its source files}: each module, and each package with all of its."""
  entries = {p.stem: [p] for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
  entries.update({p.parent.name: sorted(p.parent.rglob("*.py"))
                  for p in PACKAGE.glob("*/__init__.py")})
  return entries


def test_every_module_is_on_the_map_once():
  on_map = [module for _, modules in _layers() for module in modules]
  assert len(_layers()) >= 8
  assert sorted(on_map) == sorted(_entries())


def test_no_module_imports_up_the_map():
  rank = {module: i for i, (_, modules) in enumerate(_layers()) for module in modules}
  title = {i: name for i, (name, _) in enumerate(_layers())}
  entries = _entries()
  imports = {module: set().union(*(_imports(path) for path in entries[module])) for module in rank}
  upward = [f"{module} ({title[rank[module]]}) imports {imported} ({title[rank[imported]]})"
            for module in rank for imported in sorted(imports[module])
            if rank[imported] > rank[module]]
  assert upward == []


def test_each_import_form_is_read(tmp_path):
  path = tmp_path / "module.py"
  path.write_text("from pointer_gen import config, vocab as vocab_lib\nimport pointer_gen.decode\n"
                  "import numpy\n\ndef f():\n  from pointer_gen.model import M\n")
  assert _imports(path) == {"config", "vocab", "decode", "model"}
