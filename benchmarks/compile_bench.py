"""How long candidate CUDA extensions take to build: torch's plain load_inline against our hooks.

For every CUDA candidate in benchmarks/candidates/ (or those given), each measurement runs in a
fresh Python process and times the candidate's import, which is where load_inline compiles:

  torch        torch's own load_inline, untouched, in a fresh TORCH_EXTENSIONS_DIR
  hooks_plain  our hooks with the light headers and the precompiled header off (cache and
               single-architecture build only): what the other measures are compared with
  hooks_cold   our hooks, every measure on, in a fresh cache (pays the one-time header build)
  hooks_warm   our hooks, a source the cache has not seen but with the precompiled header
               already built (the steady state of a run; the key is changed with a -D flag)
  hit          the same import again: a cache hit

Each hooks result also gives seconds per ninja target (``cuda.cuda.o``, ``main.o``, the link).

Without CUDA in torch, ``torch`` cannot build CUDA sources at all (it is reported as such) and
the hooks compile objects only (status ``compiled_only``). With a GPU, each built module is
checked against the PyTorch reference. Writes ``compile_bench.json`` and ``compile_bench.md``
to --out and prints the table.

    python benchmarks/compile_bench.py --out benchmarks/results/$(date +%F)_GPU_compile
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ROOT / "benchmarks" / "candidates"
MODES = ("torch", "hooks_plain", "hooks_cold", "hooks_warm", "hit")

# Reference computations for the GPU check: (inputs, init inputs, reference).
CHECKS = {
    "cuda_relu": ("relu", [(256, 1024)], []),
    "cuda_softmax": ("softmax", [(128, 1024)], []),
    "cuda_matmul_bias_relu": ("linear_relu", [(256, 256)], [256, 256]),
}


def ninja_seconds(build_dir: str) -> dict[str, float]:
    """Seconds per target of the last ninja runs in a build directory (from ``.ninja_log``)."""
    seconds: dict[str, float] = {}
    log = Path(build_dir) / ".ninja_log"
    if log.exists():
        for line in log.read_text().splitlines()[1:]:
            start, end, _, target, _ = line.split("\t")
            seconds[target] = round((int(end) - int(start)) / 1000, 2)
    return seconds


def child(mode: str, candidate: str, cache: str, nonce: str, check: bool) -> dict:
    """Run in the measuring process: import the candidate once, report time and status."""
    sys.path.insert(0, str(ROOT))
    import importlib.util

    import torch

    from cudaforge.eval.extensions import BuildSettings, build_hooks

    settings = None
    if mode != "torch":
        plain = mode == "hooks_plain"
        settings = BuildSettings(
            cache_dir=cache,
            light_headers=not plain,
            use_pch=not plain,
            fallback=os.environ.get("CF_BENCH_FALLBACK", "auto"),
            extra_cuda_cflags=[f"-DCF_BENCH_NONCE={nonce}"] if nonce else [],
        )
    started = time.perf_counter()
    error = None
    recorder = None
    module = None
    try:
        spec = importlib.util.spec_from_file_location(f"cand_{Path(candidate).stem}", candidate)
        module = importlib.util.module_from_spec(spec)
        if settings is None:
            spec.loader.exec_module(module)
        else:
            with build_hooks(settings) as recorder:
                spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - report whatever the build raised
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    seconds = time.perf_counter() - started
    result = {"seconds": round(seconds, 2), "error": error}
    if recorder is not None and recorder.records:
        record = recorder.records[0]
        result.update(
            status=record.status,
            cached=record.cached,
            variant=record.variant,
            measures=record.measures,
            fallbacks=record.fallbacks,
        )
        if not record.cached:
            result["targets"] = ninja_seconds(record.build_dir)
    else:
        result["status"] = "failed" if error else "built"
    if check and error is None and torch.cuda.is_available():
        result["check"] = check_candidate(module, Path(candidate).stem)
    return result


def check_candidate(module, stem: str) -> str:
    """Compare a built candidate with PyTorch on the GPU."""
    import torch

    if stem not in CHECKS:
        return "no reference"
    kind, shapes, init = CHECKS[stem]
    x = torch.randn(*shapes[0], device="cuda")
    model = module.ModelNew(*init).cuda()
    if kind == "relu":
        expected = torch.relu(x)
    elif kind == "softmax":
        expected = torch.softmax(x, dim=-1)
    else:
        expected = torch.relu(torch.nn.functional.linear(x, model.linear.weight, model.linear.bias))
    try:
        torch.testing.assert_close(model(x), expected, rtol=1e-4, atol=1e-4)
    except AssertionError as exc:
        return f"WRONG: {str(exc).splitlines()[0]}"
    return "ok"


def measure(mode: str, candidate: Path, cache: Path, nonce: str, check: bool, timeout: float) -> dict:
    """Run one measurement in a fresh process with a clean extension directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="torch-ext-") as ext_dir:
        env["TORCH_EXTENSIONS_DIR"] = ext_dir
        cmd = [sys.executable, __file__, "--child", mode, str(candidate), str(cache), nonce, str(int(check))]
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "seconds": timeout}
        wall = time.perf_counter() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"status": "crashed", "seconds": round(wall, 2), "error": proc.stderr[-500:]}
    result = json.loads(lines[-1])
    result["process_seconds"] = round(wall, 2)
    return result


