"""The record of the timed calls (cudaforge.eval.timed_trace): calls delimited by markers, work outside them found."""

from __future__ import annotations

from cudaforge.eval.timed_trace import MARKER, DeviceEvent, analyse, checked_summary

TIMED = 7  # the timed stream
SPIN = f"void at::cuda::(anonymous namespace)::{MARKER}(long)"


def call(t0: int, work: list[tuple[str, int, int, int]], lead_ns: int = 500_000, end_ns: int | None = None):
    """One timed call at ``t0``: the lead's spin, the work (name, stream, start, end relative to the lead's end), the
    end marker ``end_ns`` after the lead's end (default: right after the last work on the timed stream)."""
    events = [DeviceEvent(SPIN, TIMED, t0, t0 + lead_ns)]
    body = t0 + lead_ns
    for name, stream, start, end in work:
        events.append(DeviceEvent(name, stream, body + start, body + end))
    last = max([body + e for _, s, _, e in work if s == TIMED] + [body + 500])
    end_at = body + end_ns if end_ns is not None else last + 300
    events.append(DeviceEvent(SPIN, TIMED, end_at, end_at + 1_000))
    return events


def test_honest_calls_on_one_stream_and_joined_streams_are_inside():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    events += call(10_000_000, [("relu_kernel", 13, 1_000, 5_000), ("add_kernel", TIMED, 5_200, 6_000)])
    summary = analyse(events, 2)
    assert summary["complete"] and summary["windows"] == 2
    assert summary["escaped"] == 0 and summary["outside"] == []
    assert summary["span_ms"] == [0.004, 0.005]


def test_side_stream_work_during_the_lead_escapes_at_four_microseconds():
    # the kernel on a stream of its own starts as soon as it is launched, while the timed stream still spins
    events = call(0, [("relu_kernel", 13, -400_000, -396_000)], end_ns=800)
    summary = analyse(events, 1)
    assert summary["complete"] and summary["escaped"] == 1
    assert summary["early_us"] >= 390 and summary["span_ms"] == [0.004]


def test_work_after_the_end_event_escapes():
    events = call(0, [("relu_kernel", 13, 500, 4_500)], end_ns=1_200)
    summary = analyse(events, 1)
    assert summary["escaped"] == 1 and summary["late_us"] > 3


def test_timer_granularity_is_not_an_escape():
    events = call(0, [("relu_kernel", TIMED, -200, 3_000)])  # 0.2 us "before" the lead ends: the timer's grain
    assert analyse(events, 1)["escaped"] == 0


FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>>(int, ...)"


def test_kernels_between_calls_are_found_copies_and_fills_are_not():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    events += [
        DeviceEvent("Memcpy DtoD (Device -> Device)", TIMED, 2_000_000, 2_001_000, kind="copy"),
        DeviceEvent(FILL, TIMED, 2_002_000, 2_003_000),
        DeviceEvent("relu_kernel", 21, 3_000_000, 3_004_000),
    ]
    events += call(10_000_000, [("relu_kernel", TIMED, 1_000, 2_000)])
    summary = analyse(events, 2)
    assert summary["complete"] and summary["escaped"] == 0
    assert summary["outside"] == [["relu_kernel", 4.0]] and summary["outside_us"] == 4.0
    assert summary["span_ms"] == [0.008, 0.001]  # the kernel between the calls is charged to the first


def test_a_kernel_named_like_the_workers_copies_is_not_one_of_them():
    # red team round 6: a Triton kernel called direct_copy_relu, or a CUDA kernel called Memcpy_relu, run between calls
    for name in ("direct_copy_relu", "Memcpy_relu", "my_FillFunctor_gemm", "copy_kernel"):
        events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)]) + [DeviceEvent(name, TIMED, 2_000_000, 2_030_000)]
        summary = analyse(events, 1)
        assert summary["outside"] == [[name, 30.0]], name
    learned = frozenset({"void at::native::elementwise_kernel<128, 4, direct_copy_kernel_cuda ...>"})
    own = call(0, []) + [DeviceEvent(next(iter(learned)), TIMED, 2_000_000, 2_001_000)]
    assert analyse(own, 1, io_names=learned)["outside"] == []


def test_only_the_probes_marker_on_the_timed_stream_delimits_calls():
    events = call(0, [("relu_kernel", 13, -400_000, -396_000)], end_ns=800)
    # the candidate's own spin kernels on its side stream, as many as ours and first in the record
    fakes = [DeviceEvent("spin_kernel_fake", 13, t, t + 10) for t in (-10_000, 600_000)]
    summary = analyse(fakes + events, 1, marker_name=SPIN, stream=TIMED)
    assert summary["complete"] and summary["escaped"] == 1
    assert not analyse(events, 1, marker_name=SPIN, stream=99)["complete"]  # no markers on the timed stream
    assert "markers on the timed stream" in analyse(events, 1, marker_name=SPIN, stream=99)["why"]


