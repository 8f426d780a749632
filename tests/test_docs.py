"""The docs say what is true: config groups and experiments as they are on disk, tables whole, links alive.

docs/configuration.md has one section per config group, headed ``### `GROUP` ``, whose first table lists the
group's options, one a row, the option's name in backticks in the first column ("(default)" beside the one the
main config picks). A group section may have a paragraph starting with ``Fields:`` that names every field of the
group's schema in backticks (text in parentheses is commentary). ``## Top-level keys`` has a table of the keys
outside the groups (``key`` or ``key.*``). Nothing here needs a GPU, the network or Hydra's composition.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
import yaml

from cudaforge.config import GROUP_SCHEMAS, CudaforgeConfig
from cudaforge.paths import CONFIG_DIR

REPO = Path(__file__).resolve().parent.parent
CONFIGURATION = REPO / "docs" / "configuration.md"
MARKDOWN = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Options a group has without a file in our tree: Hydra's own basic launcher (the main config picks it).
HYDRA_OWN = {"hydra/launcher": {"basic"}}


def disk_groups() -> dict[str, set[str]]:
    """Every folder of the config tree holding YAML files -> its option names."""
    groups: dict[str, set[str]] = {}
    for path in CONFIG_DIR.rglob("*.yaml"):
        if path.parent != CONFIG_DIR:
            groups.setdefault(path.parent.relative_to(CONFIG_DIR).as_posix(), set()).add(path.stem)
    return groups


def main_defaults() -> dict[str, str | None]:
    """The main config's choice per group (``override hydra/launcher`` counted as ``hydra/launcher``)."""
    defaults = yaml.safe_load((CONFIG_DIR / "cudaforge.yaml").read_text())["defaults"]
    return {
        key.removeprefix("override "): value
        for item in defaults
        if isinstance(item, dict)
        for key, value in item.items()
    }


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def first_table(lines: list[str]) -> list[list[str]]:
    """The cells of the body rows of the first table in ``lines`` (header and separator left out)."""
    rows, started = [], False
    for line in lines:
        if line.startswith("|"):
            started = True
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif started:
            break
    return rows[2:]


def sections(text: str, level: str) -> dict[str, list[str]]:
    """Heading text -> the prose lines under it, for headings of exactly this level (``##``, ``###``)."""
    found: dict[str, list[str]] = {}
    current = None
    for _, line in prose_lines(text):
        heading = re.match(r"(#+) (.*)", line)
        if heading:
            current = heading.group(2).strip() if heading.group(1) == level else None
            if current is not None:
                found[current] = []
        elif current is not None:
            found[current].append(line)
    return found


def fields_paragraph(lines: list[str]) -> str:
    """The paragraph that starts with ``Fields:``, joined into one line ("" when there is none)."""
    for i, line in enumerate(lines):
        if line.startswith("Fields:"):
            rest = lines[i + 1 :]
            end = next((j for j, text in enumerate(rest) if not text.strip()), len(rest))
            return " ".join([line, *rest[:end]])
    return ""


