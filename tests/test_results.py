"""``benchmarks/results/``: one summary and one manifest per GPU session, and every citation of it resolves."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

RESULTS = REPO / "benchmarks" / "results"
CITED = re.compile(r"benchmarks/results/(\d{4}-\d{2}-\d{2}_[a-z0-9]+)(/[A-Za-z0-9_.-]*)?(?: \(([^)]*)\))?")
"""A citation of a session: ``benchmarks/results/<session>/[file]``, optionally followed by ``(<call>[/file])``."""


def _pack_module():
    spec = importlib.util.spec_from_file_location("pack_results", REPO / "scripts" / "pack_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _citing_files() -> list[Path]:
    roots = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "cudaforge").rglob("*.py")]
    roots += [*(REPO / "cudaforge" / "resources" / "published").rglob("*.yaml"), *(REPO / "benchmarks").glob("*.py")]
    roots += [*(REPO / "scripts").glob("*.py"), *(REPO / "tests").glob("*.py")]
    return [p for p in roots if p.name not in {"pack_results.py", "test_results.py"}]


def test_every_session_is_packed_into_a_summary_and_a_manifest():
    sessions = sorted(p for p in RESULTS.iterdir() if p.is_dir())
    assert len(sessions) >= 8
    assert _pack_module().unpacked() == {}, "run python scripts/pack_results.py"
    for folder in sessions:
        assert sorted(p.name for p in folder.iterdir()) == ["MANIFEST.json", "README.md"], folder
        manifest = json.loads((folder / "MANIFEST.json").read_text())
        assert manifest["session"] == folder.name and re.fullmatch(r"[0-9a-f]{40}", manifest["archived_at"])
        assert manifest["restore"].startswith(f"git archive --format=tar.gz -o {folder.name}.tar.gz ")
        for part in manifest["parts"].values():
            assert part["files"], part["path"]
            for path, size, sha in part["files"]:
                assert path.startswith(f"benchmarks/results/{folder.name}_") and size >= 0 and len(sha) == 64
    loose = [p.name for p in RESULTS.iterdir() if p.is_file()]
    assert loose == ["README.md"]


def test_every_citation_of_a_result_resolves_to_a_summary_or_a_manifest_entry():
    seen = 0
    for source in _citing_files():
        for match in CITED.finditer(source.read_text()):
            session, file, part = match[1], (match[2] or "/").strip("/"), match[3]
            part = None if file else part  # `<session>/<file> (...)`: the parentheses are prose
            folder = RESULTS / session
            assert folder.is_dir(), (source, match[0])
            if file:
                assert (folder / file).is_file(), (source, match[0])
            if part:
                parts = json.loads((folder / "MANIFEST.json").read_text())["parts"]
                call, _, inner = part.partition("/")
                assert call in parts, (source, match[0], sorted(parts))
                if inner:
                    cited = f"{parts[call]['path']}/{inner}"  # a file, or a folder of them
                    assert any(p[0] == cited or p[0].startswith(cited + "/") for p in parts[call]["files"]), match[0]
            seen += 1
    assert seen >= 35  # the docs cite the results often; a regex that stopped matching would pass vacuously


def test_every_session_has_a_page_on_the_site_that_includes_its_summary():
    import yaml

    nav = json.dumps(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])
    for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        page = REPO / "docs" / "results" / f"{folder.name}.md"
        assert f'--8<-- "benchmarks/results/{folder.name}/README.md"' in page.read_text(), page
        assert f"results/{folder.name}.md" in nav, folder.name
        assert f"({folder.name}.md)" in (REPO / "docs" / "results" / "index.md").read_text(), folder.name
        assert f"({folder.name}/README.md)" in (RESULTS / "README.md").read_text(), folder.name


def test_no_citation_names_an_unpacked_call_folder():
    old = re.compile(r"benchmarks/results/\d{4}-\d{2}-\d{2}_[a-z0-9]+_(?:call\d|README\.md)")
    stale = [(p, m[0]) for p in _citing_files() for m in old.finditer(p.read_text())]
    assert stale == []


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_packing_a_session_keeps_every_file_restorable_and_each_model_candidate_once(tmp_path, monkeypatch):
    pack = _pack_module()
    repo = tmp_path / "repo"
    results, recorded = repo / "benchmarks" / "results", repo / "tests" / "fixtures" / "recorded_candidates"
    call1, call2 = results / "2030-01-01_h200_call1", results / "2030-01-01_h200_call2"
    (call1 / "run" / "tasks").mkdir(parents=True)
    (call2 / "out").mkdir(parents=True)
    (call1 / "call1.sh").write_text("python3 benchmarks/eval_bench.py --out $OUT\n")
    candidate = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    (call1 / "run" / "tasks" / "kernel.py").write_text(candidate)
    (call2 / "out" / "copy_of_kernel.py").write_text(candidate)  # the same candidate stored twice: kept once
    (call2 / "out" / "summary.json").write_text('{"overhead_s": 0.93}\n')
    (results / "2030-01-01_h200_README.md").write_text("# Calls of 2030-01-01\n\nOverhead 0.93 s.\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "session")
    commit = _git(repo, "rev-parse", "HEAD")
    monkeypatch.setattr(pack, "REPO", repo)
    monkeypatch.setattr(pack, "RESULTS", results)
    monkeypatch.setattr(pack, "RECORDED", recorded)
    monkeypatch.setattr(pack, "DOCS", repo / "docs" / "results")

    assert pack.main(["--check"]) == 1
    assert pack.main([]) == 0
    assert pack.main(["--check"]) == 0
    folder = results / "2030-01-01_h200"
    assert sorted(p.name for p in results.iterdir()) == ["2030-01-01_h200"]
    assert "Overhead 0.93 s." in (folder / "README.md").read_text()
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert manifest["archived_at"] == commit
    assert manifest["parts"]["call1"]["scripts"] == {"call1.sh": "python3 benchmarks/eval_bench.py --out $OUT\n"}
    files = [f for part in manifest["parts"].values() for f in part["files"]]
    assert len(files) == 5
    for path, size, sha in files:  # every file comes back from the named commit, byte for byte
        data = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=repo, check=True, capture_output=True).stdout
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, sha)
    page = (repo / "docs" / "results" / "2030-01-01_h200.md").read_text()
    assert '--8<-- "benchmarks/results/2030-01-01_h200/README.md"' in page
    kept = sorted(recorded.rglob("*.py"))
    assert [p.read_text() for p in kept] == [candidate]


def test_packing_refuses_files_not_committed(tmp_path, monkeypatch):
    pack = _pack_module()
    repo = tmp_path / "repo"
    results = repo / "benchmarks" / "results"
    (results / "2030-01-01_h200_call1").mkdir(parents=True)
    _git(repo, "init", "-q")
    (results / "2030-01-01_h200_call1" / "log.txt").write_text("not committed\n")
    monkeypatch.setattr(pack, "REPO", repo)
    monkeypatch.setattr(pack, "RESULTS", results)
    monkeypatch.setattr(pack, "DOCS", repo / "docs" / "results")
    with pytest.raises(SystemExit, match="commit benchmarks/results first"):
        pack.main([])
    assert (results / "2030-01-01_h200_call1" / "log.txt").exists()


def test_packing_never_writes_over_a_session_packed_before(tmp_path, monkeypatch):
    pack = _pack_module()
    repo = tmp_path / "repo"
    results = repo / "benchmarks" / "results"
    (results / "2030-01-01_h200").mkdir(parents=True)
    (results / "2030-01-01_h200" / "README.md").write_text("# the first calls\n")
    (results / "2030-01-01_h200_call9").mkdir()
    (results / "2030-01-01_h200_call9" / "log.txt").write_text("a later call\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "later call")
    monkeypatch.setattr(pack, "REPO", repo)
    monkeypatch.setattr(pack, "RESULTS", results)
    monkeypatch.setattr(pack, "DOCS", repo / "docs" / "results")
    with pytest.raises(SystemExit, match="packed already"):
        pack.main([])
    assert (results / "2030-01-01_h200" / "README.md").read_text() == "# the first calls\n"
    assert (results / "2030-01-01_h200_call9" / "log.txt").exists()
