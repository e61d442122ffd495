"""ember/_src's imports point down the layers of docs/architecture.md.

The test parses every module's imports (module level and inside functions) and fails when
a module imports one from a layer above its own, when _src imports the public `ember`
package, when modules form an import circle other than inside the primitive families, or
when an import placed inside a function does not say why (a comment on its line or the
line above: the cycle or the optional/slow dependency it defers). The layers are the folders
of ember/_src: no module sits at its root, and none is over MAX_LINES lines.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "ember" / "_src"

# Bottom to top: one folder of ember/_src per layer. A module's layer is the folder it sits in
# (its first path component under _src); docs/architecture.md draws the same table: change both
# together.
LAYERS = ["base", "reference", "hlo", "passes", "backends", "core", "runtime", "transforms",
          "lower", "primitives", "driver", "parallel", "library"]
# Modules of one layer that may import each other in a circle.
CYCLE_OK = ("primitives",)


def layer_of(name: str) -> int:
  """The layer index of ember._src.<name>: the index of its folder."""
  folder = name.split(".")[0]
  if folder not in LAYERS or name == folder and MODULES[name].name != "__init__.py":
    raise AssertionError(f"ember._src.{name} is in no layer folder: every module sits in the "
                         f"folder of its layer ({', '.join(LAYERS)}), none at _src's root")
  return LAYERS.index(folder)


def module_names() -> dict[str, pathlib.Path]:
  out = {}
  for path in SRC.rglob("*.py"):
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
      parts = parts[:-1]
    if parts:
      out[".".join(parts)] = path
  return out


MODULES = module_names()


def _targets(module: str, node) -> list[str]:
  """The ember modules an import statement names ('ember' for the public package)."""
  if isinstance(node, ast.Import):
    names = [a.name for a in node.names]
  else:
    base = node.module or ""
    if node.level:
      pkg = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
      pkg = ["ember", "_src"] + pkg[:len(pkg) - node.level + 1]
      base = ".".join(pkg + ([node.module] if node.module else []))
    # `from pkg import mod` imports pkg.mod; `from mod import name` imports mod
    names = [f"{base}.{a.name}" if f"{base}.{a.name}"[len("ember._src."):] in MODULES else base
             for a in node.names]
  out = []
  for full in names:
    if full == "ember" or full.startswith("ember.") and not full.startswith("ember._src"):
      out.append("ember")
    elif full.startswith("ember._src."):
      rel = full[len("ember._src."):]
      while rel and rel not in MODULES:
        rel = rel.rpartition(".")[0]
      if rel and rel != module:
        out.append(rel)
  return sorted(set(out))


def _imports_by_name(node) -> bool:
  return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "import_module" and node.args
          and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def imports(module: str):
  """(target, line, inside_a_function) for each ember import of the module."""
  path = MODULES[module]
  lines = path.read_text(encoding="utf-8").splitlines()
  found = []

  def visit(node, in_function):
    for child in ast.iter_child_nodes(node):
      if isinstance(child, (ast.Import, ast.ImportFrom)):
        for target in _targets(module, child):
          found.append((target, child.lineno, in_function, lines))
      elif _imports_by_name(child):   # importlib.import_module("ember.numpy") imports too
        name = ast.Import(names=[ast.alias(name=child.args[0].value)])
        for target in _targets(module, name):
          found.append((target, child.lineno, True, lines))
      visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

  visit(ast.parse(path.read_text(encoding="utf-8")), False)
  return found


def _said_why(lines: list[str], lineno: int) -> bool:
  """A comment on the import's line, or on the line above its block of imports."""
  i = lineno - 1
  while True:
    if "#" in lines[i]:
      return True
    above = lines[i - 1].strip()
    if above.startswith("#"):
      return True
    if not above.startswith(("import ", "from ")):
      return False
    i -= 1


def test_every_module_has_a_layer():
  for name in MODULES:
    layer_of(name)


def upward_imports(names) -> list[str]:
  upward = []
  for name in names:
    for target, line, _, _ in imports(name):
      if target == "ember":
        upward.append(f"ember._src.{name}:{line} imports the public `ember` package")
      elif layer_of(target) > layer_of(name):
        upward.append(f"ember._src.{name}:{line} ({LAYERS[layer_of(name)]}) imports "
                      f"ember._src.{target} ({LAYERS[layer_of(target)]})")
  return upward


