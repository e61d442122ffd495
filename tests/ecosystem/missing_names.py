"""List the jax names that optax, flax, equinox and chex use and ember (under the alias) lacks.

Reads each library's sources (ast): `import jax.X`, `from jax.X import Y`, and attribute
chains on names bound to jax modules (`jax.lax.foo`, `jnp.bar`). Each name is resolved under
ember.compat's alias; the missing ones are printed with how many files use them, one place,
and when that use runs: `import` (at module level: importing the file fails), `guarded`
(at module level inside a try), `call` (inside a function: only when called).

    python -m ember tests/ecosystem/missing_names.py [library ...]
    python -m ember tests/ecosystem/missing_names.py loaded.json [library ...]

loaded.json (optional): a JSON list of the library files a program imports (paths containing
site-packages/), to report only those.
"""
import ast
import collections
import importlib
import importlib.util
import os
import sys

LIBRARIES = ("optax", "flax", "equinox", "chex")


def sources(lib):
  root = os.path.dirname(importlib.util.find_spec(lib).origin)
  for d, _, files in os.walk(root):
    for f in files:
      if f.endswith(".py") and "test" not in f and "/tests" not in d and "/examples" not in d:
        yield os.path.join(d, f)


def chain(node):
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if isinstance(node, ast.Name):
    parts.append(node.id)
    return parts[::-1]
  return None


class _Where(ast.NodeVisitor):
  """Marks each node: 'import' (runs when the module is imported), 'guarded' (the same,
  inside a try), or 'call' (inside a function body)."""

  def __init__(self):
    self.kind = {}
    self._stack = ["import"]

  def generic_visit(self, node):
    self.kind[id(node)] = self._stack[-1]
    super().generic_visit(node)

  def visit_Try(self, node):
    self._stack.append("guarded" if self._stack[-1] == "import" else self._stack[-1])
    self.generic_visit(node)
    self._stack.pop()

  def _function(self, node):
    self.kind[id(node)] = self._stack[-1]
    for d in node.decorator_list + node.args.defaults + node.args.kw_defaults:
      if d is not None:
        self.visit(d)
    self._stack.append("call")
    for stmt in node.body:
      self.visit(stmt)
    self._stack.pop()

  visit_FunctionDef = visit_AsyncFunctionDef = _function

  def visit_Lambda(self, node):
    self._stack.append("call")
    self.generic_visit(node)
    self._stack.pop()


def uses(path):
  """(dotted name, line, kind) for each jax name the file uses."""
  tree = ast.parse(open(path).read(), path)
  where = _Where()
  where.visit(tree)
  bound = {}  # local name -> dotted jax module/name
  found = []
  for node in ast.walk(tree):
    kind = where.kind.get(id(node), "call")
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name == "jax" or a.name.startswith("jax."):
          found.append((a.name, node.lineno, kind))
          bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else "jax"
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
        node.module == "jax" or node.module.startswith("jax.")):
      for a in node.names:
        name = f"{node.module}.{a.name}"
        found.append((name, node.lineno, kind))
        bound[a.asname or a.name] = name
  for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
      parts = chain(node)
      if parts and parts[0] in bound:
        found.append((".".join([bound[parts[0]]] + parts[1:]), node.lineno,
                      where.kind.get(id(node), "call")))
  return found


def resolves(dotted):
  parts = dotted.split(".")
  obj = None
  for i in range(len(parts), 0, -1):
    try:
      obj = importlib.import_module(".".join(parts[:i]))
      break
    except ImportError:
      continue
  if obj is None:
    return False
  for p in parts[i:]:
    try:
      obj = getattr(obj, p)
    except AttributeError:
      try:
        obj = importlib.import_module(f"{obj.__name__}.{p}")
      except Exception:  # noqa: BLE001
        return False
    except Exception:  # noqa: BLE001
      return False
  return True


def main(libs, loaded=None):
  """loaded: library files (relative to site-packages) a program imports; others skipped."""
  for lib in libs:
    missing = collections.defaultdict(list)
    cache = {}
    for path in sources(lib):
      rel = path[path.index(f"/{lib}/") + 1:]
      if loaded is not None and rel not in loaded:
        continue
      for name, line, at_import in uses(path):
        # jax.foo.bar is missing only when jax.foo resolves; report the shortest missing prefix
        parts = name.split(".")
        for i in range(2, len(parts) + 1):
          prefix = ".".join(parts[:i])
          if prefix not in cache:
            cache[prefix] = resolves(prefix)
          if not cache[prefix]:
            missing[prefix].append((rel, line, at_import))
            break
    print(f"== {lib}: {len(missing)} missing names")
    order = {"import": 0, "guarded": 1, "call": 2}
    for name, places in sorted(missing.items(),
                               key=lambda kv: (min(order[p[2]] for p in kv[1]), kv[0])):
      where = min(places, key=lambda p: order[p[2]])
      files = len({p[0] for p in places})
      print(f"  {name:50s} {where[2]:8s} {files:3d} files  e.g. {where[0]}:{where[1]}")


if __name__ == "__main__":
  import json
  args = sys.argv[1:]
  loaded = None
  if args and args[0].endswith(".json"):
    site = "site-packages/"
    loaded = {f[f.index(site) + len(site):] for f in json.load(open(args.pop(0)))}
  main(args or LIBRARIES, loaded)
