"""Task suites: loaders for KernelBench layouts, its HF export, single files, our own suites; audits."""

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
    "selection",
]
