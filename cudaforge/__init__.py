"""cudaforge: a research framework for LLM-written GPU kernels."""

__version__ = "0.1.0"