def documented_groups() -> dict[str, dict]:
    """Group -> {"options": {name: row text}, "fields": set or None}, from docs/configuration.md."""
    groups = {}
    for heading, lines in sections(CONFIGURATION.read_text(), "###").items():
        name = re.fullmatch(r"`([\w/-]+)`", heading)
        if not name:
            continue
        options = {}
        for row in first_table(lines):
            option = re.match(r"`([^`]+)`", row[0])
            assert option, f"{heading}: the first cell {row[0]!r} names no option in backticks"
            options[option.group(1)] = " | ".join(row)
        paragraph = fields_paragraph(lines)
        fields = set(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", paragraph))) if paragraph else None
        groups[name.group(1)] = {"options": options, "fields": fields}
    return groups


def mentions(pattern: str) -> list[tuple[str, str]]:
    """(file, name) for each lowercase name after ``pattern=`` in README.md and docs/*.md (comma lists split)."""
    found = []
    for path in MARKDOWN:
        for match in re.finditer(rf"(?<![\w./-]){pattern}=([a-z][\w.,-]*\w)", path.read_text()):
            found += [(path.name, name) for name in match.group(1).split(",")]
    return found


def test_every_config_group_has_a_section_and_every_section_a_group():
    on_disk, in_doc = set(disk_groups()), set(documented_groups())
    assert {"experiment", "suite", "coder", "judge", "strategy", "eval", "profile", "tracker"} <= on_disk
    assert on_disk - in_doc == set(), "groups missing from docs/configuration.md"
    assert in_doc - on_disk == set(), "sections of docs/configuration.md for groups that do not exist"


def test_every_experiment_is_in_the_doc_and_every_one_mentioned_exists():
    on_disk = disk_groups()["experiment"]
    options = documented_groups().get("experiment", {"options": {}})["options"]
    listed = set(options)
    assert len(on_disk) >= 12
    assert on_disk - listed == set(), "experiment overlays missing from docs/configuration.md"
    assert listed - on_disk == set(), "docs/configuration.md lists experiments that do not exist"
    assert not [name for name, row in options.items() if "(default)" in row], "no overlay applies by default"
    unknown = [(doc, name) for doc, name in mentions("experiment") if name not in on_disk]
    assert not unknown, f"experiment=NAME mentioned but not in configs/experiment/: {unknown}"


@pytest.mark.parametrize("group", sorted(set(disk_groups()) - {"experiment"}))
def test_every_option_of_a_group_is_in_the_doc_and_nothing_else(group):
    expected = disk_groups()[group] | HYDRA_OWN.get(group, set())
    listed = documented_groups().get(group, {"options": {}})["options"]
    assert expected - set(listed) == set(), f"options of {group} missing from docs/configuration.md"
    assert set(listed) - expected == set(), f"docs/configuration.md lists {group} options that do not exist"
    default = main_defaults().get(group)
    marked = {name for name, row in listed.items() if "(default)" in row}
    wanted = {default} if default else set()
    assert marked == wanted, f"{group}: the main config picks {default!r}, the doc marks {marked}"


def test_hydras_own_options_are_the_main_configs_choice():
    for group, names in HYDRA_OWN.items():
        assert main_defaults()[group] in names and not names & disk_groups()[group]


def test_every_group_option_mentioned_in_the_docs_exists():
    groups = disk_groups()
    unknown = []
    for group, names in groups.items():
        if group != "experiment":
            known = names | HYDRA_OWN.get(group, set())
            unknown += [(doc, f"{group}={name}") for doc, name in mentions(re.escape(group)) if name not in known]
    assert not unknown, f"group=option mentioned but not in the config tree: {unknown}"


def test_listed_schema_fields_are_the_schemas_fields():
    checked = 0
    for group, doc in documented_groups().items():
        if doc["fields"] is not None:
            schema = {f.name for f in dataclasses.fields(GROUP_SCHEMAS[group])}
            assert doc["fields"] == schema, (group, sorted(doc["fields"] ^ schema))
            checked += 1
    assert checked >= 5


def test_top_level_keys_are_the_configs_keys_outside_the_groups():
    rows = first_table(sections(CONFIGURATION.read_text(), "##")["Top-level keys"])
    listed = {re.match(r"`(\w+)(\.\*)?`", row[0]).group(1) for row in rows}
    expected = {f.name for f in dataclasses.fields(CudaforgeConfig)} - set(GROUP_SCHEMAS)
    assert listed == expected, sorted(listed ^ expected)


def split_tables(text: str) -> list[int]:
    """Line numbers of table rows that follow a blank line right after another table row (a split table)."""
    lines = list(prose_lines(text))
    return [
        number
        for (_, before), (_, blank), (number, line) in zip(lines, lines[1:], lines[2:])
        if line.startswith("|") and not blank.strip() and before.startswith("|")
    ]


def dead_links(path: Path) -> list[str]:
    """Relative link targets in a Markdown file that name no existing file or folder."""
    dead = []
    for _, line in prose_lines(path.read_text()):
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL, a mail address or an anchor on the same page
            if not (path.parent / target.split("#")[0]).exists():
                dead.append(target)
    return dead


def test_the_checks_catch_a_split_table_and_a_dead_link(tmp_path):
    assert split_tables("| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| 3 | 4 |\n") == [5]
    assert split_tables("| a |\n| --- |\n\n```\n| x |\n\n| y |\n```\n\ntext\n\n| b |\n| --- |\n") == []
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) [gone](missing.md#part) [web](https://example.com) `[code](nope.md)`\n")
    assert dead_links(page) == ["missing.md#part"]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.relative_to(REPO).as_posix())
