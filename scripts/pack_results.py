"""Fold a GPU session's call folders into one summary and one manifest (``benchmarks/results/<date>_<gpu>/``).

A device session leaves folders such as ``benchmarks/results/2026-12-05_h200_call3/`` (its script, logs, JSON) and a
summary ``benchmarks/results/2026-12-05_h200_README.md``. This script makes of them::

    benchmarks/results/2026-12-05_h200/README.md      the summary: figures, commands, what was measured
    benchmarks/results/2026-12-05_h200/MANIFEST.json  every file of every call: size and sha256, each call's script,
                                                      and the commit that still holds the files

and ``docs/results/<date>_<gpu>.md``, the site's page for it (add it to ``nav`` in ``mkdocs.yml`` and to the tables
in ``docs/results/index.md`` and ``benchmarks/results/README.md``), and removes the call folders from the tree. Nothing is lost: ``git archive`` on the manifest's commit gives the whole
session back (the manifest's ``restore`` line is that command). Candidates a Coder model wrote (``class ModelNew``)
are copied first to ``tests/fixtures/recorded_candidates/`` (one copy of each), where the guards' tests read them.

    python scripts/pack_results.py            # every session not packed yet
    python scripts/pack_results.py --check    # only say what it would do; exit 1 if something is left to pack

Run it from the checkout's root, with the session's files committed (the manifest names HEAD).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
RECORDED = REPO / "tests" / "fixtures" / "recorded_candidates"
DOCS = REPO / "docs" / "results"
SESSION = re.compile(r"^(?P<session>\d{4}-\d{2}-\d{2}_[a-z0-9]+)_(?P<part>.+)$")
"""A part of a session: ``<date>_<gpu>_<part>`` (a folder, or the summary ``..._README.md``)."""
PACKED = re.compile(r"^\d{4}-\d{2}-\d{2}_[a-z0-9]+$")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def unpacked() -> dict[str, list[Path]]:
    """The parts in ``benchmarks/results`` not folded into a session folder yet, by session."""
    sessions: dict[str, list[Path]] = {}

    def natural(entry: Path) -> list[object]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", entry.name)]

    for entry in sorted(RESULTS.iterdir(), key=natural):
        match = SESSION.match(entry.name)
        if match and not PACKED.match(entry.name):
            sessions.setdefault(match["session"], []).append(entry)
    return sessions


def _summary(session: str, parts: list[Path]) -> str:
    """The session's summary: its ``_README.md``; else the parts' own README files (and loose notes), in order."""
    for part in parts:
        if part.is_file() and part.name == f"{session}_README.md":
            return part.read_text()
    chunks = [f"# {session}: the session's notes, gathered\n"]
    for part in parts:
        notes = [part] if part.is_file() and part.suffix == ".md" else sorted(part.glob("README.md"))
        for note in notes:
            body = note.read_text().strip()
            chunks.append(f"## {SESSION.match(part.name)['part']}\n\n" + re.sub(r"^#", "###", body, flags=re.M))
    return "\n\n".join(chunks) + "\n"


def _keep_candidates(folder: Path, seen: set[str]) -> int:
    """Copy the Coder-written candidates (``class ModelNew``) under ``folder`` to the test fixtures, one copy each."""
    kept = 0
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(errors="replace")
        digest = hashlib.sha256(text.encode()).hexdigest()
        if "class ModelNew" not in text or digest in seen:
            continue
        seen.add(digest)
        target = RECORDED / path.relative_to(RESULTS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        kept += 1
    return kept


def pack(session: str, parts: list[Path], commit: str, seen: set[str]) -> dict[str, object]:
    """Fold one session's parts into ``benchmarks/results/<session>/``; returns the manifest written."""
    target = RESULTS / session
    target.mkdir(exist_ok=True)
    manifest: dict[str, object] = {
        "session": session,
        "archived_at": commit,
        "restore": f"git archive --format=tar.gz -o {session}.tar.gz {commit} "
        + " ".join(str(p.relative_to(REPO)) for p in parts),
        "parts": {},
    }
    summary = _summary(session, parts)
    note = (
        f"> The call folders named here were folded into this folder on packing: `MANIFEST.json` lists each file "
        f"with its size and sha256, and each call's script; `{manifest['restore']}` gives them back.\n\n"
    )
    (target / "README.md").write_text(summary.replace("\n", "\n\n" + note, 1) if "\n" in summary else summary + note)
    recorded = 0
    for part in parts:
        name = SESSION.match(part.name)["part"]
        files = [part] if part.is_file() else sorted(p for p in part.rglob("*") if p.is_file())
        recorded += _keep_candidates(part, seen) if part.is_dir() else 0
        manifest["parts"][name] = {  # type: ignore[index]
            "path": str(part.relative_to(REPO)),
            "scripts": {str(p.relative_to(part)): p.read_text() for p in files if p.suffix == ".sh"},
            "files": [[str(p.relative_to(REPO)), p.stat().st_size, _sha256(p)] for p in files],
        }
    manifest["recorded_candidates_kept"] = recorded
    DOCS.mkdir(parents=True, exist_ok=True)  # the site's page for the session includes the summary as it is
    (DOCS / f"{session}.md").write_text(
        f"<!-- The session's summary, kept in benchmarks/results/{session}/README.md (its MANIFEST.json lists every "
        f'file with its hash). -->\n\n--8<-- "benchmarks/results/{session}/README.md"\n'
    )
    (target / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for part in parts:
        shutil.rmtree(part) if part.is_dir() else part.unlink()
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list what is left to pack; exit 1 if anything is")
    args = parser.parse_args(argv)
    todo = unpacked()
    if args.check or not todo:
        for session, parts in todo.items():
            print(f"{session}: {len(parts)} parts to pack ({', '.join(p.name for p in parts)})")
        return 1 if todo else 0
    if _git("status", "--porcelain", "--", str(RESULTS)):
        sys.exit("pack_results: commit benchmarks/results first (the manifest names HEAD as the files' home)")
    packed = sorted(s for s in todo if (RESULTS / s).exists())
    if packed:  # its README and MANIFEST would be written over: the first calls' record lost
        sys.exit(
            f"pack_results: {', '.join(packed)} is packed already; give the new calls another session name "
            f"(a new date, or another GPU token: {packed[0].split('_')[0]}_h200b_call1)"
        )
    commit = _git("rev-parse", "HEAD")
    seen = {_sha256(p) for p in RECORDED.rglob("*.py")} if RECORDED.exists() else set()
    for session, parts in todo.items():
        manifest = pack(session, parts, commit, seen)
        files = sum(len(p["files"]) for p in manifest["parts"].values())  # type: ignore[union-attr]
        print(f"{session}: {len(parts)} parts, {files} files into {session}/MANIFEST.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
