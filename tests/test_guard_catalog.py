"""The guards' one definition each (``cudaforge.eval.guards.catalog``): what is made from it (the config's policies,
the static checks' order), what is held to it (the hack corpus, the checks of the runtime guards), and a guard added
by an installed package (``tests/fixtures/out_of_tree_guard/``)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
import textwrap
import tomllib

import pytest
from conftest import REPO
from test_plugins import ask

from cudaforge.eval.guards import GUARDS, Policies, static_findings
from cudaforge.eval.guards.catalog import BUILT_IN, REJECT, REPORT, STATIC, Guard
from cudaforge.eval.guards.corpus import load_corpus
from cudaforge.eval.settings import EvalConfig, GuardPolicies

EXAMPLE = REPO / "tests" / "fixtures" / "out_of_tree_guard"


def test_the_config_policies_are_made_from_the_definitions():
    """One field of ``eval.guards`` per guard with a policy of its own, its default the definition's; the guards
    that share a policy or have none are not there."""
    fields = {f.name: f.default for f in dataclasses.fields(GuardPolicies)}
    own = {g.name: g.default for g in BUILT_IN if g.own_policy}
    assert {name: getattr(value, "value", value) for name, value in fields.items()} == own
    assert "dynamic_code" not in fields and "torch_compute" not in fields and "timed_output" not in fields
    assert Policies({}).verdict("dynamic_code") == Policies({}).verdict("introspection") == REJECT
    for guard in BUILT_IN:
        expected = guard.default or REJECT  # a guard without a policy explains a wrong output: always rejects
        if guard.field == "torch_ops":
            expected = REPORT  # lenient, the default
        assert Policies({}).verdict(guard.name) == expected, guard.name
    assert EvalConfig.from_dict({"guards": {"io": "report"}}).guards.io.value == REPORT


def test_every_guard_has_the_corpus_entry_its_definition_names():
    """Adding a guard is its definition plus its corpus entry: each guard's ``corpus`` verdict is shown by at least
    one entry of benchmarks/hacks/ (``EXPECTED: rejected by <guard>`` ...)."""
    corpus = load_corpus()
    for guard in BUILT_IN:
        if guard.corpus == "unshown":  # measured not to fire on any entry: said why, and no entry claims it
            assert guard.corpus_note and not [e.name for e in corpus if guard.name in (e.guard, e.reported)]
            continue
        if guard.corpus == "reported":
            shown = [e.name for e in corpus if e.reported == guard.name]
        else:
            shown = [e.name for e in corpus if e.status == guard.corpus and e.guard == guard.name]
        assert shown, f"no corpus entry shows {guard.corpus} by {guard.name}"
    legit = [e for e in corpus if e.name.startswith("legit_")]
    assert len(legit) >= 5 and all(e.status == "correct" for e in legit)
    assert any("two_kernels" in e.name for e in legit) and any("triton" in e.name for e in legit)


def test_each_guards_check_is_where_its_definition_says():
    """A static guard's check is what ``static_findings`` calls for it; a runtime or GPU guard's names the verifier
    function that fires it, and that function says the guard's name."""
    for guard in BUILT_IN:
        function = guard.check_function()
        if guard.where == STATIC:
            assert function.__module__ == "cudaforge.eval.guards.source.checks", guard.name
            assert function.__name__ == guard.name, guard.name
        else:
            assert f'"{guard.name}"' in inspect.getsource(function), (guard.name, guard.check)
    assert [g.name for g in GUARDS.values()][: len(BUILT_IN)] == [g.name for g in BUILT_IN]


def test_a_static_check_finds_under_its_guard_and_policy_in_the_catalogs_order():
    source = textwrap.dedent(
        """
        import threading, os
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                os.environ["A"] = "1"
                return x
        """
    )
    found = static_findings(source, Policies({"guards": {"concurrency": "report"}}))
    assert [(f["guard"], f["verdict"]) for f in found] == [
        ("concurrency", "report"),
        ("io", "report"),  # writing the environment: noted, never a rejection
        ("no_custom_kernel", "reject"),
    ]
    assert "sets environment variables" in found[1]["evidence"]


