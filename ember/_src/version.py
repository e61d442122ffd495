"""ember's version: here, below everything, so that code inside ember/_src (a cache key's
environment) reads it without importing the public package."""

__version__ = "0.1.0"
