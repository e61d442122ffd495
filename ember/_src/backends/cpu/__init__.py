"""The CPU backend: LLVM code generation with llvmlite, math library, executable."""