@pytest.mark.parametrize(
    "change, said",
    [
        ({"where": "later"}, "where='later'"),
        ({"default": "maybe"}, "default='maybe'"),
        ({"corpus": "caught"}, "corpus='caught'"),
        ({"name": "Bad-Name"}, "lower-case Python identifier"),
        ({"default": None}, "a static guard needs a default policy"),
    ],
)
def test_a_bad_definition_is_refused_as_it_is_made(change, said):
    fields = {"name": "mine", "where": STATIC, "what": "x", "default": REPORT, "check": "m:f", "corpus": "reported"}
    with pytest.raises(ValueError, match=said):
        Guard(**{**fields, **change})
    with pytest.raises(ValueError, match="cannot be loaded"):
        Guard(**fields).check_function()


def install(site, extra: dict[str, str] | None = None):
    """Lay the example guard out in ``site`` as pip would (its module and a dist-info naming its entry points)."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    shutil.copytree(EXAMPLE / "cudaforge_print_guard", site / "cudaforge_print_guard")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    entries = {**project["entry-points"]["cudaforge.guards"], **(extra or {})}
    (info / "entry_points.txt").write_text("[cudaforge.guards]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    return site


PRINTS = textwrap.dedent(
    """
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr):
        pass

    class ModelNew(nn.Module):
        def forward(self, x):
            print("calling")
            k[(1,)](x)
            return x
    """
)

ASK = f"""
import json, warnings
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    from cudaforge.eval.guards import GUARDS, Policies, static_findings
    from cudaforge.eval.settings import EvalConfig
found = static_findings({PRINTS!r}, Policies({{}}))
policy = {{"guards": {{"print_calls": "reject"}}}} if "print_calls" in GUARDS else {{}}
strict = static_findings({PRINTS!r}, Policies(policy))
print(json.dumps({{
    "guards": list(GUARDS),
    "found": [(f["guard"], f["verdict"], f["evidence"]) for f in found],
    "strict": [(f["guard"], f["verdict"]) for f in strict],
    "default": EvalConfig().guards.to_dict().get("print_calls"),
    "warned": [str(x.message) for x in w],
}}))
"""


def test_an_installed_package_adds_a_guard_with_its_policy(tmp_path):
    """The worked example: one definition in a package of its own, and the guard runs with the static guards, its
    policy read from ``eval.guards.print_calls``."""
    site = install(tmp_path / "site")
    seen = ask(ASK, cwd=tmp_path, pythonpath=site)
    assert seen["guards"][-1] == "print_calls" and seen["default"] == "report"
    assert seen["found"] == [
        ["print_calls", "report", "print(...) at line 12 in forward: remove it from the timed call."]
    ]
    assert seen["strict"] == [["print_calls", "reject"]]
    plain = ask(ASK, cwd=tmp_path)  # not installed: no such guard, and its policy is no setting
    assert "print_calls" not in plain["guards"] and plain["found"] == [] and plain["default"] is None
    with pytest.raises(ValueError, match="unknown guard"):  # and here its policy is no setting
        EvalConfig.from_dict({"guards": {"print_calls": "reject"}})


def test_a_package_guard_that_is_broken_or_takes_a_name_is_left_out_with_a_warning(tmp_path):
    (tmp_path / "site" / "bad_guards").mkdir(parents=True)
    (tmp_path / "site" / "bad_guards" / "__init__.py").write_text(
        "from cudaforge.eval.guards.catalog import Guard\n"
        "IO = Guard('io', 'static', 'x', 'report', lambda c: [], 'reported')\n"
        "LATE = Guard('late', 'runtime', 'x', 'report', 'm:f', 'reported')\n"
        "NOT = 'not a guard'\n"
    )
    extra = {"io": "bad_guards:IO", "late": "bad_guards:LATE", "nope": "bad_guards:NOT", "gone": "no_such_module:G"}
    seen = ask(ASK, cwd=tmp_path, pythonpath=install(tmp_path / "site", extra))
    assert seen["guards"].count("io") == 1 and "late" not in seen["guards"] and "nope" not in seen["guards"]
    assert seen["guards"][-1] == "print_calls"  # the good one still comes
    warned = "\n".join(seen["warned"])
    for said in ("'io' of an installed package is left out", "runs at runtime", "str, not a Guard", "no_such_module"):
        assert said in warned, (said, warned)
    assert json.loads(json.dumps(seen["found"]))[0][0] == "print_calls"
