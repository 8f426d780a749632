"""Task loading, selection and bad-input errors (no task module is executed here)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import problem_source

from cudaforge.tasks import TaskError, load_directory, load_hf_export, load_problem_file, load_suite
from cudaforge.tasks.suite import find_task


def suite_cfg(**kw):
    base = dict(
        name="kb",
        kind="kernelbench",
        root=None,
        levels=[],
        problem_ids=[],
        names=[],
        subset=None,
        first_n=None,
        shuffle_seed=None,
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_kernelbench_layout_loads_in_order(kernelbench_root):
    tasks = load_directory(kernelbench_root, suite="kb")
    assert [t.id for t in tasks] == ["kb/level1/1_Relu_a", "kb/level1/2_Relu_b", "kb/level2/1_Relu_fused"]
    assert tasks[2].level == 2 and tasks[2].problem_id == 1 and tasks[2].name == "Relu_fused"
    assert "class Model" in tasks[0].source and tasks[0].path.endswith("1_Relu_a.py")


def test_loading_does_not_execute_the_module(tmp_path):
    marker = tmp_path / "ran"
    src = problem_source() + f"\nopen({str(marker)!r}, 'w').write('x')\n"
    (tmp_path / "1_Side.py").write_text(src)
    load_problem_file(tmp_path / "1_Side.py")
    assert not marker.exists()


def test_extension_declarations_are_read(tmp_path):
    src = (
        problem_source() + "\nATOL = 1e-3\nRTOL = 2e-3\nINPUT_VARIANTS = ('signed', 'small')\n"
        "def get_inputs_variant(name):\n    return get_inputs()\n"
    )
    (tmp_path / "3_Ext.py").write_text(src)
    task = load_problem_file(tmp_path / "3_Ext.py", suite="s", level=2)
    assert (task.atol, task.rtol, task.input_variants) == (1e-3, 2e-3, ["signed", "small"])
    assert task.id == "s/level2/3_Ext"


@pytest.mark.parametrize(
    "text, message",
    [
        ("def get_inputs(): pass\ndef get_init_inputs(): pass\n", "no Model"),
        ("class Model: pass\ndef get_init_inputs(): pass\n", "no get_inputs"),
        ("class Model: pass\ndef get_inputs(:\n", "syntax error at line 2"),
        ("Model = 3\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n", "Model must be a class"),
        (problem_source() + "ATOL = 'tight'\n", "ATOL must be a non-negative number"),
        (problem_source() + "INPUT_VARIANTS = ('a',)\n", "defines no get_inputs_variant"),
        (problem_source() + "ATOL = compute()\n", "ATOL must be a literal"),
    ],
)
def test_bad_problem_files_name_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "1_Bad.py"
    path.write_text(text)
    with pytest.raises(TaskError) as err:
        load_problem_file(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_duplicate_ids_are_an_error(kernelbench_root):
    (kernelbench_root / "level1" / "2_Relu_again.py").write_text(problem_source())
    with pytest.raises(TaskError, match="duplicate problem id 2 in level 1"):
        load_directory(kernelbench_root, suite="kb")


def test_missing_root_and_non_kernelbench_root(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        load_directory(tmp_path / "nope", suite="kb")
    with pytest.raises(TaskError, match="no level<N>/ folders"):
        load_directory(tmp_path, suite="kb")


def test_selection_filters(kernelbench_root):
    cfg = suite_cfg(root=str(kernelbench_root))
    assert len(load_suite(cfg)) == 3
    assert [t.id for t in load_suite(suite_cfg(root=str(kernelbench_root), levels=[2]))] == ["kb/level2/1_Relu_fused"]
    assert len(load_suite(suite_cfg(root=str(kernelbench_root), problem_ids=[1]))) == 2
    assert [t.name for t in load_suite(suite_cfg(root=str(kernelbench_root), names=["*_B"]))] == ["Relu_b"]
    assert len(load_suite(suite_cfg(root=str(kernelbench_root), first_n=2))) == 2
    one = [t.id for t in load_suite(suite_cfg(root=str(kernelbench_root), shuffle_seed=3))]
    two = [t.id for t in load_suite(suite_cfg(root=str(kernelbench_root), shuffle_seed=3))]
    assert one == two and sorted(one) == sorted(t.id for t in load_suite(cfg))
    with pytest.raises(TaskError, match="selection is empty"):
        load_suite(suite_cfg(root=str(kernelbench_root), levels=[4]))


def test_named_subset_dstar(tmp_path):
    from cudaforge.tasks.subsets import NAMED_SUBSETS

    dstar = NAMED_SUBSETS["cudaforge_dstar"]
    assert sum(len(v) for v in dstar.values()) == 25
    for level in (1, 2, 3):
        for pid in range(1, 101 if level < 3 else 51):
            folder = tmp_path / f"level{level}"
            folder.mkdir(exist_ok=True)
            (folder / f"{pid}_P{pid}.py").write_text(problem_source())
    tasks = load_suite(suite_cfg(root=str(tmp_path), subset="cudaforge_dstar"))
    assert len(tasks) == 25
    assert {(t.level, t.problem_id) for t in tasks} == {(lv, i) for lv, ids in dstar.items() for i in ids}
    with pytest.raises(ValueError, match="unknown subset"):
        load_suite(suite_cfg(root=str(tmp_path), subset="nope"))


def test_subset_missing_tasks_is_an_error(kernelbench_root):
    with pytest.raises(TaskError, match="not in this suite"):
        load_suite(suite_cfg(root=str(kernelbench_root), subset="cudaforge_dstar"))


def test_subset_from_yaml_file(kernelbench_root, tmp_path):
    (tmp_path / "mine.yaml").write_text("1: [2]\n2: [1]\n")
    tasks = load_suite(suite_cfg(root=str(kernelbench_root), subset=str(tmp_path / "mine.yaml")))
    assert [t.id for t in tasks] == ["kb/level1/2_Relu_b", "kb/level2/1_Relu_fused"]


def test_hf_export_jsonl(tmp_path):
    rows = [
        {"code": problem_source(), "level": 1, "name": "1_Square_matrix_multiplication_", "problem_id": 1},
        {"code": problem_source(), "level": 2, "name": "5_Conv.py", "problem_id": 5},
    ]
    path = tmp_path / "kb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    tasks = load_hf_export(path, suite="kernelbench")
    assert [t.id for t in tasks] == ["kernelbench/level1/1_Square_matrix_multiplication_", "kernelbench/level2/5_Conv"]
    assert tasks[0].path == f"{path}#row0"


def test_hf_export_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"code": [problem_source()], "level": [3], "name": ["7_MLP"], "problem_id": [7]})
    pq.write_table(table, tmp_path / "level_3.parquet")
    tasks = load_hf_export(tmp_path, suite="kb")
    assert [t.id for t in tasks] == ["kb/level3/7_MLP"]


def test_hf_export_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"code": "x", "level": 1}) + "\n")
    with pytest.raises(TaskError, match=r"bad.jsonl#row0: missing column\(s\) name, problem_id"):
        load_hf_export(path, suite="kb")
    path.write_text("{not json\n")
    with pytest.raises(TaskError, match="bad.jsonl:1: not JSON"):
        load_hf_export(path, suite="kb")
    row = {"code": "class Model: pass\n", "level": 1, "name": "x", "problem_id": 1}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskError, match="row0: not a problem file: no get_inputs, no get_init_inputs"):
        load_hf_export(path, suite="kb")


def test_bundled_suites_load(repo):
    tiny = load_suite(suite_cfg(name="tiny", kind="bundled"))
    assert [t.level for t in tiny] == [1, 1, 1] and len(tiny) == 3
    main = load_suite(suite_cfg(name="main", kind="bundled"))
    assert len(main) >= 25 and {t.level for t in main} == {1, 2, 3}
    assert all("small" in t.input_variants for t in tiny + main)
    with pytest.raises(TaskError, match="no bundled suite 'nope'"):
        load_suite(suite_cfg(name="nope", kind="bundled"))


def test_find_task_by_suffix(kernelbench_root):
    cfg = suite_cfg(root=str(kernelbench_root))
    assert find_task(cfg, "level1/2_Relu_b").id == "kb/level1/2_Relu_b"
    with pytest.raises(TaskError, match="no task"):
        find_task(cfg, "level9/1_X")


def test_load_module_makes_triton_sources_findable(monkeypatch):
    """``@triton.jit`` reads its function's source when it decorates it (not under TRITON_INTERPRET)."""
    pytest.importorskip("triton")
    from cudaforge.tasks.runtime import load_module

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    source = (Path(__file__).resolve().parent.parent / "benchmarks" / "candidates" / "triton_softmax.py").read_text()
    module = load_module(source, "cudaforge_test_triton_source")
    assert "tl.program_id" in module.softmax_kernel.src


