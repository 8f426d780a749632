"""Which sandbox settings let Nsight Compute profile a process inside the candidate's sandbox (GPU probe).

    python benchmarks/ncu_sandbox_probe.py [--out FILE.json]

Runs ``ncu`` (inside the sandbox, with its target) over a one-kernel torch program under several sandbox
variants (the sandbox uid or uid 0 without capabilities; with and without namespaces; Landlock's TCP rules
handled or not) and prints, for each, whether ncu reported the kernel's metric, its exit status and the end of
its output. Also prints the driver's profiling restriction (RmProfilingAdminOnly).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaforge.proc.isolation import scrubbed_env  # noqa: E402
from cudaforge.proc.sandbox import Sandbox, SandboxMode  # noqa: E402
from cudaforge.profile.ncu import resolve_ncu  # noqa: E402

PROGRAM = "import torch; x = torch.ones(1 << 20, device='cuda'); y = (x * 2).sum(); torch.cuda.synchronize(); print('sum', y.item())"
VARIANTS = {
    "off": {"mode": SandboxMode.off},
    "nobody_ns_landlock": {},
    "nobody_ns_landlock_nonet": {"landlock_skip": ("net",)},
    "root_nocaps_ns_landlock": {"uid": None},
    "nobody_ns_nolandlock_net_scopes": {"landlock_skip": ("net", "scopes")},
    "nobody_ns_landlock_shm": {"write": ["/dev/shm"]},
    "nobody_ns_landlock_tmp": {"write": ["/tmp"]},
    "nobody_ns_landlock_shm_tmp_nonet": {"write": ["/dev/shm", "/tmp"], "landlock_skip": ("net",)},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--ncu", default="ncu", help="the ncu to try (a name on PATH or a path)")
    args = parser.parse_args()
    report: dict = {}
    try:
        report["params"] = [
            line for line in Path("/proc/driver/nvidia/params").read_text().splitlines() if "Profil" in line
        ]
    except OSError as exc:
        report["params"] = str(exc)
    ncu = resolve_ncu(args.ncu) or shutil.which(args.ncu)
    report["ncu"] = ncu
    if ncu is None:
        sys.exit(f"no ncu found ({args.ncu!r})")
    for name, kw in VARIANTS.items():
        if args.only and name not in args.only.split(","):
            continue
        scratch = tempfile.mkdtemp(prefix="cudaforge-probe-")
        os.chmod(scratch, 0o777)
        box = Sandbox(scratch=scratch, **kw)
        env = scrubbed_env(
            {
                "HOME": scratch,
                "TMPDIR": scratch,
                "XDG_CACHE_HOME": f"{scratch}/.cache",
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            }
        )
        argv = [
            ncu,
            "--clock-control",
            "none",
            "--target-processes",
            "all",
            "--metrics",
            "gpu__time_duration.sum",
            "--csv",
            sys.executable,
            "-c",
            PROGRAM,
        ]
        started = time.monotonic()
        with open(tempfile.mktemp(), "wb") as out, open(tempfile.mktemp(), "wb") as err:
            proc = box.start(argv, env=env, stdout=out, stderr=err)
            status = proc.status(30) if proc.control is not None else {"mode": "off"}
            try:
                code = proc.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "timeout"
            out.flush()
            err.flush()
            text = Path(out.name).read_text(errors="replace") + Path(err.name).read_text(errors="replace")
        row = {
            "exit": code,
            "seconds": round(time.monotonic() - started, 1),
            "metric_seen": "gpu__time_duration" in text and "==ERROR==" not in text,
            "missing": status.get("missing"),
            "uid": status.get("uid"),
            "tail": text[-1500:],
        }
        report[name] = row
        print(name, json.dumps({k: v for k, v in row.items() if k != "tail"}), flush=True)
        print("   ", row["tail"][-600:].replace("\n", "\n    "), flush=True)
        proc.cleanup() if hasattr(proc, "cleanup") else None
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(report.get("params")))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