def test_tables_are_whole(path):
    assert split_tables(path.read_text()) == [], f"{path.name}: a blank line splits a table at these lines"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_point_to_files(path):
    assert dead_links(path) == []


SECTION_REF = re.compile(r'(docs/[\w/.-]+?\.md),? \(?"([^"]+)"')
"""A reference to a section of a page, as the code and the docs write it: ``docs/timing.md, "Precision"`` or
``docs/guards.md ("Integrity guards", ...)``."""


def headings(page: Path) -> set[str]:
    """What a section reference may name on a Markdown page (outside fenced code, backticks dropped): each heading,
    and its text before a parenthesis or a colon (``## Template sets (`agents=`)`` is "Template sets"), and each
    bold phrase that opens a list item (``- **JIT kernels compiled ahead** (...)``)."""
    found, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6} (.*)", line) or re.match(r"\s*(?:[-*]|\d+\.) \*\*([^*]+)\*\*", line)
        if m:
            text = m.group(1).replace("`", "").strip()
            found.update({text, re.split(r" \(|: ", text)[0].strip()})
    return found


def section_refs(text: str) -> list[tuple[str, str]]:
    return [(page, " ".join(name.replace("`", "").split())) for page, name in SECTION_REF.findall(text)]


def test_a_section_reference_names_a_heading_of_its_page(tmp_path):
    """Every ``docs/PAGE.md, "Section"`` in the package, the tests' neighbours, the scripts and the docs names a
    page that exists and a heading on it (the session records under docs/results and benchmarks/results are
    dated and left as written)."""
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("# Title\n\n## `eval` settings (`eval=`)\n\n- **A named part** (more)\n\n```\n## not one\n```\n")
    assert headings(page) == {"Title", "eval settings (eval=)", "eval settings", "A named part"}
    assert section_refs('see docs/p.md, "`eval` settings" and docs/q.md ("Gone", step 3)') == [
        ("docs/p.md", "eval settings"),
        ("docs/q.md", "Gone"),
    ]
    roots = ["cudaforge", "benchmarks", "scripts", "docs", "README.md", "tests"]
    files = [p for r in roots for p in ([REPO / r] if r.endswith(".md") else (REPO / r).rglob("*"))]
    wrong = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        if path.suffix not in (".py", ".md", ".yaml", ".sh") or "/results/" in f"/{rel}" or rel == "tests/test_docs.py":
            continue
        for target, name in section_refs(path.read_text(errors="replace")):
            page = REPO / target
            if not page.is_file() or name not in headings(page):
                wrong.append(f"{rel}: {target}, {name!r}")
    assert wrong == []


EVALUATION_PAGES = ["evaluation", "isolation", "correctness", "checks", "timing", "guards", "threat-model"]


@pytest.mark.parametrize("name", EVALUATION_PAGES)
def test_the_evaluation_protocol_is_split_into_pages_of_at_most_about_3k_words(name):
    """The protocol reads as one page per topic (docs/evaluation.md's list), none over 3,200 words."""
    page = REPO / "docs" / f"{name}.md"
    assert len(page.read_text().split()) <= 3200
    assert f"({name}.md)" in (REPO / "docs" / "evaluation.md").read_text() or name == "evaluation"


