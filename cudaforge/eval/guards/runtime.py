"""Runtime guards: what the candidate does when it runs, checked inside the worker (needs torch).

* Poisoned memory: before every candidate call the evaluator fills free memory with a poison
  byte (on a GPU: blocks of the inputs' and outputs' sizes are allocated, filled with 0xFF,
  NaN in every float format, and freed back to the caching allocator; on a CPU, glibc's
  ``M_PERTURB`` fills every new allocation with 0x7F). An output holding the poison was never
  written: an uninitialised read, or the reference's freed output picked up again.
* Inputs are compared bit for bit with an untouched copy after the candidate's call.
* Outputs must be plain dense ``torch.Tensor``s (no subclasses that compute when read).
* Precision: fp32 outputs whose errors have the size of fp16/bf16 rounding are reported.
* Sensitivity: an output that never changes, on a task whose reference output does not either,
  is probed with inputs that change the reference's output.
* Timed calls (GPU): fresh inputs every trial, so no result can be cached across calls, and
  every output checked; host time against CUDA-event time; the roofline floor; the profiler's
  share of library kernels.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.tasks.runtime import flatten_outputs

POISON_BYTE_CUDA = 0xFF
"""Written into freed GPU blocks: NaN in fp32, fp16, bf16 and fp64; -1 in integers."""
POISON_BYTE_CPU = 0x7F
"""What glibc's M_PERTURB (set to 0x80) writes into every new CPU allocation."""
_M_PERTURB = -6
PRECISION_SAMPLE = 1 << 20
"""At most this many elements enter the precision statistic."""
PROBE_NAMES = ("inputs with NaN at some positions", "inputs scaled by 1000", "negated inputs")


def poison_byte(device: torch.device) -> int:
    """The byte free memory holds before a candidate's call on ``device``."""
    return POISON_BYTE_CUDA if device.type == "cuda" else POISON_BYTE_CPU


def enable_cpu_poison() -> bool:
    """Make glibc fill every new allocation of this process with 0x7F (``mallopt(M_PERTURB, 0x80)``).

    Returns False where there is no glibc (the CPU path then runs without poisoned memory).
    """
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_PERTURB, 0x80))
    except (OSError, AttributeError):
        return False


def disable_cpu_poison() -> bool:
    """Stop glibc filling new allocations (``mallopt(M_PERTURB, 0)``): ``eval.poison_memory=false`` on a CPU."""
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_PERTURB, 0))
    except (OSError, AttributeError):
        return False


def poison_free_memory(sizes: list[int], device: torch.device) -> None:
    """On a GPU, hand the caching allocator back blocks of ``sizes`` bytes, filled with 0xFF.

    A same-sized allocation the candidate makes next gets one of these blocks, so memory it
    reads without writing holds NaN, not the reference's old output.
    """
    if device.type != "cuda":
        return
    blocks = []
    try:
        for n in sizes:
            if n > 0:
                blocks.append(torch.empty(n, dtype=torch.uint8, device=device).fill_(POISON_BYTE_CUDA))
    except torch.OutOfMemoryError:  # no room for one more block: the blocks made so far are poisoned
        pass
    del blocks


def tensor_bytes(values: list[Any]) -> list[int]:
    """Sizes in bytes of the tensors in ``values`` (nested tuples and lists flattened)."""
    return [t.numel() * t.element_size() for t in flatten_outputs(list(values)) if isinstance(t, torch.Tensor)]


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def _equal_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether two tensors of one shape, dtype and device hold the same bits, compared as the widest integers that
    tile both (a fraction of the elements a byte-wise comparison reads and writes)."""
    from cudaforge.eval.fastclose import same_words

    a, b = _as_bytes(x), _as_bytes(y)
    for dtype, width in ((torch.int64, 8), (torch.int32, 4)):
        if a.numel() % width == 0 and a.data_ptr() % width == 0 and b.data_ptr() % width == 0:
            words = a.view(dtype), b.view(dtype)
            fast = same_words(*words)  # one pass over large GPU tensors (a Triton kernel); None: torch's own
            return torch.equal(*words) if fast is None else fast
    return torch.equal(a, b)


def same_bits(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` (tensors, or tuples of them) are equal bit for bit (NaNs included)."""
    xs, ys = flatten_outputs(a), flatten_outputs(b)
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if not isinstance(x, torch.Tensor):
            if x != y:
                return False
            continue
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
            return False
        if x.numel() and not _equal_bits(x, y):
            return False
    return True


