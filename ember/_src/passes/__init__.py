"""Optimization passes: one file per pass (module -> module), and the pipeline."""