# --------------------------------------------------------------------------- problem-set identity


def git(cwd, *args):
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": __import__("os").environ["PATH"],
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def test_problem_set_of_a_git_checkout_names_its_commit_and_local_changes(tmp_path):
    from cudaforge.tasks import problem_set

    checkout = tmp_path / "KernelBench"
    (checkout / "KernelBench" / "level1").mkdir(parents=True)
    (checkout / "KernelBench" / "level1" / "1_A.py").write_text(problem_source(1))
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "problems")
    commit = git(checkout, "rev-parse", "HEAD")
    root = str(checkout / "KernelBench")
    clean = problem_set(load_directory(root, suite="kb"), root)
    assert clean["kind"] == "git" and clean["commit"] == commit and clean["dirty"] is False
    assert clean["version"] == f"KernelBench@{commit[:7]}" and clean["root"] == str(Path(root).resolve())
    (checkout / "KernelBench" / "level1" / "1_A.py").write_text(problem_source(3))
    dirty = problem_set(load_directory(root, suite="kb"), root)
    assert dirty["dirty"] is True and dirty["version"] == f"KernelBench@{commit[:7]}+dirty"
    assert dirty["digest"] != clean["digest"]
    git(checkout, "remote", "add", "origin", "git@github.com:OptimAI-Lab/CudaForge.git")
    assert problem_set(load_directory(root, suite="kb"), root)["version"].startswith("CudaForge@")
    copy = checkout / "untracked_copy"  # inside the checkout, but no file of it is tracked: the commit says nothing
    (copy / "level1").mkdir(parents=True)
    (copy / "level1" / "1_A.py").write_text(problem_source(1))
    assert problem_set(load_directory(copy, suite="kb"), str(copy))["kind"] == "hashes"


