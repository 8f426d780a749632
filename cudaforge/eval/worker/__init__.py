"""The worker channel: the sandboxed process that holds a candidate's code, and the trusted side's way to it.

- ``candidate_worker``: the sandboxed side (``python -m cudaforge.eval.worker.candidate_worker CHANNEL_FD``).
- ``remote``: the verifier's handle on its worker (``CandidateProcess``: start, requests with deadlines, builds
  served on the worker's behalf, the end).
- ``channel``: framed messages over a socket pair, with file descriptors.
- ``exchange``: tensors through a shared arena (encoding, bounds, budgets).
- ``early``: a worker started before the verifier imports torch, so the two start-ups overlap.
"""