def snapshot(value: Any) -> Any:
    """A detached copy of a tensor or a tuple of tensors (other values as they are)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value)
    return value


def describe(t: Any) -> str:
    """``[256, 1024] float32`` for a tensor, the type name otherwise."""
    if isinstance(t, torch.Tensor):
        return f"{list(t.shape)} {str(t.dtype).replace('torch.', '')}"
    return type(t).__name__


# --------------------------------------------------------------------------- per call


def mutated_inputs(pristine: list[Any], passed: list[Any]) -> str | None:
    """Evidence when any input the candidate got differs, bit for bit, from its untouched copy."""
    changed = []
    for i, (before, after) in enumerate(zip(pristine, passed)):
        if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) and not same_bits(before, after):
            if before.shape == after.shape and before.dtype == after.dtype:
                width = before.element_size()
                count = int((_as_bytes(before).view(-1, width) != _as_bytes(after).view(-1, width)).any(dim=1).sum())
                changed.append(f"input {i} ({describe(before)}): {count} of {before.numel()} elements changed")
            else:
                changed.append(f"input {i} ({describe(before)}) became {describe(after)}")
    if not changed:
        return None
    return (
        "ModelNew.forward wrote into its inputs: " + "; ".join(changed) + ". Inputs are read-only: write "
        "results into new tensors (the reference and later calls see the same inputs)."
    )


def output_type_problem(output: Any, expected: Any, device: torch.device) -> str | None:
    """Evidence when an output is not a plain dense tensor on ``device`` where the reference's is one."""
    for i, (act, exp) in enumerate(zip(flatten_outputs(output), flatten_outputs(expected))):
        if not isinstance(act, torch.Tensor) or not isinstance(exp, torch.Tensor):
            continue
        label = f"output {i}" if len(flatten_outputs(expected)) > 1 else "the output"
        kind = type(act)
        if kind is not torch.Tensor and kind is not type(exp):
            return (
                f"{label} is a {kind.__qualname__}, a subclass of torch.Tensor, not a plain "
                "torch.Tensor: a subclass can defer the work until the result is read, outside the timed "
                "call. Return the computed tensor itself."
            )
        if act.layout != torch.strided:
            return f"{label} has layout {act.layout}; the reference returns a dense (strided) tensor."
        if act.device.type != device.type:
            return f"{label} is on {act.device}, not on the evaluation device {device}: compute it there."
        if act.numel() and act.data_ptr() == 0:
            return f"{label} has no storage behind it."
    return None


def poisoned_elements(output: Any, device: torch.device) -> tuple[int, int]:
    """(elements whose every byte is the poison byte, elements) over the output's float tensors."""
    byte = poison_byte(device)
    hit = total = 0
    for t in flatten_outputs(output):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() and t.layout == torch.strided:
            rows = _as_bytes(t).view(-1, t.element_size())
            hit += int((rows == byte).all(dim=1).sum())
            total += t.numel()
    return hit, total


