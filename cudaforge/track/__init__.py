"""Results: the run directory's files (the source of truth) and sinks such as W&B."""
