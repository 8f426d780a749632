"""The Triton kernel of ``cudaforge.eval.fastclose`` (imported on first use: Triton is optional)."""

import triton
import triton.language as tl


@triton.jit
def count_not_close(a_ptr, e_ptr, out_ptr, n, atol, rtol, scale, BLOCK: tl.constexpr):
    """``out[pid]`` = how many of block ``pid``'s elements are not close (conservatively; see fastclose)."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(a_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    e = tl.load(e_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    err = tl.abs(a - e)
    within = (err <= (atol + rtol * tl.abs(e)) * scale) & (err < float("inf"))
    close = (a == e) | ((a != a) & (e != e)) | within
    bad = (close == 0) & inside
    tl.store(out_ptr + pid, tl.sum(bad.to(tl.int32), axis=0))


@triton.jit
def count_unequal(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``out[pid]`` = how many of block ``pid``'s words differ (integer words: an exact, bit-for-bit test)."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(a_ptr + offs, mask=inside, other=0)
    b = tl.load(b_ptr + offs, mask=inside, other=0)
    bad = (a != b) & inside
    tl.store(out_ptr + pid, tl.sum(bad.to(tl.int32), axis=0))
