"""ember.stages: the stages of a jitted call, as jax.stages names them.

`jit(f)` is a Wrapped; `.trace(*args)` gives a Traced (the jaxpr), `.lower(*args)` a
Lowered (the StableHLO module), `.compile()` a Compiled (the optimized executable).
"""
from ember._src.driver.compilation import ArgInfo, Compiled, Lowered, Traced  # noqa: F401
from ember._src.driver.jit import PjitFunction as Wrapped  # noqa: F401

from typing import Any as _Any  # noqa: E402

CompilerOptions = dict[str, _Any]   # jax.stages.CompilerOptions: `compile(compiler_options=)`
