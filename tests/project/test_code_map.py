"""The code map in pointer_gen/__init__.py is the import graph's order: the package's folders are
its layers, each on the map once in the order they may import one another, the entry layer's
modules flat at the top; no module imports from a layer listed after its own, and no module
imports itself through others (the package face, bare `import pointer_gen` and imports inside
functions included)."""

import ast
import re

from helpers import REPO

PACKAGE = REPO / "pointer_gen"
FACE = "pointer_gen"
ENTRY = "the entry layer"


def _map():
  """([layer folder in the map's order], [entry module]) read from the package's docstring."""
  doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")))
  body = doc.split("Tools (`tools/`")[0]
  layers_part, entry_part = body.split("The entry layer", 1)
  names = lambda part: re.findall(r"^  (\w+) ", part, re.MULTILINE)
  return names(layers_part), names(entry_part)


def _modules(package=PACKAGE):
  """{dotted module name: its file} of every module of the package, packages' faces included."""
  modules = {}
  for path in sorted(package.rglob("*.py")):
    parts = path.relative_to(package.parent).with_suffix("").parts
    modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return modules


def _imports(path, modules):
  """The modules of `modules` that `path` names in an import, at any depth of its code: `from
  a.b import c` is a.b.c where that is a module, else a.b; `import pointer_gen` is the face."""
  names = set()
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      for alias in node.names:
        submodule = f"{node.module}.{alias.name}"
        names.add(submodule if submodule in modules else node.module)
    elif isinstance(node, ast.Import):
      names |= {alias.name for alias in node.names}
  return {name for name in names if name in modules}


def _graph():
  modules = _modules()
  return {module: _imports(path, modules) for module, path in modules.items()}


def _layer(module):
  """The map's layer of a module: its first folder below the package, or the entry layer."""
  parts = module.split(".")
  return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) \
      else ENTRY


def _loops(graph):
  """The import loops of `graph` ({module: modules it imports}): each strongly connected set of
  more than one module, sorted (Tarjan's algorithm)."""
  index, low, stack, on_stack, loops = {}, {}, [], set(), []

  def visit(module):
    index[module] = low[module] = len(index)
    stack.append(module)
    on_stack.add(module)
    for imported in sorted(graph[module]):
      if imported not in index:
        visit(imported)
        low[module] = min(low[module], low[imported])
      elif imported in on_stack:
        low[module] = min(low[module], index[imported])
    if low[module] == index[module]:
      component = []
      while (member := stack.pop()) != module:
        on_stack.discard(member)
        component.append(member)
      on_stack.discard(module)
      if component:
        loops.append(sorted([module, *component]))

  for module in sorted(graph):
    if module not in index:
      visit(module)
  return sorted(loops)


def test_the_map_names_each_folder_once_and_the_entry_modules():
  layers, entry = _map()
  folders = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
  assert len(layers) == len(set(layers)) >= 8
  assert sorted(layers) == folders
  assert sorted(entry) == sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_no_module_imports_up_the_map():
  layers, _ = _map()
  rank = {layer: i for i, layer in enumerate([*layers, ENTRY])}
  upward = [f"{module} ({_layer(module)}) imports {imported} ({_layer(imported)})"
            for module, imported_set in sorted(_graph().items())
            for imported in sorted(imported_set)
            if rank[_layer(imported)] > rank[_layer(module)]]
  assert upward == []


def test_no_import_loop():
  assert _loops(_graph()) == []


def test_a_loop_through_the_face_is_found(tmp_path):
  """The loop the face used to close: a module importing `pointer_gen` for its version while the
  face imports the API (lazily, inside a function) and the API imports that module."""
  package = tmp_path / "pointer_gen"
  (package / "data").mkdir(parents=True)
  (package / "__init__.py").write_text("def __getattr__(name):\n  from pointer_gen import api\n")
  (package / "api.py").write_text("from pointer_gen.data import run_record as record\n")
  (package / "data" / "__init__.py").write_text("")
  (package / "data" / "run_record.py").write_text("import pointer_gen\nimport numpy\n")
  modules = _modules(package)
  graph = {module: _imports(path, modules) for module, path in modules.items()}
  assert graph == {FACE: {"pointer_gen.api"}, "pointer_gen.api": {"pointer_gen.data.run_record"},
                   "pointer_gen.data": set(), "pointer_gen.data.run_record": {FACE}}
  assert _loops(graph) == [[FACE, "pointer_gen.api", "pointer_gen.data.run_record"]]


def test_each_import_form_is_read(tmp_path):
  modules = {name: None for name in (FACE, "pointer_gen.config", "pointer_gen.text",
                                     "pointer_gen.text.vocab", "pointer_gen.inference.decode",
                                     "pointer_gen.model", "pointer_gen.model.layers")}
  path = tmp_path / "module.py"
  path.write_text("from pointer_gen import config\n"
                  "from pointer_gen.text import vocab as vocab_lib\n"
                  "import pointer_gen.inference.decode\nimport numpy\n\n"
                  "def f():\n  from pointer_gen.model.layers import Cell\n")
  assert _imports(path, modules) == {"pointer_gen.config", "pointer_gen.text.vocab",
                                     "pointer_gen.inference.decode", "pointer_gen.model.layers"}
