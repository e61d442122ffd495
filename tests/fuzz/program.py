"""A fuzz program: inputs, straight-line statements, one output; printed as Python source.

The source uses only the names `jnp`, `lax`, `jax` and `np`, so the same text runs under
ember (`import ember as jax`) and under real JAX (`import jax`). A statement is a format
template over earlier variables (`"jnp.sin({0})"`); control flow sits inside the template
as lambdas, whose parameters are named `c`, `x`, `i`, `a` (never an `x<n>`/`v<n>` name).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class Stmt:
  out: str                  # the variable it defines
  template: str             # Python expression; {0}, {1}, ... are `args`
  args: tuple[str, ...]
  tags: frozenset = frozenset()   # op families used (known-issue matching, no-grad ops)
  dtype: str = ""           # its result's dtype (the comparison's tolerance)

  def expr(self) -> str:
    return self.template.format(*self.args)


@dataclasses.dataclass
class Program:
  inputs: list[tuple[str, np.ndarray]]   # (name, value); inputs[0] is the differentiated,
  stmts: list[Stmt]                      # vmapped argument (a float array)
  out: str
  x64: bool = False
  batch: np.ndarray | None = None        # a second value of inputs[0] (vmap's batch of 2)

  @property
  def tags(self) -> frozenset:
    return frozenset().union(*(s.tags for s in self.stmts)) if self.stmts else frozenset()

  def dtypes(self) -> set[str]:
    """Every dtype a value of the program has (inputs and statement results)."""
    return {str(v.dtype) for v in self.values()} | {s.dtype for s in self.stmts if s.dtype}

  def names(self) -> list[str]:
    return [n for n, _ in self.inputs]

  def values(self) -> list[np.ndarray]:
    return [v for _, v in self.inputs]

  def batched(self) -> np.ndarray:
    """inputs[0] stacked with its second value: vmap's argument."""
    x0 = self.inputs[0][1]
    other = self.batch if self.batch is not None else x0
    return np.stack([x0, other])

  def function_source(self) -> str:
    lines = [f"def f({', '.join(self.names())}):"]
    lines += [f"  {s.out} = {s.expr()}" for s in self.stmts]
    lines.append(f"  return {self.out}")
    lines += ["", "", "def loss(*a):",
              "  return jnp.sum(jnp.real(f(*a)).astype(jnp.float32))"]
    return "\n".join(lines) + "\n"

  def differentiable(self, forward: bool = False) -> bool:
    """Whether the grad modes (`forward`: jvp) apply: a float first argument and, in
    reverse mode, no op that JAX cannot reverse-differentiate (while_loop)."""
    dt = self.inputs[0][1].dtype
    return (dt.kind == "f" or str(dt) == "bfloat16") and \
        (forward or "while_loop" not in self.tags)

  def used(self) -> "Program":
    """The program without statements and inputs its output does not depend on."""
    live = {self.out}
    keep = []
    for s in reversed(self.stmts):
      if s.out in live:
        keep.append(s)
        live.update(s.args)
    keep.reverse()
    inputs = [(n, v) for i, (n, v) in enumerate(self.inputs) if i == 0 or n in live]
    return dataclasses.replace(self, inputs=inputs, stmts=keep)


def literal(a: np.ndarray) -> str:
  """A NumPy array as source text that rebuilds it exactly (dtype included)."""
  dtname = str(a.dtype)
  if a.dtype.kind == "f" or dtname == "bfloat16":
    body = repr(np.asarray(a, np.float64).tolist())
  elif a.dtype.kind == "c":
    body = repr(np.asarray(a, np.complex128).tolist())
  else:
    body = repr(a.tolist())
  body = body.replace("nan", "np.nan").replace("inf", "np.inf")
  if dtname == "bfloat16":
    return f"np.array({body}, dtype=jnp.bfloat16)"
  return f"np.array({body}, dtype=np.{dtname})"


def mode_call(mode: str, prog: Program) -> str:
  """The expression that runs `f` in `mode` (runner.MODES) on the program's arguments."""
  args = ", ".join(prog.names())
  rest = prog.names()[1:]
  axes = "(0" + ", None" * len(rest) + ")"
  vargs = ", ".join(["xb", *rest])
  return {
      "eager": f"f({args})",
      "jit": f"jax.jit(f)({args})",
      "grad": f"jax.grad(loss)({args})",
      "jit_grad": f"jax.jit(jax.grad(loss))({args})",
      "jvp": f"jax.jvp(lambda x: loss(x, {', '.join(rest)}), (x0,), (xb[1],))[1]",
      "jit_jvp": f"jax.jit(lambda x, t: jax.jvp(lambda x: loss(x, {', '.join(rest)}), (x,), (t,))[1])(x0, xb[1])",
      "vmap": f"jax.vmap(f, in_axes={axes})({vargs})",
      "jit_vmap": f"jax.jit(jax.vmap(f, in_axes={axes}))({vargs})",
      "vmap_grad": f"jax.vmap(jax.grad(loss), in_axes={axes})({vargs})",
      "jit_vmap_grad": f"jax.jit(jax.vmap(jax.grad(loss), in_axes={axes}))({vargs})",
  }[mode]


def repro_source(prog: Program, modes: Sequence[str], setup: str = "", *,
                 library: str = "ember") -> str:
  """A runnable script: the program, its arguments, and `modes` printed side by side.
  `library="jax"` gives the same script for real JAX."""
  if library == "jax":
    head = ["import numpy as np", "import jax", "import jax.numpy as jnp", "from jax import lax"]
  else:
    head = ["import numpy as np", "import ember as jax", "import ember.numpy as jnp",
            "from ember import lax"]
  if prog.x64:
    head.append('jax.config.update("jax_enable_x64", True)')
  if setup:
    head.append(setup)
  lines = [*head, "", "", prog.function_source(), ""]
  for n, v in prog.inputs:
    lines.append(f"{n} = jnp.asarray({literal(v)})")
  if any("vmap" in m or "jvp" in m for m in modes):
    lines.append(f"xb = jnp.asarray({literal(prog.batched())})")
  for m in modes:
    lines.append(f"print({m!r}, {mode_call(m, prog)})")
  return "\n".join(lines) + "\n"
