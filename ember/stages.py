"""ember.stages (jax.stages): the types of jit's stages, `jit(f).trace(...)` -> Traced,
`.lower()` -> Lowered, `.compile()` -> Compiled, and `jit(f)` itself (Wrapped)."""
from typing import Any

from ember._src.compilation import Compiled, Lowered, Traced  # noqa: F401
from ember._src.jit import JitWrapped as Wrapped  # noqa: F401

CompilerOptions = dict[str, Any]  # as JAX: options `Lowered.compile(compiler_options=...)` takes