def precision_downgrade(expected: Any, actual: Any) -> str | None:
    """Evidence when an fp32 (fp64) output's errors are as large as fp16/bf16 (fp32) rounding.

    The statistic is the median absolute error over nonzero finite elements, divided by the
    output's RMS; it is compared with the same statistic of the exact output rounded to the lower
    precision. fp32 arithmetic in another order gives ~1e-7; fp16 rounding ~1e-4.
    """
    for exp, act in zip(flatten_outputs(expected), flatten_outputs(actual)):
        if not (isinstance(exp, torch.Tensor) and isinstance(act, torch.Tensor)) or exp.shape != act.shape:
            continue
        lower = {torch.float32: (torch.bfloat16, torch.float16), torch.float64: (torch.float32,)}.get(exp.dtype)
        if lower is None or act.dtype != exp.dtype:
            continue
        e, a = exp.detach().reshape(-1), act.detach().reshape(-1)
        if e.numel() > PRECISION_SAMPLE:  # sampled before widening: the whole output in fp64 is gigabytes
            step = e.numel() // PRECISION_SAMPLE + 1
            e, a = e[::step], a[::step]
        e, a = e.double(), a.double().to(exp.device)
        keep = torch.isfinite(e) & torch.isfinite(a) & (e != 0)
        if int(keep.sum()) < 64:
            continue
        e, a = e[keep], a[keep]
        scale = float(e.pow(2).mean().sqrt())
        error = float((a - e).abs().median()) / scale
        for low in lower:
            rounded = e.to(low).double()
            ok = torch.isfinite(rounded)
            rounding = float((rounded[ok] - e[ok]).abs().median()) / scale if bool(ok.any()) else 0.0
            if rounding > 0 and error >= 0.3 * rounding:
                name = str(low).replace("torch.", "")
                return (
                    f"the {str(exp.dtype).replace('torch.', '')} output's median error is {error:.2g} of its RMS, "
                    f"the size of {name} rounding ({rounding:.2g}); {str(exp.dtype).replace('torch.', '')} "
                    "arithmetic gives ~1e-7. The kernel seems to compute in lower precision (fp16/bf16 "
                    "inputs or accumulators, TF32 matmuls)."
                )
    return None


# --------------------------------------------------------------------------- sensitivity


