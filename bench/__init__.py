"""Benchmarks of the pipeline's resource use, each runnable as ``python -m bench.<name>``."""
