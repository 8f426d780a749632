"""The process wing: every way cudaforge starts, confines and ends a process, and writes a file another process reads.

- ``sandbox``: the candidate's confinement (Landlock, namespaces, seccomp, an unprivileged uid, a minimal root, its
  private scratch and /tmp with quotas) and its launcher (``sandbox.launch``).
- ``isolation``: a child of our own code run to a deadline (``run_isolated``), its payload and result as files,
  with the one exit describer (``describe_exit``) and log reader (``tail``) of every child, the candidate's worker
  included (``cudaforge.eval.worker.remote``).
- ``child``: that child's side (``python -m cudaforge.proc.child ENTRY WORKDIR [PREPARE]``).
- ``files``: the one atomic writer (``write_atomic``).

Importing this package imports none of them: a child starts with what it needs only."""