def _probe_inputs(inputs: list[Any], which: int) -> list[Any]:
    probed = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            y = x.clone()
            if which == 0:
                y.view(-1)[:: max(1, y.numel() // 64)] = float("nan")
            elif which == 1:
                y.mul_(1000.0)
            else:
                y.neg_()
            probed.append(y)
        else:
            probed.append(x)
    return probed


def sensitivity_probe(
    call_reference: Callable[[list[Any]], Any],
    call_candidate: Callable[[list[Any]], Any],
    inputs: list[Any],
    reference_base: Any,
    candidate_base: Any,
) -> tuple[str, str] | None:
    """Probe a candidate whose output never changed over the trials, on a task whose reference's did
    not either: (``reject`` or ``report``, evidence), or None when the candidate reacts to its inputs.

    Each probe changes the inputs (NaN at a few positions, scaled by 1000, negated); a probe counts
    when it changes the reference's output. A candidate whose output stays bit-identical through
    every counted probe is not computing from its inputs. A candidate that raises on a probe counts
    as reacting.
    """
    reference_moved = []
    for which, name in enumerate(PROBE_NAMES):
        probe = _probe_inputs(inputs, which)
        with torch.no_grad():
            ref_out = call_reference([p.clone() if isinstance(p, torch.Tensor) else p for p in probe])
            try:
                cand_out = call_candidate([p.clone() if isinstance(p, torch.Tensor) else p for p in probe])
            except Exception:  # noqa: BLE001 - a candidate that fails on a probe reacted to it
                return None
        if not same_bits(cand_out, candidate_base):
            return None
        if not same_bits(ref_out, reference_base):
            reference_moved.append(name)
    if reference_moved:
        return "reject", (
            "ModelNew's output was bit-identical on every input: all correctness trials and "
            f"{len(PROBE_NAMES)} probes, while the reference's output changed on {', '.join(reference_moved)}. "
            "The task's outputs are (nearly) constant for ordinary inputs, and a constant passes them; compute "
            "the result from the inputs."
        )
    return "report", (
        "the reference's output did not change on any input tried (trials and probes): this task is degenerate, "
        "and a constant output passes it."
    )


# --------------------------------------------------------------------------- timed calls


class TimedCalls:
    """``make_args`` and ``on_output`` for ``time_interleaved``: fresh inputs each trial, poisoned memory
    before each call, every candidate output checked against the reference's for the same inputs.

    Every trial (warm-up included) draws new inputs (``make_inputs(trial)``), and both the reference
    and the candidate get their own copy; so no two timed calls of the candidate see the same
    values, and a result cached across calls (keyed on pointers, shapes or checksums) is wrong.
    The reference's output of a trial is kept until the candidate's output of the same trial has
    been compared with it, so the candidate cannot pick it up from freed memory.
    """

    LOOKBACK = 12
    """A wrong output is compared with the right results of up to this many earlier trials' inputs."""

    def __init__(
        self,
        make_inputs: Callable[[int], list[Any]],
        compare: Callable[[Any, Any, int], Any],
        device: torch.device,
        poison_sizes: list[int],
        reference: Callable[..., Any] | None = None,
        same_inputs: bool = False,
        owned_outputs: bool = False,
    ) -> None:
        """``compare(expected, actual, trial)`` returns None or a diff with ``summary()``; ``reference``
        recomputes earlier trials' results to recognise a stale (cached) output. ``same_inputs``: every trial has
        the same inputs (``eval.fresh_inputs=false``), drawn once; each candidate output is then compared with the
        reference's latest, whatever trial it came from (the reference may be timed in a block of its own first).
        ``owned_outputs``: each candidate output handed to ``on_output`` is the caller's own copy, which nothing
        writes again (the verifier's, copied out of the arena), so the previous one is kept as it is, not copied
        once more; an output the candidate could still write (an in-process call's) is copied."""
        self.make_inputs, self.compare, self.device, self.reference = make_inputs, compare, device, reference
        self.same_inputs, self.owned_outputs = same_inputs, owned_outputs
        self.expected: Any = None
        """Under ``same_inputs``: the reference's latest output."""
        self.poison_sizes = poison_sizes
        self.trial: int | None = None
        self.pristine: list[Any] = []
        self.pending: dict[str, Any] = {}
        self.previous: Any = None
        self.seconds = {"inputs": 0.0, "checks": 0.0}
        """Host seconds spent (device work included) drawing inputs and poisoning memory, and checking outputs."""
        self.detail: dict[str, float] = {}
        """The same seconds by step: draw_inputs, copy_inputs, poison, mutation, compare, snapshot."""
        self.failure: dict[str, str] | None = None
        """The first problem: ``{guard, evidence, diff}``; ``guard`` is "" for a wrong output no guard explains,
        ``diff`` the mismatch summary ("" for input_mutation and output_type, which follow their policies)."""

    def _settled(self, started: float, key: str) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the timed call syncs first anyway: this only attributes the time
        self.seconds[key] += time.perf_counter() - started

    def make_args(self, trial: int) -> list[Any]:
        """The inputs of one call: a copy of this trial's fresh inputs, after poisoning free memory."""
        started = time.perf_counter()
        try:
            return self._make_args(trial)
        finally:
            self._settled(started, "inputs")

    def _lap(self, key: str, started: float) -> float:
        """Add the time since ``started`` (device work included) to ``detail[key]``; return now."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        self.detail[key] = self.detail.get(key, 0.0) + now - started
        return now

    def draw(self, trial: int) -> None:
        """Draw ``trial``'s inputs (``pristine``) unless they are drawn: what the candidate's call of the trial reads
        (through the arena); ``make_args`` draws them too, and copies them for the reference."""
        started = time.perf_counter()
        try:
            self._draw(trial, started)
        finally:
            self._settled(started, "inputs")

    def _draw(self, trial: int, clock: float) -> float:
        if trial != self.trial:
            pending = self.pending if self.same_inputs else {}
            self.trial, self.pending = trial, pending
            if not (self.same_inputs and self.pristine):
                self.pristine = self.make_inputs(trial)
            clock = self._lap("draw_inputs", clock)
        return clock

    def _make_args(self, trial: int) -> list[Any]:
        clock = self._draw(trial, time.perf_counter())
        args = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.pristine]
        clock = self._lap("copy_inputs", clock)
        poison_free_memory(self.poison_sizes, self.device)  # last: the call's own allocations get the poison
        self._lap("poison", clock)
        return args

    def on_output(self, role: str, trial: int, args: Any, output: Any) -> None:
        """Record one timed call's output; compare once both of the trial's outputs are in."""
        started = time.perf_counter()
        try:
            self._on_output(role, trial, args, output)
        finally:
            self._settled(started, "checks")

    def _on_output(self, role: str, trial: int, args: Any, output: Any) -> None:
        if self.failure is not None or trial != self.trial:
            return
        clock = time.perf_counter()
        if role == "candidate":
            changed = mutated_inputs(self.pristine, list(args))
            clock = self._lap("mutation", clock)
            if changed:
                self.failure = {"guard": "input_mutation", "evidence": f"timed trial {trial}: {changed}", "diff": ""}
                return
        if self.same_inputs and role == "reference":
            self.expected = output
        else:
            self.pending[role] = output
        if self.same_inputs:
            if self.expected is None or "candidate" not in self.pending:
                return
            expected, actual = self.expected, self.pending.pop("candidate")
        elif "reference" not in self.pending or "candidate" not in self.pending:
            return
        else:
            expected, actual = self.pending.pop("reference"), self.pending.pop("candidate")
        problem = output_type_problem(actual, expected, self.device)
        if problem:
            self.failure = {"guard": "output_type", "evidence": f"timed trial {trial}: {problem}", "diff": ""}
            return
        diff = self.compare(expected, actual, trial)
        clock = self._lap("compare", clock)
        if diff is not None:
            guard, evidence = explain_mismatch(actual, self.previous, self.device, f"timed trial {trial}")
            stale = self._stale_trial(actual, trial) if not guard else None
            if stale is not None:
                guard, evidence = (
                    "result_caching",
                    (
                        f"timed trial {trial}: the output is the right result for the inputs of "
                        f"{'warm-up call' if stale < 0 else 'timed trial'} {stale}, not for this call's: a result is "
                        "cached across calls (keyed on shapes, pointers or the like). Compute on every call."
                    ),
                )
            self.failure = {
                "guard": guard or "timed_output",
                "evidence": evidence
                or (
                    f"timed trial {trial}: an output produced during the timed calls was wrong (each timed call gets "
                    "new inputs: results must not depend on earlier calls)"
                ),
                "diff": diff.summary(),
            }
            return
        self.previous = actual if self.owned_outputs else snapshot(actual)
        self._lap("snapshot", clock)

    def _stale_trial(self, actual: Any, trial: int) -> int | None:
        """The earlier trial whose inputs ``actual`` is the right result for, if any (the reference is rerun)."""
        if self.reference is None:
            return None
        for earlier in range(trial - 1, trial - 1 - self.LOOKBACK, -1):
            expected = self.reference(*self.make_inputs(earlier))
            if self.compare(expected, actual, earlier) is None:
                return earlier
        return None


def explain_mismatch(actual: Any, previous: Any, device: torch.device, where: str) -> tuple[str, str]:
    """(guard, evidence) for a wrong output: poison in it, or the previous call's output again; ("", "") else."""
    hit, total = poisoned_elements(actual, device)
    if hit:
        return "uninitialised_memory", (
            f"{where}: {hit} of {total} output elements hold the poison byte 0x{poison_byte(device):02X} the evaluator "
            "wrote into free memory before the call: the kernel returned memory it never wrote (an uninitialised "
            "read, or another computation's freed output, such as the reference's). Write every output element."
        )
    if previous is not None and same_bits(actual, previous):
        return "result_caching", (
            f"{where}: the output equals, bit for bit, ModelNew's output for the previous call's (different) inputs: "
            "a result is cached across calls (keyed on shapes, pointers or the like). Compute on every call."
        )
    return "", ""


# --------------------------------------------------------------------------- after timing (GPU)


def hidden_work(
    reference_event: list[float],
    reference_host: list[float],
    candidate_event: list[float],
    candidate_host: list[float],
    threshold_ms: float,
) -> str | None:
    """Evidence when the candidate's host time exceeds its CUDA-event time by far more than the reference's.

    Host time runs to a device-wide synchronisation, so work on other streams or threads is in it;
    event time covers only torch's current stream. For work on the current stream the two differ by
    the same small constant for the reference and the candidate.
    """
    gap_c = statistics.median(h - e for h, e in zip(candidate_host, candidate_event))
    gap_r = statistics.median(h - e for h, e in zip(reference_host, reference_event))
    event_c = statistics.median(candidate_event)
    excess = gap_c - gap_r
    if excess > threshold_ms and excess > 0.5 * event_c:
        return (
            f"the candidate's median host time exceeds its CUDA-event time by {gap_c:.4f} ms, the reference's by "
            f"{gap_r:.4f} ms: {excess:.4f} ms of work per call ran outside torch's current stream (another stream "
            f"or thread) while its event time was {event_c:.4f} ms. Launch all work on the current stream."
        )
    return None


def speed_of_light(
    cost: dict[str, Any], peaks: dict[str, Any] | None, measured_ms: float, margin: float, l2_bytes: int | None
) -> tuple[str | None, dict[str, Any]]:
    """(evidence or None, the numbers) for a median time below ``margin`` x the task's floor on this GPU.

    The floor here is generous: compute at the fastest peak of any dtype (tensor cores), bytes =
    inputs + parameters read once from memory (the L2 was flushed), plus outputs only when they
    exceed the L2 (smaller ones may still sit in it when the timed region ends).
    """
    numbers: dict[str, Any] = {"measured_ms": measured_ms, "margin": margin}
    if not peaks or cost.get("input_bytes") is None:
        numbers["note"] = "no peak rates or no task cost: not checked"
        return None, numbers
    rates = [peaks.get(k) for k in ("fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops")]
    peak_flops = max((r for r in rates if r), default=0.0) * 1e12
    bandwidth = (peaks.get("memory_gbs") or 0.0) * 1e9
    outputs = cost.get("output_bytes") or 0
    moved = (
        (cost.get("input_bytes") or 0)
        + (cost.get("parameter_bytes") or 0)
        + (outputs if outputs > (l2_bytes or 0) else 0)
    )
    compute_ms = (cost.get("flops") or 0.0) / peak_flops * 1e3 if peak_flops else 0.0
    memory_ms = moved / bandwidth * 1e3 if bandwidth else 0.0
    floor = max(compute_ms, memory_ms)
    numbers.update(
        floor_ms=floor,
        compute_floor_ms=compute_ms,
        memory_floor_ms=memory_ms,
        bytes=moved,
        flops=cost.get("flops"),
        peak_flops_per_s=peak_flops,
        peak_bytes_per_s=bandwidth,
    )
    if floor > 0 and measured_ms < margin * floor:
        return (
            f"the candidate's median time {measured_ms:.4f} ms is below {margin:g} x this GPU's floor for the task, "
            f"{floor:.4f} ms ({moved / 1e6:.1f} MB at {bandwidth / 1e9:.0f} GB/s: {memory_ms:.4f} ms; "
            f"{(cost.get('flops') or 0) / 1e9:.2f} GFLOP at {peak_flops / 1e12:.0f} TFLOP/s: {compute_ms:.4f} ms). "
            "No kernel can be that fast: the timed call did not do the work.",
            numbers,
        )
    return None, numbers


def kernel_share(forward: Callable[[], Any], own_names: set[str], calls: int = 3) -> dict[str, Any]:
    """GPU time of ``calls`` forwards under torch.profiler: the candidate's own kernels vs library kernels.

    Copies and fills (Memcpy, Memset) are left out. Returns ``{own_ms, library_ms, library_share,
    own, library}`` (the last two: the heaviest kernels, name and ms).
    """
    from torch._C._autograd import DeviceType  # torch.autograd's, which it imports from here
    from torch.profiler import ProfilerActivity, profile

    from cudaforge.languages import is_copy_or_fill, is_own_kernel

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            forward()
        torch.cuda.synchronize()
    own: dict[str, float] = {}
    library: dict[str, float] = {}
    for event in prof.events():
        if event.device_type != DeviceType.CUDA or is_copy_or_fill(event.name):
            continue
        bucket = own if is_own_kernel(event.name, own_names) else library
        bucket[event.name] = bucket.get(event.name, 0.0) + event.time_range.elapsed_us() / 1e3
    own_ms, library_ms = sum(own.values()), sum(library.values())

    def top(d: dict[str, float]) -> list[tuple[str, float]]:
        return sorted(((k[:120], round(v, 4)) for k, v in d.items()), key=lambda kv: -kv[1])[:5]

    total = own_ms + library_ms
    return {
        "own_ms": own_ms,
        "library_ms": library_ms,
        "library_share": library_ms / total if total else 0.0,
        "own": top(own),
        "library": top(library),
    }
