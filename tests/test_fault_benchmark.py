"""The planted-fault benchmark's CPU subset (issue 52, benchmarks/faults/): faults made by its operators from honest
Triton kernels, one of each mechanism the default protocol catches them by, judged by its oracle and evaluated by
the real evaluator in Triton's interpreter. Every fault that changes an output is caught; the honest kernels, the
one folding its scale into the weights at construction included, are correct and unflagged. The whole benchmark
(144 faults, four protocols) is a script: docs/results/evaluator.md, "Planted faults"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

FAULTS = REPO / "benchmarks" / "faults"
PICKED = {  # (kernel, fault name prefix): what catches it under eval=default
    ("level1_6_LayerNorm.py", "parameter_as_built@L34 self.ln.weight"): "rejected",  # varied parameters
    ("level1_6_LayerNorm.py", "memoised_on_address"): "rejected",  # a second call on new inputs
    ("level1_2_Softmax.py", "max_not_subtracted"): "rejected",  # hidden distributions (x100 overflows)
    ("level1_6_LayerNorm.py", "size_as_scored@L32 n_cols"): "flagged",  # held-out shapes
}
HONEST = ("level1_6_LayerNorm.py", "level2_1_LinearScale_folded.py")

DRIVER = textwrap.dedent(
    """
    import importlib.util, json, sys
    picked, honest_names, build = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
    spec = importlib.util.spec_from_file_location("faults_run", sys.argv[4])
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # puts benchmarks/faults on sys.path for its operators and oracle
    import oracle
    from operators import all_faults
    from cudaforge.tasks import load_directory

    tasks = {t.id: t for t in load_directory(bench.HERE / "tasks", suite="faults")}
    names = sorted({k for k, _, _ in picked} | set(honest_names))
    kernels = {name: bench.HERE / "kernels" / "triton" / name for name in names}
    faults, honest = [], []
    for name, path in kernels.items():
        task, source = bench.task_of(path, tasks), path.read_text()
        if name in honest_names:
            honest.append({"kernel": name, "task": task.id, "source": source})
        constants = oracle.parameter_constants(task.source, source)
        made = all_faults(source, constants, oracle.scored_sizes(task.source, source))
        for kernel, prefix, expected in picked:
            if kernel == name:
                fault = next(f for f in made if f.name.startswith(prefix))
                faults.append({"kernel": name, "task": task.id, "kind": fault.kind, "name": fault.name,
                               "source": fault.source, "expected": expected})
    bench.judge_all(faults, tasks, {name: path.read_text() for name, path in kernels.items()}, jobs=2)
    cfg = bench.preset("default", ["build_cache_dir=" + build])
    counted = [f for f in faults if not f["equivalent"] and f["compiles"]]
    bench.evaluate_all(honest + counted, tasks, "default", cfg, jobs=2)
    stats = bench.summary(honest, faults, ["default"])
    drop = lambda row: {k: v for k, v in row.items() if k != "source"}
    print("RESULT " + json.dumps({"honest": [drop(h) for h in honest], "faults": [drop(f) for f in faults],
                                  "stats": stats}))
    """
)


def test_the_default_protocol_catches_each_kind_of_planted_fault_and_passes_the_honest_kernels(tmp_path):
    picked = [[kernel, prefix, expected] for (kernel, prefix), expected in PICKED.items()]
    env = {**os.environ, "TRITON_INTERPRET": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run(  # a process of its own: Triton reads TRITON_INTERPRET once, when it is first imported
        [
            sys.executable,
            "-c",
            DRIVER,
            json.dumps(picked),
            json.dumps(HONEST),
            str(tmp_path / "build"),
            str(FAULTS / "run.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    faults = result["faults"]
    assert len(faults) == len(PICKED)
    assert all(not f["equivalent"] and f["compiles"] for f in faults), [(f["name"], f["witness"]) for f in faults]
    for row in result["honest"]:
        verdict = row["protocols"]["default"]
        assert verdict["status"] == "correct" and verdict["outcome"] == "missed", (row["kernel"], verdict)
    for row in faults:
        verdict = row["protocols"]["default"]
        assert verdict["outcome"] == row["expected"], (row["name"], verdict)
    stats = result["stats"]["default"]
    assert stats["caught"] == stats["total"] == len(PICKED)
    assert stats["honest_correct"] == len(HONEST) and stats["honest_flagged"] == 0


def test_a_results_folders_faults_without_sources_are_made_again_and_keep_their_oracles_verdicts(tmp_path):
    """A packed faults.json keeps verdicts, not sources: ``--faults`` on it makes each source again with the
    operators (matched by kernel and name), and ``--no-oracle`` keeps the earlier oracle's verdicts; a fault the
    operators no longer make stops the run, said which."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "CUDA_VISIBLE_DEVICES": ""}
    rows = [
        {
            "kernel": "level1_1_ReLU.py",
            "kind": "bounds",
            "name": "lt_to_le@L13 offs < n_elements",
            "equivalent": True,
            "compiles": True,
            "witness": "kept",
        },
        {
            "kernel": "level1_1_ReLU.py",
            "kind": "grid",
            "name": "cdiv_to_floor@L27 triton.cdiv(n, 1024)",
            "equivalent": False,
            "compiles": True,
            "witness": "kept too",
        },
    ]
    earlier = tmp_path / "earlier.json"

    def run(faults: list[dict]) -> subprocess.CompletedProcess:
        earlier.write_text(json.dumps({"summary": {}, "honest": [], "faults": faults}))
        command = [sys.executable, str(FAULTS / "run.py"), "--out", str(tmp_path / "out"), "--faults", str(earlier)]
        return subprocess.run(
            [*command, "--no-oracle", "--protocols", ""], capture_output=True, text=True, env=env, timeout=600
        )

    done = run(rows)
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads((tmp_path / "out" / "faults.json").read_text())
    assert [f["witness"] for f in written["faults"]] == ["kept", "kept too"]
    assert written["summary"]["counted"] == 1 and all("tl.store" in f["source"] for f in written["faults"])
    lost = run([{**rows[0], "name": "no_such_fault@L1"}])
    assert lost.returncode != 0 and "no_such_fault@L1" in lost.stderr
