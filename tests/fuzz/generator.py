"""Random programs over the numpy/lax surface.

Each statement is built from the concrete values of earlier variables and kept only when
ember's eager mode runs it (so its shapes and dtypes are valid); the generator never needs
its own copy of the promotion or shape rules.

Exactness: a float value is "exact" when every correct implementation computes the same
bits for it: inputs, and correctly rounded ops (+ - * / sqrt, max/min, casts, data
movement) of exact values. Ops with a discontinuity (comparisons, floor, round, argmax,
sort, float->int casts, // and %) take only exact operands: on a value that differs by one
ulp between eager and compiled code (a sum's order, a polynomial sin) they would turn
rounding into a real mismatch. So do the operands at a pole or branch cut: a divisor (an
inexact 2e-16 instead of 0 turns nan into 0) and both of arctan2's.

Lengths stay small (dims <= 5, loops <= 4 steps): grad of a long cumprod makes LLVM's
object emission blow up (a known compile-time problem, not a wrong result).
"""
from __future__ import annotations

import dataclasses
import itertools
import warnings
from typing import Callable

import numpy as np

from tests.fuzz.program import Program, Stmt

FLOATS = ("float32", "float32", "float32", "float16", "bfloat16")
FLOATS_X64 = ("float32", "float64", "float64", "float16", "bfloat16")
OTHERS = ("int32", "int32", "uint8", "int8", "uint32", "bool", "complex64")
OTHERS_X64 = ("int32", "int64", "uint8", "int8", "uint32", "uint64", "bool", "complex64",
              "complex128")
MAX_SIZE = 96        # elements of any intermediate value
MAX_SIZE_WIDE = 1500  # ... in a program with wide dims
WIDE_DIMS = (7, 9, 16, 17, 33)
MAX_CUMPROD = 8      # longer cumprods: grad makes LLVM's object emission blow up


@dataclasses.dataclass
class Var:
  name: str
  value: object      # an ember Array (eager result)
  exact: bool
  dep0: bool = False   # depends on x0 (the differentiated, vmapped input)

  @property
  def shape(self):
    return tuple(self.value.shape)

  @property
  def dtype(self) -> np.dtype:
    return np.dtype(self.value.dtype)

  @property
  def kind(self) -> str:
    """'f' float (bfloat16 too), 'c' complex, 'i' signed, 'u' unsigned, 'b' bool."""
    return "f" if self.dtype.name == "bfloat16" else self.dtype.kind

  @property
  def ndim(self) -> int:
    return len(self.shape)