def machine_info() -> dict:
    """Where and with what the numbers were taken."""
    sys.path.insert(0, str(ROOT))
    import torch

    from cudaforge.eval.extensions import toolchain_fingerprint
    from cudaforge.vendors import current

    gpu = "none"
    if shutil.which("nvidia-smi"):
        gpu = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            or "none"
        )
    cpu = ""
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "gpu": gpu,
        "arch": current().detect_arch(),
        "platform": platform.platform(),
        "toolchain": toolchain_fingerprint(),
        "torch_cuda_available": torch.cuda.is_available(),
    }


def table(results: dict) -> str:
    """A markdown table: seconds per candidate and mode, and what the hooks applied."""
    head = "| candidate | " + " | ".join(MODES) + " | hooks_warm applied |"
    rows = [head, "|" + " --- |" * (len(MODES) + 2)]
    for name, by_mode in results.items():
        cells = []
        for mode in MODES:
            r = by_mode.get(mode)
            if r is None:
                cells.append("-")
                continue
            note = (
                "" if r.get("status") in ("built", "compiled_only") and not r.get("error") else f" ({r.get('status')})"
            )
            if r.get("check") and r["check"] != "ok":
                note += f" {r['check']}"
            cells.append(f"{r['seconds']:.2f}{note}")
        warm = by_mode.get("hooks_warm", {})
        applied = ", ".join(warm.get("measures", [])) + (
            f"; fell back: {'; '.join(warm['fallbacks'])}" if warm.get("fallbacks") else ""
        )
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {applied} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("candidates", nargs="*", help="candidate files (default: benchmarks/candidates/cuda_*.py)")
    parser.add_argument("--out", default="outputs/compile-bench", help="output directory")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per measurement")
    parser.add_argument("--no-check", action="store_true", help="skip the GPU correctness check")
    parser.add_argument(
        "--fallback",
        choices=["auto", "race", "sequential"],
        default="auto",
        help="BuildSettings.fallback for the hooks modes",
    )
    parser.add_argument(
        "--child", nargs=5, metavar=("MODE", "CANDIDATE", "CACHE", "NONCE", "CHECK"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        mode, candidate, cache, nonce, check = args.child
        print(json.dumps(child(mode, candidate, cache, nonce, check == "1")), flush=True)
        return 0

    os.environ["CF_BENCH_FALLBACK"] = args.fallback
    candidates = [Path(c) for c in args.candidates] or sorted(
        p for p in CANDIDATES.glob("cuda_*.py") if p.stem != "cuda_compile_error"
    )
    modes = [m for m in args.modes.split(",") if m]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    print(json.dumps(info, indent=1), flush=True)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="cf-bench-") as tmp:
        for candidate in candidates:
            by_mode: dict[str, dict] = {}
            cold_cache = Path(tmp) / f"cold-{candidate.stem}"  # fresh: pays the precompiled header
            warm_cache = Path(tmp) / "shared"  # keeps its precompiled headers across candidates
            plan = {
                "torch": (cold_cache, ""),
                "hooks_plain": (Path(tmp) / f"plain-{candidate.stem}", ""),
                "hooks_cold": (cold_cache, ""),
                "hooks_warm": (warm_cache, f"{time.time_ns()}"),
            }
            if "hooks_warm" in modes and not (warm_cache / "pch").exists():
                measure("hooks_warm", candidate, warm_cache, "warmup", False, args.timeout)  # builds the header
            for mode in modes:
                if mode == "hit":
                    source_mode = "hooks_warm" if "hooks_warm" in modes else "hooks_cold"
                    cache, nonce = plan[source_mode]
                    by_mode["hit"] = measure(source_mode, candidate, cache, nonce, not args.no_check, args.timeout)
                else:
                    cache, nonce = plan[mode]
                    by_mode[mode] = measure(mode, candidate, cache, nonce, not args.no_check, args.timeout)
                print(f"{candidate.stem:24s} {mode:12s} {json.dumps(by_mode[mode])}", flush=True)
            results[candidate.stem] = by_mode
    text = table(results)
    report = {"machine": info, "modes": modes, "fallback": args.fallback, "results": results}
    (out / "compile_bench.json").write_text(json.dumps(report, indent=1))
    (out / "compile_bench.md").write_text(
        f"# Compile benchmark, {info['date']}\n\n{info['gpu']}, {info['cpus']} CPUs "
        f"({info['cpu']}), torch {info['toolchain']['torch']}, "
        f"{info['toolchain']['nvcc']}\n\nSeconds per candidate import.\n\n{text}\n"
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
