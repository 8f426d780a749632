"""Hardware facts shared by the evaluator, the profiler and the integrity guards.

GPU spec sheets and peak rates (``specs``), the roofline floor of a task (``roofline``) and
the per-GPU lock that keeps timing and profiling apart (``gpu_lock``). Nothing here imports
the evaluator or the profiler, so both can use it.
"""