def random_value(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
  """Small values with few digits (short repros), some zeros and ties."""
  import ml_dtypes
  if dtype == "bool":
    return rng.random(shape) < 0.5
  if dtype.startswith(("int", "uint")):
    lo = 0 if dtype.startswith("u") else -4
    return rng.integers(lo, 6, size=shape).astype(dtype)
  if dtype.startswith("complex"):
    v = np.round(rng.uniform(-2, 2, shape), 1) + 1j * np.round(rng.uniform(-2, 2, shape), 1)
    return v.astype(dtype)
  v = np.round(rng.uniform(-3, 3, shape), 1 if rng.random() < 0.5 else 2)
  dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
  return v.astype(dt)


class Generator:
  """Builds one program; `build()` returns it."""

  def __init__(self, seed: int, *, x64: bool = False, max_ops: int = 8):
    self.rng = np.random.default_rng(seed)
    self.x64 = x64
    self.max_ops = max_ops
    self.vars: list[Var] = []
    self.stmts: list[Stmt] = []
    self.inputs: list[tuple[str, np.ndarray]] = []
    self.counter = itertools.count()
    self.wide = self.rng.random() < 0.25   # some dims longer than a vector register
    self.max_size = MAX_SIZE_WIDE if self.wide else MAX_SIZE

  # --- helpers ---------------------------------------------------------------------------
  def choice(self, seq):
    return seq[int(self.rng.integers(len(seq)))]

  def shape(self, max_rank: int = 3) -> tuple:
    rank = int(self.rng.integers(0, max_rank + 1))
    dims = [int(d) for d in self.rng.integers(1, 5, size=rank)]
    if self.wide and dims and self.rng.random() < 0.5:
      # a row longer than a vector (tails, fixed-order lanes, thread splits)
      dims[int(self.rng.integers(rank))] = self.choice(WIDE_DIMS)
    return tuple(dims)

  def dtype(self, float_only: bool = False) -> str:
    floats = FLOATS_X64 if self.x64 else FLOATS
    if float_only or self.rng.random() < 0.6:
      return self.choice(floats)
    return self.choice(OTHERS_X64 if self.x64 else OTHERS)

  def new_input(self, shape, dtype: str) -> Var:
    import ember.numpy as jnp
    name = f"x{len(self.inputs)}"
    value = random_value(self.rng, shape, dtype)
    self.inputs.append((name, value))
    var = Var(name, jnp.asarray(value), True, dep0=not self.inputs[:-1])
    self.vars.append(var)
    return var

  def pick(self, pred: Callable[[Var], bool] = lambda v: True) -> Var | None:
    """A variable satisfying `pred`, recent ones more often (deep chains)."""
    cands = [v for v in self.vars if pred(v)]
    if not cands:
      return None
    if self.rng.random() < 0.5:
      return cands[-1]
    weights = np.arange(1, len(cands) + 1, dtype=np.float64) ** 2
    return cands[int(self.rng.choice(len(cands), p=weights / weights.sum()))]

  def operand(self, pred=lambda v: True, shape=None, dtype=None) -> Var:
    """A variable satisfying `pred`, or a new input of `shape`/`dtype` (some of the time
    even when one exists: fresh inputs mix dtypes)."""
    v = self.pick(pred) if self.rng.random() < 0.75 else None
    if v is not None:
      return v
    import ml_dtypes
    for _ in range(30):   # a fresh input that satisfies `pred`
      s = self.shape() if shape is None else shape
      dt = dtype or self.dtype()
      probe = np.zeros(s, ml_dtypes.bfloat16 if dt == "bfloat16" else dt)
      if pred(Var("probe", probe, True)):
        break
    return self.new_input(s, dt)

  def broadcast_partner(self, a: Var) -> Var:
    """A second operand whose shape broadcasts with `a`'s."""
    def ok(v):
      try:
        np.broadcast_shapes(a.shape, v.shape)
        return v is not a or self.rng.random() < 0.3
      except ValueError:
        return False
    r = self.rng.random()
    if r < 0.2:
      shape = a.shape[int(self.rng.integers(0, a.ndim + 1)):]   # a suffix: broadcasts
    elif r < 0.3 and a.ndim:
      shape = list(a.shape)
      shape[int(self.rng.integers(a.ndim))] = 1
      shape = tuple(shape)
    else:
      shape = a.shape
    return self.operand(ok, shape=shape)

  def add(self, template: str, args: tuple[Var, ...], tags=(), exact: bool = False) -> bool:
    """Run the statement eagerly; keep it when it runs and its result is small."""
    import ember
    import ember.numpy as jnp
    from ember import lax
    name = f"v{next(self.counter)}"
    ns = {"jnp": jnp, "lax": lax, "jax": ember, "np": np}
    ns.update({v.name: v.value for v in self.vars})
    stmt = Stmt(name, template, tuple(v.name for v in args), frozenset(tags))
    try:
      value = eval(stmt.expr(), ns)   # noqa: S307 -- our own generated expression
      if not hasattr(value, "dtype") or value.size > self.max_size:
        return False
      np.asarray(value)
      stmt = dataclasses.replace(stmt, dtype=str(value.dtype))
    except Exception:  # noqa: BLE001 -- an invalid combination: try another op
      return False
    self.stmts.append(stmt)
    self.vars.append(Var(name, value, exact and all(v.exact for v in args),
                         any(v.dep0 for v in args)))
    return True

  # --- the program -----------------------------------------------------------------------
  def build(self) -> Program:
    x0 = self.new_input(self.shape(), self.dtype(float_only=True))
    batch = random_value(self.rng, x0.shape, x0.dtype.name)
    n_ops = int(self.rng.integers(1, self.max_ops + 1))
    attempts = 0
    while len(self.stmts) < n_ops and attempts < 20 * n_ops:
      attempts += 1
      op = self.choice(OPS)
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        op(self)
    out = None
    if self.rng.random() < 0.8:   # the output depends on x0 (grad and vmap see it)
      out = self.pick(lambda v: v.name.startswith("v") and v.dep0)
    out = out or self.pick(lambda v: v.name.startswith("v")) or x0
    return self.merge_dead(out, batch)

  def merge_dead(self, out: Var, batch) -> Program:
    """Fold statements the output does not use into it (a sum added on), so that most
    generated statements are tested."""
    prog = Program(self.inputs, list(self.stmts), out.name, self.x64, batch)
    live = {s.out for s in prog.used().stmts}
    for v in list(self.vars):
      if v.name.startswith("v") and v.name not in live and v is not out \
          and self.rng.random() < 0.8 and out.kind != "b":
        # a float folded into an integer output is a float->int cast: exact values only
        fold = "{0} + jnp.sum(jnp.real({1})).astype({0}.dtype)" \
            if out.kind in "fc" or v.kind in "iub" else \
            "{0} + jnp.sum(jnp.isnan({1})).astype({0}.dtype)"   # a float sum is inexact
        if self.add(fold, (out, v), ("merge",), exact=out.exact and v.exact):
          out = self.vars[-1]
    prog = Program(self.inputs, self.stmts, out.name, self.x64, batch)
    return prog.used()


# --- operations: each takes the generator, picks operands, calls g.add ---------------------
FLOAT_UNARY = [("jnp.sin({0})", False), ("jnp.cos({0})", False), ("jnp.tanh({0})", False),
               ("jnp.exp({0})", False), ("jnp.log1p(jnp.abs({0}))", False),
               ("jnp.sqrt(jnp.abs({0}))", True), ("jax.nn.sigmoid({0})", False),
               ("jax.nn.relu({0})", True), ("jnp.square({0})", True), ("-{0}", True),
               ("jnp.abs({0})", True), ("lax.rsqrt(jnp.abs({0}) + 1)", False),
               ("jnp.arctan({0})", False), ("lax.erf({0})", False), ("{0} ** 3", False),
               ("jnp.expm1({0})", False), ("lax.integer_pow({0}, 2)", True)]
COMPLEX_UNARY = [("jnp.sin({0})", False), ("jnp.exp({0})", False), ("-{0}", True),
                 ("jnp.square({0})", True), ("jnp.abs({0})", False), ("jnp.conj({0})", True),
                 ("jnp.real({0})", True), ("jnp.imag({0})", True), ("{0} * 1j", True)]
INT_UNARY = [("-{0}", True), ("jnp.abs({0})", True), ("~{0}", True), ("jnp.sign({0})", True),
             ("{0} * {0}", True), ("lax.population_count({0})", True)]
DISCRETE_UNARY = [("jnp.floor({0})", True), ("jnp.ceil({0})", True), ("jnp.round({0})", True),
                  ("jnp.sign({0})", True), ("{0} > 0", True), ("jnp.isfinite({0})", True)]


def op_unary(g: Generator) -> None:
  a = g.operand(lambda v: v.kind != "b")
  if a.kind == "f":
    table = FLOAT_UNARY + (DISCRETE_UNARY if a.exact else [])
  elif a.kind == "c":
    table = COMPLEX_UNARY
  else:
    table = INT_UNARY
  template, exact = g.choice(table)
  g.add(template, (a,), tags=("unary",), exact=exact)


BINARY = [("{0} + {1}", True), ("{0} - {1}", True), ("{0} * {1}", True),
          ("jnp.maximum({0}, {1})", True), ("jnp.minimum({0}, {1})", True),
          ("{0} / {1}", True), ("jnp.arctan2({0}, {1})", False)]
# operands that must be exact: where a rounding difference moves them across a pole or a cut
POLES = {"{0} / {1}": (1,), "jnp.arctan2({0}, {1})": (0, 1)}
DISCRETE_BINARY = [("{0} // {1}", "floordiv"), ("{0} % {1}", "rem"), ("{0} < {1}", "compare"),
                   ("{0} == {1}", "compare"), ("{0} >= {1}", "compare"),
                   ("{0} != {1}", "compare")]
BITWISE = [("{0} & {1}", "bitwise"), ("{0} | {1}", "bitwise"), ("{0} ^ {1}", "bitwise")]


def op_binary(g: Generator) -> None:
  a = g.operand()
  b = g.broadcast_partner(a)
  r = g.rng.random()
  if r < 0.55:
    template, exact = g.choice(BINARY)
    tag = "arith"
  elif r < 0.85:
    template, tag = g.choice(DISCRETE_BINARY)
    exact = True
    if not (a.exact and b.exact):
      return
  else:
    template, tag = g.choice(BITWISE)
    exact = True
  if g.rng.random() < 0.5:
    a, b = b, a
  if not all((a, b)[i].exact for i in POLES.get(template, ())):
    return
  g.add(template, (a, b), tags=(tag,), exact=exact)


WEAK = ["2", "3", "-1", "0.5", "1.5", "-2.5", "True", "1j"]


def op_weak_scalar(g: Generator) -> None:
  a = g.operand()
  s = g.choice(WEAK)
  op = g.choice(["+", "-", "*", "/", "**"] if s not in ("True",) else ["+", "*", "&"])
  if op == "**" and s not in ("2", "3"):
    return
  template = f"{{0}} {op} {s}" if g.rng.random() < 0.6 else f"{s} {op} {{0}}"
  if op == "**" and template.startswith(s):
    return
  if op == "/" and template.startswith(s) and not a.exact:   # an inexact divisor (POLES)
    return
  g.add(template, (a,), tags=("weak",), exact=op in "+-*/")


def op_where(g: Generator) -> None:
  c = g.pick(lambda v: v.kind == "b")
  if c is None:
    a = g.operand(lambda v: v.exact and v.kind in "fiu")
    g.add("{0} > 0", (a,), tags=("compare",), exact=True)
    return
  a = g.broadcast_partner(c)
  b = g.broadcast_partner(a)
  g.add("jnp.where({0}, {1}, {2})", (c, a, b), tags=("where",), exact=True)


CASTS = ["float32", "float16", "bfloat16", "int32", "uint8", "bool", "complex64", "int8"]
CASTS_X64 = CASTS + ["float64", "int64", "uint64", "complex128"]


def op_cast(g: Generator) -> None:
  a = g.operand()
  to = g.choice(CASTS_X64 if g.x64 else CASTS)
  to_discrete = to.startswith(("int", "uint", "bool"))
  if a.kind in "fc" and to_discrete and not a.exact:
    return
  if a.kind == "c" and not to.startswith("complex"):
    return   # complex -> real casts warn and drop the imaginary part; not interesting
  fn = g.choice(["{0}.astype(jnp.%s)", "lax.convert_element_type({0}, jnp.%s)",
                 "jnp.asarray({0}, jnp.%s)"]) % to
  g.add(fn, (a,), tags=("cast",), exact=True)


def _axis(g: Generator, a: Var, allow_none=True, allow_tuple=True):
  if a.ndim == 0:
    return None
  r = g.rng.random()
  if allow_none and r < 0.25:
    return None
  if allow_tuple and r < 0.4 and a.ndim >= 2:
    axes = sorted(g.rng.choice(a.ndim, size=2, replace=False).tolist())
    return tuple(int(x) for x in axes)
  ax = int(g.rng.integers(a.ndim))
  return ax - a.ndim if g.rng.random() < 0.3 else ax


REDUCTIONS = [("jnp.sum", False), ("jnp.prod", False), ("jnp.max", True), ("jnp.min", True),
              ("jnp.mean", False), ("jnp.any", True), ("jnp.all", True)]


def op_reduce(g: Generator) -> None:
  a = g.operand(lambda v: v.ndim >= 1)
  fn, exact = g.choice(REDUCTIONS)
  if fn in ("jnp.max", "jnp.min") and a.kind == "c":
    return
  ax = _axis(g, a)
  kd = ", keepdims=True" if g.rng.random() < 0.3 else ""
  int_exact = a.kind in "iub"
  g.add(f"{fn}({{0}}, axis={ax!r}{kd})", (a,), tags=("reduce", fn[4:]),
        exact=exact or int_exact)


def op_arg_reduce(g: Generator) -> None:
  a = g.operand(lambda v: v.ndim >= 1 and v.exact and v.kind != "c")
  if not a.exact or a.kind == "c":
    return
  fn = g.choice(["jnp.argmax", "jnp.argmin", "jnp.argsort", "jnp.sort"])
  ax = _axis(g, a, allow_none=fn != "jnp.argsort" and fn != "jnp.sort", allow_tuple=False)
  if ax is None and fn in ("jnp.argsort", "jnp.sort"):
    ax = -1
  g.add(f"{fn}({{0}}, axis={ax!r})", (a,), tags=("sort" if "sort" in fn else "argreduce",),
        exact=True)


CUMULATIVE = [("jnp.cumsum", "cumsum", False), ("jnp.cumprod", "cumprod", False),
              ("lax.cummax", "cummax", True), ("lax.cummin", "cummin", True),
              ("jax.nn.softmax", "softmax", False), ("jax.nn.logsumexp", "logsumexp", False)]


def op_cumulative(g: Generator) -> None:
  a = g.operand(lambda v: v.ndim >= 1 and v.kind != "b")
  fn, tag, exact = g.choice(CUMULATIVE)
  if tag in ("cummax", "cummin") and a.kind == "c":
    return
  if tag in ("softmax", "logsumexp") and a.kind != "f":
    return
  ax = int(g.rng.integers(a.ndim))
  if tag == "cumprod" and a.shape[ax] > MAX_CUMPROD:
    return
  if tag in ("cummax", "cummin"):
    text = f"{fn}({{0}}, axis={ax}" + (", reverse=True)" if g.rng.random() < 0.3 else ")")
  else:
    text = f"{fn}({{0}}, axis={ax})"
  g.add(text, (a,), tags=(tag,), exact=exact or a.kind in "iu")


def _reshape_target(g: Generator, shape) -> tuple:
  size = int(np.prod(shape, dtype=np.int64))
  factors = []
  n = size
  for p in (2, 3, 5, 7):
    while n % p == 0:
      factors.append(p)
      n //= p
  if n > 1:
    factors.append(n)
  g.rng.shuffle(factors)
  dims: list[int] = []
  for f in factors:
    if dims and g.rng.random() < 0.4:
      dims[-1] *= f
    else:
      dims.append(f)
  if g.rng.random() < 0.3:
    dims.insert(int(g.rng.integers(len(dims) + 1)), 1)
  if dims and g.rng.random() < 0.3:
    dims[int(g.rng.integers(len(dims)))] = -1
  return tuple(dims)


def op_shape(g: Generator) -> None:
  a = g.operand()
  r = int(g.rng.integers(12))
  nd = a.ndim
  if r == 0:
    g.add(f"jnp.reshape({{0}}, {_reshape_target(g, a.shape)!r})", (a,), ("reshape",), True)
  elif r == 1 and nd >= 2:
    perm = tuple(int(p) for p in g.rng.permutation(nd))
    g.add(f"jnp.transpose({{0}}, {perm!r})" if g.rng.random() < 0.7 else "{0}.T", (a,),
          ("transpose",), True)
  elif r == 2:
    g.add(f"jnp.expand_dims({{0}}, {int(g.rng.integers(-nd - 1, nd + 1))})", (a,),
          ("reshape",), True)
  elif r == 3 and 1 in a.shape:
    g.add("jnp.squeeze({0})", (a,), ("reshape",), True)
  elif r == 4 and nd >= 1 and 0 not in a.shape:
    ax = int(g.rng.integers(nd))
    start = int(g.rng.integers(0, a.shape[ax]))
    step = g.choice([1, 1, 2, -1])
    idx = [":"] * ax + [g.choice([f"{start}:", f"::{step}", f":{start + 1}", f"{start}"])]
    g.add("{0}[" + ", ".join(idx) + "]", (a,), ("slice",), True)
  elif r == 5 and nd >= 1:
    g.add(f"jnp.flip({{0}}, axis={int(g.rng.integers(nd))})", (a,), ("flip",), True)
  elif r == 6 and nd >= 1:
    ax = int(g.rng.integers(nd))
    shape = list(a.shape)
    shape[ax] = int(g.rng.integers(0 if g.rng.random() < 0.1 else 1, 4))
    b = g.operand(lambda v: v.shape == tuple(shape), shape=tuple(shape), dtype=a.dtype.name)
    tag = ("concatenate", "empty") if 0 in b.shape or 0 in a.shape else ("concatenate",)
    g.add(f"jnp.concatenate([{{0}}, {{1}}], axis={ax})", (a, b), tag, True)
  elif r == 7:
    b = g.operand(lambda v: v.shape == a.shape, shape=a.shape)
    g.add(f"jnp.stack([{{0}}, {{1}}], axis={int(g.rng.integers(nd + 1))})", (a, b),
          ("stack",), True)
  elif r == 8:
    g.add(f"jnp.broadcast_to({{0}}, {(int(g.rng.integers(1, 4)),) + a.shape!r})", (a,),
          ("broadcast",), True)
  elif r == 9 and nd >= 1:
    g.add(f"jnp.pad({{0}}, {int(g.rng.integers(1, 3))})", (a,), ("pad",), True)
  elif r == 10 and nd >= 1:
    g.add(f"jnp.roll({{0}}, {int(g.rng.integers(-3, 4))}, axis={int(g.rng.integers(nd))})",
          (a,), ("roll",), True)
  elif r == 11 and nd >= 1:
    g.add(f"jnp.repeat({{0}}, 2, axis={int(g.rng.integers(nd))})", (a,), ("repeat",), True)


def _indexable(v) -> bool:
  """An array with a dim to draw indices from (none in an empty dim)."""
  return v.ndim >= 1 and 0 not in v.shape


def op_index(g: Generator) -> None:
  a = g.operand(_indexable)
  n = a.shape[0]
  r = int(g.rng.integers(4))
  if r == 0:   # gather with a literal index array (negative indices wrap)
    idx = g.rng.integers(-n, n, size=int(g.rng.integers(1, 5))).tolist()
    g.add(f"{{0}}[jnp.array({idx!r})]", (a,), ("gather",), True)
  elif r == 1:   # gather by a computed integer array (out of bounds clamps)
    i = g.pick(lambda v: v.kind in "iu" and v.ndim <= 2)
    if i is None:
      return
    g.add("{0}[{1}]", (a, i), ("gather",), True)
  elif r == 2 and a.ndim >= 2:
    j = int(g.rng.integers(-a.shape[1], a.shape[1]))
    g.add(f"{{0}}[:, {j}]", (a,), ("slice",), True)
  else:
    ax = int(g.rng.integers(a.ndim))
    idx = g.rng.integers(0, a.shape[ax], size=int(g.rng.integers(1, 4))).tolist()
    g.add(f"jnp.take({{0}}, jnp.array({idx!r}), axis={ax})", (a,), ("gather",), True)


SCATTER = ["set", "add", "mul", "min", "max"]


def op_scatter(g: Generator) -> None:
  a = g.operand(_indexable)
  n = a.shape[0]
  method = g.choice(SCATTER)
  k = int(g.rng.integers(1, 4))
  if method == "set":    # distinct indices: the order of duplicate writes is unspecified
    idx = g.rng.permutation(n)[:k].tolist()
  else:
    idx = g.rng.integers(-n, n, size=k).tolist()
  if (method in ("min", "max") and a.kind == "c"):
    return
  upd_shape = (len(idx),) + a.shape[1:]
  if g.rng.random() < 0.3:
    g.add(f"{{0}}.at[jnp.array({idx!r})].{method}({g.choice(['2', '0.5', '-1'])})", (a,),
          ("scatter", "scatter_" + method), True)
    return
  if g.rng.random() < 0.3:
    upd_shape = upd_shape[int(g.rng.integers(len(upd_shape) + 1)):]
  b = g.operand(lambda v: v.shape == upd_shape, shape=upd_shape)
  g.add(f"{{0}}.at[jnp.array({idx!r})].{method}({{1}})", (a, b),
        ("scatter", "scatter_" + method), method in ("set", "min", "max"))


LETTERS = "abcdefg"


def op_dot(g: Generator) -> None:
  a = g.operand(lambda v: v.kind != "b" and v.ndim <= 3)
  r = int(g.rng.integers(4))
  if r == 0 and a.ndim >= 1:   # matmul: b's contracting dim is a's last
    k = a.shape[-1]
    bshape = g.choice([(k,), (k, int(g.rng.integers(1, 4)))])
    b = g.operand(lambda v: v.shape == bshape and v.kind != "b", shape=bshape)
    g.add(g.choice(["{0} @ {1}", "jnp.dot({0}, {1})", "jnp.matmul({0}, {1})"]), (a, b),
          ("dot",), False)
    return
  if r == 1 and a.ndim == 1:
    b = g.operand(lambda v: v.ndim == 1 and v.kind != "b", shape=(int(g.rng.integers(1, 5)),))
    g.add("jnp.outer({0}, {1})", (a, b), ("dot", "outer", "no_contract"), True)
    return
  # einsum: random letters, some shared (contracted or batch), random output order
  la = list(LETTERS[:a.ndim])
  sizes = dict(zip(la, a.shape))
  lb = [l for l in la if g.rng.random() < 0.5]
  extra = [l for l in LETTERS[a.ndim:a.ndim + int(g.rng.integers(0, 3))]]
  for l in extra:
    sizes[l] = int(g.rng.integers(1, 4))
  lb = lb + extra
  g.rng.shuffle(lb)
  everything = list(dict.fromkeys(la + lb))
  out = [l for l in everything if g.rng.random() < 0.6]
  g.rng.shuffle(out)
  bshape = tuple(sizes[l] for l in lb)
  b = g.operand(lambda v: v.shape == bshape and v.kind != "b", shape=bshape)
  spec = f"{''.join(la)},{''.join(lb)}->{''.join(out)}"
  contracted = set(la) & set(lb) - set(out)
  tags = ["dot", "einsum"]
  if not contracted:
    tags.append("no_contract")
  if not lb:
    tags.append("scalar_operand")
  if out != [l for l in everything if l in out]:
    tags.append("transposed_out")
  g.add(f"jnp.einsum({spec!r}, {{0}}, {{1}})", (a, b), tags, False)


def _body(g: Generator, v: Var, name: str) -> tuple[str, bool]:
  """A dtype- and shape-preserving expression of the lambda parameter `name`."""
  k = v.kind
  if k == "f":
    # no squaring: 4 loop steps of c * c raise a rounding difference to the 16th power
    # (and sin of the result is noise)
    opts = [(f"jnp.sin({name})", False), (f"{name} * 0.5", True),
            (f"jnp.tanh({name}) * {name}", False), (f"-{name}", True),
            (f"jnp.tanh({name}) + {name}", False), (f"{name} + 1", True)]
  elif k == "c":
    opts = [(f"{name} * 0.5j", True), (f"-{name}", True), (f"{name} * 1j", True)]
  elif k == "b":
    opts = [(f"~{name}", True), (f"{name} ^ True", True)]
  else:
    opts = [(f"{name} * 2", True), (f"{name} + 1", True), (f"{name} * {name}", True),
            (f"{name} - 3", True)]
  return g.choice(opts)


def op_cond(g: Generator) -> None:
  p = g.pick(lambda v: v.exact and v.kind in "fiu")
  x = g.operand()
  if p is None:
    return
  b1, e1 = _body(g, x, "a")
  b2, e2 = _body(g, x, "a")
  if g.rng.random() < 0.2:
    b3, e3 = _body(g, x, "a")
    g.add(f"lax.switch(jnp.max({{0}}).astype(jnp.int32), [lambda a: {b1}, lambda a: {b2}, "
          f"lambda a: {b3}], {{1}})", (p, x), ("switch", "cond"), e1 and e2 and e3)
    return
  g.add(f"lax.cond(jnp.max({{0}}) > 0, lambda a: {b1}, lambda a: {b2}, {{1}})", (p, x),
        ("cond",), e1 and e2)


def op_loop(g: Generator) -> None:
  x = g.operand()
  n = int(g.rng.integers(0, 5))
  if g.rng.random() < 0.5:
    body, exact = _body(g, x, "c")
    g.add(f"lax.fori_loop(0, {n}, lambda i, c: {body}, {{0}})", (x,), ("fori_loop",), exact)
  else:
    body, exact = _body(g, x, "c[1]")
    g.add(f"lax.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, {body}), "
          f"(0, {{0}}))[1]", (x,), ("while_loop",), exact)


def op_scan(g: Generator) -> None:
  xs = g.operand(lambda v: v.ndim >= 1 and v.kind != "b")
  body, exact = _body(g, xs, "c")
  which = g.choice(["[0]", "[1]"])
  rev = ", reverse=True" if g.rng.random() < 0.3 else ""
  form = int(g.rng.integers(3))
  if form == 0:
    fn = f"lambda c, x: ({body} + x, c * x)"
  elif form == 1:   # pass-through carry: its cotangent is a symbolic zero in grad
    xbody, e2 = _body(g, xs, "x")
    fn = f"lambda c, x: (c, {xbody})"
    exact = exact and e2
  else:
    fn = f"lambda c, x: (c + x, {body})"
  tags = ("scan",) + (("scan_passthrough",) if form == 1 else ())
  g.add(f"lax.scan({fn}, {{0}}[0], {{0}}{rev}){which}", (xs,), tags, exact)


def op_dynamic_slice(g: Generator) -> None:
  """lax.dynamic_slice / dynamic_update_slice: start indices clamp into range."""
  a = g.operand(_indexable)
  i = g.pick(lambda v: v.kind in "iu" and v.ndim == 0 and v.exact)
  starts = [str(int(g.rng.integers(-1, d + 2))) for d in a.shape]
  if i is not None and g.rng.random() < 0.6:
    starts[0] = "{1}"
  sizes = tuple(int(g.rng.integers(1, d + 1)) for d in a.shape)
  args = (a, i) if "{1}" in starts else (a,)
  if g.rng.random() < 0.5:
    g.add(f"lax.dynamic_slice({{0}}, ({', '.join(starts)},), {sizes!r})", args,
          ("dynamic_slice",), True)
    return
  u = g.operand(lambda v: v.shape == sizes and v.dtype == a.dtype, shape=sizes,
                dtype=a.dtype.name)
  if u.shape != sizes or u.dtype != a.dtype:
    return
  n = len(args)
  starts = [st.replace("{1}", "{%d}" % n) for st in starts]
  g.add(f"lax.dynamic_update_slice({{0}}, {{1}}, ({', '.join(s.replace('{%d}' % n, '{2}') for s in starts)},))"
        if n == 2 else f"lax.dynamic_update_slice({{0}}, {{1}}, ({', '.join(starts)},))",
        (a, u, i) if n == 2 else (a, u), ("dynamic_update_slice",), True)


def op_misc(g: Generator) -> None:
  a = g.operand(lambda v: v.kind != "b" and v.kind != "c")
  r = int(g.rng.integers(4))
  if r == 0:
    g.add("jnp.clip({0}, -1, 2)", (a,), ("clip",), True)
  elif r == 1 and a.kind in "iu":
    b = g.operand(lambda v: v.dtype == a.dtype and v.shape == a.shape, shape=a.shape,
                  dtype=a.dtype.name)
    if b.dtype == a.dtype and b.shape == a.shape:
      fn = g.choice(["lax.shift_left", "lax.shift_right_logical", "lax.shift_right_arithmetic"])
      g.add(f"{fn}({{0}}, {{1}})", (a, b), ("shift",), True)
  elif r == 2 and a.ndim >= 1 and a.exact:
    ax = int(g.rng.integers(a.ndim))
    g.add(f"jnp.take_along_axis({{0}}, jnp.argsort({{0}}, axis={ax}), axis={ax})", (a,),
          ("gather", "sort"), True)
  elif r == 3 and a.ndim >= 1 and a.kind == "f":
    ax = _axis(g, a, allow_tuple=False)
    g.add(f"jnp.{g.choice(['var', 'std'])}({{0}}, axis={ax!r})", (a,), ("reduce", "var"),
          False)


OPS = [op_unary] * 4 + [op_binary] * 4 + [op_weak_scalar] * 2 + [op_where, op_cast] + \
      [op_reduce] * 2 + [op_arg_reduce, op_cumulative] + [op_shape] * 3 + \
      [op_index, op_scatter] + [op_dot] * 2 + [op_cond, op_loop, op_scan, op_dynamic_slice, op_misc]


def generate(seed: int, *, x64: bool = False, max_ops: int = 8) -> Program:
  """The program of `seed` (the same seed gives the same program)."""
  from ember._src.base.config import config
  with config._override("jax_enable_x64", x64):
    return Generator(seed, x64=x64, max_ops=max_ops).build()
