"""jax._src.compiler, which chex imports (chex.restrict_backends).

chex's restrict_backends wraps `backend_compile_and_load` (or the older `backend_compile`)
of this module when it has one, to refuse compiling for some platforms. ember compiles for
its one CPU backend through ember._src.driver.compilation, not through a patchable function here,
so this module deliberately has neither name and chex's restrict_backends restricts nothing
(docs/ecosystem.md).
"""
