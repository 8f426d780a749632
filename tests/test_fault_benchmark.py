"""The planted-fault benchmark's CPU subset (issue 52, benchmarks/faults/): faults made by its operators from honest
Triton kernels, one of each mechanism the default protocol catches them by, judged by its oracle and evaluated by
the real evaluator in Triton's interpreter. Every fault that changes an output is caught; the honest kernels, the
one folding its scale into the weights at construction included, are correct and unflagged. The whole benchmark
(144 faults, four protocols) is a script: docs/results/evaluator.md, "Planted faults"."""

from __future__ import annotations

import importlib.util
import os

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


@pytest.fixture(scope="module")
def bench():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # the oracle runs the kernels in a process of its own, on the CPU
    spec = importlib.util.spec_from_file_location("faults_run", FAULTS / "run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts benchmarks/faults on sys.path for its operators and oracle
    yield module
    if before is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = before


def test_the_default_protocol_catches_each_kind_of_planted_fault_and_passes_the_honest_kernels(bench, tmp_path):
    import oracle
    from operators import all_faults

    from cudaforge.tasks import load_directory

    tasks = {t.id: t for t in load_directory(FAULTS / "tasks", suite="faults")}
    kernels = {name: FAULTS / "kernels" / "triton" / name for name in {k for k, _ in PICKED} | set(HONEST)}
    faults, honest = [], []
    for name, path in sorted(kernels.items()):
        task, source = bench.task_of(path, tasks), path.read_text()
        if name in HONEST:
            honest.append({"kernel": name, "task": task.id, "source": source})
        made = all_faults(
            source, oracle.parameter_constants(task.source, source), oracle.scored_sizes(task.source, source)
        )
        for (kernel, prefix), expected in PICKED.items():
            if kernel == name:
                fault = next(f for f in made if f.name.startswith(prefix))
                faults.append(
                    {"kernel": name, "task": task.id, "kind": fault.kind, "name": fault.name, "source": fault.source}
                )
                faults[-1]["expected"] = expected
    assert len(faults) == len(PICKED)
    bench.judge_all(faults, tasks, {name: path.read_text() for name, path in kernels.items()}, jobs=2)
    assert all(not f["equivalent"] and f["compiles"] for f in faults), [(f["name"], f["witness"]) for f in faults]
    cfg = bench.preset("default", [f"build_cache_dir={tmp_path / 'build'}"])
    bench.evaluate_all(honest + faults, tasks, "default", cfg, jobs=2)
    for row in honest:
        verdict = row["protocols"]["default"]
        assert verdict["status"] == "correct" and verdict["outcome"] == "missed", (row["kernel"], verdict)
    for row in faults:
        verdict = row["protocols"]["default"]
        assert verdict["outcome"] == row["expected"], (row["name"], verdict)
    stats = bench.summary(honest, faults, ["default"])
    assert stats["default"]["caught"] == stats["default"]["total"] == len(PICKED)
    assert stats["default"]["honest_correct"] == len(HONEST) and stats["default"]["honest_flagged"] == 0
