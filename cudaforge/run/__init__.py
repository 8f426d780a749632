"""Running suites: the loop over many tasks, budgets, resume, progress."""