def test_problem_set_of_a_plain_folder_is_its_hashes(kernelbench_root, monkeypatch):
    from cudaforge.tasks import problem_set
    from cudaforge.tasks.identity import compare

    tasks = load_directory(kernelbench_root, suite="kb")
    record = problem_set(tasks, str(kernelbench_root))
    assert record["kind"] == "hashes" and record["commit"] is None and record["dirty"] is None
    assert record["version"] == f"hashes:{record['digest'][:12]}"
    assert record["tasks"] == {t.id: t.source_hash for t in tasks}
    assert problem_set(load_directory(kernelbench_root, suite="other"), None)["digest"] == record["digest"]
    (kernelbench_root / "level1" / "2_Relu_b.py").write_text(problem_source(7))
    changed = problem_set(load_directory(kernelbench_root, suite="kb"), str(kernelbench_root))
    assert changed["digest"] != record["digest"]
    assert compare(record, changed) == {"changed": 1, "only_a": 0, "only_b": 0, "same": 2}
    monkeypatch.setenv("PATH", "")  # no git at all: still the hashes, never an error
    assert problem_set(tasks, str(kernelbench_root))["digest"] == record["digest"]


def test_task_json_with_or_without_source_hash_loads():
    from cudaforge.types import Task

    task = Task("kb/level1/1_A", "kb", 1, 1, "A", problem_source())
    old = task.to_dict()
    assert "source_hash" not in old and Task.from_dict(old) == task
    assert Task.from_dict({**old, "source_hash": task.source_hash}) == task


def test_seed_torch_draws_what_torch_manual_seed_draws():
    import torch

    from cudaforge.tasks.runtime import seed_torch

    for seed in (0, 7, 2**40 + 3):
        seed_torch(seed)
        ours = (torch.randn(16), torch.randint(0, 1000, (8,)), torch.rand(4, dtype=torch.float64))
        torch.manual_seed(seed)
        theirs = (torch.randn(16), torch.randint(0, 1000, (8,)), torch.rand(4, dtype=torch.float64))
        assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    seed_torch(1)
    first = torch.randn(4)
    seed_torch(2)
    assert not torch.equal(first, torch.randn(4))
    if torch.cuda.is_available():  # the GPU's generator too (the timed trials' inputs are drawn there)
        seed_torch(5)
        ours_gpu = torch.randn(1000, device="cuda")
        torch.manual_seed(5)
        assert torch.equal(ours_gpu, torch.randn(1000, device="cuda"))