def test_imports_point_down():
  upward = upward_imports(MODULES)
  assert not upward, ("imports that point up the layers (use a registry filled from above, "
                      "or move the code down):\n" + "\n".join(upward))


MAX_LINES = 1000


def test_no_module_is_over_a_thousand_lines():
  # a module a reader can hold in mind: split a larger one along its seams (one primitive
  # family, one kernel family, one construct per module), not in halves
  lines = {name: len(path.read_text(encoding="utf-8").splitlines())
           for name, path in MODULES.items()}
  long = {name: n for name, n in lines.items() if n > MAX_LINES}
  assert not long, f"modules over {MAX_LINES} lines: {long}"


def _deferred_imports(module: str):
  """(line, source text) of every import statement inside a function of the module."""
  path = MODULES[module]
  tree = ast.parse(path.read_text(encoding="utf-8"))
  return [(n.lineno, ast.unparse(n)) for fn in ast.walk(tree)
          if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
          for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_deferred_imports_say_why():
  silent = []
  for name in MODULES:
    lines = MODULES[name].read_text(encoding="utf-8").splitlines()
    silent += [f"ember._src.{name}:{line}: {text}" for line, text in _deferred_imports(name)
               if not _said_why(lines, line)]
  assert not silent, ("imports inside functions without a comment naming the cycle or the "
                      "dependency they defer (or move them to the top):\n" + "\n".join(silent))


def _cycles() -> list[list[str]]:
  """Strongly connected components (more than one module) of the import graph."""
  graph = {n: {t for t, *_ in imports(n) if t != "ember"} for n in MODULES}
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def strong(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph[v]:
      if w not in index:
        strong(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      comp = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        comp.append(w)
        if w == v:
          break
      if len(comp) > 1:
        found.append(sorted(comp))

  for v in graph:
    if v not in index:
      strong(v)
  return found


def test_no_import_cycles_outside_the_primitive_families():
  bad = [c for c in _cycles() if {LAYERS[layer_of(m)] for m in c} - set(CYCLE_OK)]
  assert not bad, "import circles:\n" + "\n".join(" -> ".join(c) for c in bad)


@pytest.mark.parametrize("source,expected", [
    ("from ember._src.hlo import graph as hlo\n", ["hlo.graph"]),
    ("from ember._src.primitives import elementwise as ew\n", ["primitives.elementwise"]),
    ("import ember.numpy as jnp\n", ["ember"]),
    ("def f():\n  return importlib.import_module('ember.numpy')\n", ["ember"]),
])
def test_the_import_parser_resolves_names(tmp_path, monkeypatch, source, expected):
  # the checks above are only as good as this resolution: a regression here would let
  # every upward import pass silently
  fake = tmp_path / "fake_mod.py"
  fake.write_text(source)
  monkeypatch.setitem(MODULES, "fake_mod", fake)
  assert [t for t, *_ in imports("fake_mod")] == expected


@pytest.mark.parametrize("name,source,flagged", [
    ("base.fake_mod", "from ember._src.driver import jit\n", True),
    ("driver.fake_mod", "from ember._src.base import dtypes\n", False),
    ("parallel.fake_mod", "from ember._src.library.numpy import creation\n", True),
    ("core.fake_mod", "import ember.numpy as jnp\n", True),
])
def test_an_import_up_a_folder_is_flagged(tmp_path, monkeypatch, name, source, flagged):
  fake = tmp_path / "fake_mod.py"
  fake.write_text(source)
  monkeypatch.setitem(MODULES, name, fake)
  assert bool(upward_imports([name])) == flagged


@pytest.mark.parametrize("name,filename", [("loose", "loose.py"), ("misc.helpers", "helpers.py")])
def test_a_module_outside_the_layer_folders_has_no_layer(tmp_path, monkeypatch, name, filename):
  fake = tmp_path / filename
  fake.write_text("")
  monkeypatch.setitem(MODULES, name, fake)
  with pytest.raises(AssertionError, match="no layer folder"):
    layer_of(name)


def test_array_methods_call_ember_numpy():
  # array_methods gathers ember.numpy's namespace from the _src modules (it may not import
  # the public package): every name must be the function ember.numpy exports
  import ember.numpy as jnp
  from ember._src.library.numpy import array_methods
  assert {n for n, f in array_methods._JNP.items() if getattr(jnp, n, None) is not f} == set()