def test_the_record_is_read_in_one_pass():
    import time

    events = []
    for k in range(160):
        events += call(k * 10_000_000, [(f"k{j}", TIMED, 1_000 + 10 * j, 1_005 + 10 * j) for j in range(1200)])
    started = time.perf_counter()
    summary = analyse(events, 160)
    assert summary["complete"] and summary["escaped"] == 0 and len(summary["span_ms"]) == 160
    assert time.perf_counter() - started < 20  # 192 000 activities, read in one pass


def test_missing_or_extra_markers_make_the_record_incomplete():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    assert not analyse(events, 2)["complete"]
    events.append(DeviceEvent(SPIN, TIMED, 900_000, 901_000))  # the candidate's own _sleep on the timed stream
    assert not analyse(events, 1)["complete"]
    assert not analyse([], 1)["complete"]


def test_checked_summary_refuses_forged_replies():
    good = analyse(call(0, [("k", TIMED, 0, 10)]), 1)
    assert checked_summary(good, 1)["complete"]
    assert not checked_summary(good, 2)["complete"]  # the verifier's own count decides
    for forged in (
        None,
        [],
        {**good, "escaped": -1},
        {**good, "early_us": float("nan")},
        {**good, "span_ms": "x"},
        {**good, "span_ms": [1.0] * 20_000},
        {**good, "outside": [["k", 1.0]] * 6},
        {**good, "windows": True},
        {**good, "early_us": 10**400},
        {**good, "span_ms": [10**400]},
        {**good, "outside": [["k", float("nan")]]},
        {**good, "outside": [["k", 10**400]]},
    ):
        assert checked_summary(forged, 1) is None
    # a well-typed summary without one span per call is incomplete, and says so
    short = checked_summary({**good, "span_ms": []}, 1)
    assert not short["complete"] and "0 spans" in short["why"]


def test_the_static_guards_name_the_ways_around_the_record():
    """Red team round 6: a signal handler, profiler controls, CUPTI and host functions from C++, bare threads, ATen's
    namespace: each is a static finding (a signal handler ran the compute between the worker's steps)."""
    from cudaforge.eval.guards import Policies, static_findings

    def guards(source: str) -> set[str]:
        return {f["guard"] for f in static_findings(source, Policies({}), None)}

    head = "import torch\nimport torch.nn as nn\n"
    model = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    assert "concurrency" in guards(head + "import signal\n" + model)
    toggle = model.replace("return x", "_toggle_collection_dynamic(False, set())\n        return x")
    assert "concurrency" in guards(head + "from torch.autograd.profiler import _toggle_collection_dynamic\n" + toggle)
    for cxx, guard in (
        ("using namespace std; thread t(work);", "concurrency"),
        ("cuptiActivityDisable(k);", "concurrency"),
        ("void* f = dlsym(h, name);", "concurrency"),
        ("cuLaunchHostFunc(s, f, 0);", "concurrency"),
        ("syscall(SYS_clone, 0);", "concurrency"),
        ("namespace at { namespace native { } }", "monkey_patch"),
    ):
        source = (
            head + f"from torch.utils.cpp_extension import load_inline\nsrc = r'''\n{cxx}\n'''\n"
            "ext = load_inline(name='e', cpp_sources='', cuda_sources=src)\n" + model
        )
        assert guard in guards(source), cxx
    honest = (
        head + "from torch.utils.cpp_extension import load_inline\nsrc = r'''\nauto y = x.clone(); int threads = 256;\n"
        "dim3 block(threads); // each thread computes (one element)\n'''\n"
        "ext = load_inline(name='e', cpp_sources='', cuda_sources=src)\n" + model
    )
    assert "concurrency" not in guards(honest) and "monkey_patch" not in guards(honest)


def test_copies_and_fills_are_told_by_what_no_kernel_name_can_be():
    from cudaforge.eval.timed_trace import activity_kind

    assert activity_kind("Memcpy DtoD (Device -> Device)", 5) == "copy"  # whatever form the activity type takes
    assert activity_kind("Memset (Device)", "") == "copy"
    assert activity_kind("anything", "gpu_memcpy") == "copy"
    for name in ("Memcpy", "Memcpy_relu", "MemcpyDtoD(float*)", "void Memset<float>(float*)", "relu_kernel"):
        assert activity_kind(name, 5) == "kernel", name