EXTENDING = REPO / "docs" / "extending.md"
PATH_NAMES = re.compile(r"`((?:cudaforge|tests|benchmarks|docs)/[^`\s]+)`(?: \(((?:`[^`]+`(?:, )?)+)\))?")
"""A path in backticks, and the names in backticks in the parentheses right after it (only names there)."""


def test_the_contributor_paths_name_files_that_exist_and_what_is_in_them():
    """docs/extending.md gives the five ways in (a language, a guard, a strategy, a report section, a vendor) as
    file lists: every path exists (a ``<name>`` pattern: some file of that shape exists) and the names in
    parentheses after a path are in that file (for a pattern, all of them in one file of that shape)."""
    text = EXTENDING.read_text()
    titles = set(re.findall(r"^## (.+)$", text, flags=re.M))
    assert {"A kernel language", "A guard", "A strategy", "A report section", "A GPU vendor"} <= titles
    found, wrong = 0, []
    for path, names in PATH_NAMES.findall(re.sub(r"\s*\n\s*", " ", text)):
        found += 1
        pattern = re.sub(r"<[^>]+>", "*", path.rstrip("/"))
        files = [p for p in REPO.glob(pattern) if p.is_file() or path.endswith("/")] if "*" in pattern else []
        if "*" not in pattern:
            files = [REPO / pattern] if (REPO / pattern).exists() else []
        wanted = re.findall(r"`([^`]+)`", names)
        if not files:
            wrong.append(f"{path}: no such file")
        elif wanted and not any(all(w in f.read_text() for w in wanted) for f in files if f.is_file()):
            wrong.append(f"{path}: not all of {wanted} in it")
    assert found >= 25
    assert wrong == [], "\n".join(wrong)


def test_the_contributor_check_fails_on_a_missing_file_or_name(tmp_path, monkeypatch):
    page = tmp_path / "extending.md"
    page.write_text(
        "## A kernel language\n## A guard\n## A strategy\n## A report section\n## A GPU vendor\n"
        + "- `cudaforge/types.py` (`CorrectnessDiff`)\n" * 25
        + "- `cudaforge/no_such_module.py`\n- `cudaforge/vendors/<name>.py` (`NoSuchName`)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "EXTENDING", page)
    with pytest.raises(AssertionError, match="no_such_module.py: no such file") as info:
        test_the_contributor_paths_name_files_that_exist_and_what_is_in_them()
    assert "not all of ['NoSuchName'] in it" in str(info.value)


def test_the_guard_table_is_the_guards_definitions():
    """docs/guards.md has one row per guard of ``GUARDS`` and no other, marked ``(GPU)`` exactly where the guard
    needs a GPU, with its default policy (``EvalConfig().guards``; ``torch_ops`` for ``torch_compute``; a guard
    without a field explains a wrong output: ``incorrect``) in the last column."""
    from cudaforge.eval.guards.policy import GUARDS
    from cudaforge.eval.settings import EvalConfig

    row = re.compile(r"^\| `([a-z0-9_]+)`( \(GPU\))? \|.*\| ([^|]*) \|\s*$", re.M)
    rows = {m.group(1): (bool(m.group(2)), m.group(3)) for m in row.finditer((REPO / "docs" / "guards.md").read_text())}
    assert set(rows) == set(GUARDS)
    cfg = EvalConfig()
    for name, guard in GUARDS.items():
        gpu, default = rows[name]
        assert gpu == (guard.where == "gpu"), name
        if guard.field is None:
            expected = "`incorrect`"
        else:
            policy = cfg.torch_ops if guard.field == "torch_ops" else getattr(cfg.guards, guard.field)
            expected = str(getattr(policy, "value", policy))
        assert expected in default, (name, expected, default)
