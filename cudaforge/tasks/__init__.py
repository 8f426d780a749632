"""Task suites: loaders for KernelBench layouts, its HF export, single files, our own suites; audits; the
problem-set identity that a run records (``problem_set``)."""

from cudaforge.tasks.identity import problem_set, run_version
from cudaforge.tasks.loader import TaskError, load_directory, load_hf_export, load_problem_file, parse_problem
from cudaforge.tasks.suite import find_task, load_suite, selection

__all__ = [
    "TaskError",
    "find_task",
    "load_directory",
    "load_hf_export",
    "load_problem_file",
    "load_suite",
    "parse_problem",
    "problem_set",
    "run_version",
    "selection",
]
