"""The one registry type of the extension kinds (``cudaforge.registry.Registry``): its rules, in this process.

The packages' entry points are stood in for by ``plugins.declared`` (what a scan would have found) and modules
written to a folder on ``sys.path``; ``tests/test_plugins.py`` installs real distributions and asks a fresh
interpreter, for the languages, vendors, loop shapes and report sections.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

from cudaforge import plugins
from cudaforge.registry import Registry


@dataclass(frozen=True)
class Thing:
    name: str


ONE = Thing("one")


def named(name: str, thing: Thing) -> str | None:
    return None if thing.name == name else f"not a Thing called {name!r}"


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path with the packages' modules, and the entry points a scan found for the guards' group."""
    (tmp_path / "good_things.py").write_text(
        f"import sys\nThing = sys.modules[{__name__!r}].Thing\nTHREE = Thing('three')\nWRONG = Thing('other')\nNOT = 3\n"
    )
    (tmp_path / "raising_things.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {group: {} for group in plugins.GROUPS}
    found[plugins.GUARDS] = {
        "three": "good_things:THREE",
        "one": "good_things:THREE",  # named like a built-in
        "reserved": "good_things:THREE",
        "wrong": "good_things:WRONG",
        "not": "good_things:NOT",
        "raising": "raising_things:X",
    }
    monkeypatch.setattr(plugins, "declared", lambda: found)
    return tmp_path


def registry(**kwargs) -> Registry[Thing]:
    built_in: dict[str, Thing | str] = {"two": f"{__name__}:TWO", "one": ONE}
    return Registry("thing", plugins.GUARDS, Thing, built_in=built_in, check=named, reserved={"reserved"}, **kwargs)


TWO = Thing("two")

pytestmark = pytest.mark.filterwarnings("ignore:the thing:UserWarning")


def test_names_are_the_built_in_ones_in_order_then_the_packages_sorted_without_shadows(site):
    things = registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert things.names() == ["two", "one", "not", "raising", "three", "wrong"]
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 2 and "'one' of an installed package is left out" in said[0] and "'reserved'" in said[1]
    assert "three" in things and "one" in things and "reserved" not in things and things.is_built_in("two")


def test_get_loads_lazy_built_ins_and_packages_and_refuses_by_name(site):
    things = registry()
    assert things.get("two") is TWO and things.get("one") is ONE and things.get("three").name == "three"
    with pytest.raises(ValueError, match=r"unknown thing 'nine'; known: two, one, not, raising, three, wrong"):
        things.get("nine")
    with pytest.raises(ValueError, match=r"'wrong' names Thing 'other', not a Thing called 'wrong'"):
        things.get("wrong")
    with pytest.raises(ValueError, match=r"'not' names int, not a Thing$"):
        things.get("not")
    with pytest.raises(ValueError, match=r"raising_things:X.*cannot be loaded: boom"):
        things.get("raising")


def test_loaded_leaves_a_broken_package_out_warning_once_and_a_broken_built_in_raises(site):
    things = registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = [name for name, _ in things.items()]
        assert [t.name for t in things.loaded()] == ["two", "one", "three"]
    assert first == ["two", "one", "three"]
    left_out = [str(w.message) for w in caught if "left out of the things" in str(w.message)]
    assert len(left_out) == 3 and any("boom" in m for m in left_out), left_out  # not, raising, wrong: once each
    broken = Registry("thing", None, Thing, built_in={"two": f"{__name__}:MISSING"})
    with pytest.raises(ValueError, match=rf"built-in thing 'two' = '{__name__}:MISSING' cannot be loaded"):
        broken.loaded()
    with pytest.raises(ValueError, match=r"built-in thing 'x' names Thing 'one', not a Thing called 'x'"):
        Registry("thing", None, Thing, built_in={"x": ONE}, check=named).items()


def test_built_ins_given_by_a_function_are_read_once_and_clear_reads_again(site):
    calls = []

    def found() -> dict[str, Thing | str]:
        calls.append(1)
        return {"one": ONE}

    things = Registry[Thing]("thing", None, Thing, built_in=found)
    assert calls == [] and things.names() == ["one"] and things.names() == ["one"] and calls == [1]
    things.clear()
    assert things.loaded() == [ONE] and calls == [1, 1]


def test_an_environment_written_before_the_new_groups_reads_them_as_empty(monkeypatch):
    monkeypatch.setattr(plugins, "declared", plugins.declared.__wrapped__)
    monkeypatch.setenv(plugins.ENV, '{"cudaforge.languages": {"x": "m:X"}, "cudaforge.vendors": {}}')
    found = plugins.declared()
    assert found[plugins.LANGUAGES] == {"x": "m:X"} and found[plugins.REPORT_SECTIONS] == {}
    assert set(found) == set(plugins.GROUPS)


def test_the_guards_table_fits_a_registry_as_it_is(site):
    """The guards' case: built-in objects given as a dict of ``Guard`` by name, packages' in ``cudaforge.guards``."""
    from cudaforge.eval.guards.policy import GUARDS, Guard

    def own_name(name: str, guard: Guard) -> str | None:
        return None if guard.name == name else f"not a Guard called {name!r}"

    guards = Registry[Guard]("guard", plugins.GUARDS, Guard, built_in=GUARDS, check=own_name)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert guards.names()[: len(GUARDS)] == list(GUARDS) and guards.loaded() == list(GUARDS.values())
    assert guards.get(next(iter(GUARDS))) is next(iter(GUARDS.values()))
    with pytest.raises(ValueError, match="'three' names Thing 'three', not a Guard$"):
        guards.get("three")  # the site's package names a Thing in the guards' group
