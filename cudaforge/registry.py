"""One registry type for every kind of extension: kernel languages, GPU vendors, guards, loop shapes, report sections.

A :class:`Registry` holds the entries of one kind: its built-in ones (objects, or ``"module:attribute"`` strings
imported the first time they are asked for), then those installed packages add through the kind's entry-point group
(:mod:`cudaforge.plugins`, whose rules hold: only installed packages count, the first scan is passed to child
processes). Every entry is checked when it is loaded: an instance of the kind's type, and whatever the kind's own
``check`` says (a language's ``name`` must be its entry's). The rules, the same for every kind:

- :meth:`Registry.names`: the built-in entries in their declared order, then the packages' in name order; a package's
  entry named like a built-in one, or like a reserved name, is left out with a warning.
- :meth:`Registry.get`: the entry called ``name``; an unknown name, or an entry that cannot be loaded, is a
  ValueError that says why (an unknown one names the known ones).
- :meth:`Registry.loaded` and :meth:`Registry.items`: every entry that loads; a package's entry that does not is left
  out with one warning (one broken package must not stop every evaluation), a built-in one that does not raises.

Stdlib only, like :mod:`cudaforge.plugins`: the kernel-language registry imports nothing heavy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar, cast

from cudaforge import plugins

T = TypeVar("T")

Check = Callable[[str, T], "str | None"]
"""A kind's own check of a loaded entry: what is wrong with the entry ``name`` loaded as the object (None: nothing)."""


class Registry(Generic[T]):
    """The entries of one extension kind, built in and from installed packages (see the module's rules).

    ``kind`` names the kind in messages (``kernel language``); ``group`` is its entry-point group (None: built-in
    entries only); ``expected`` the type every entry is an instance of (None: any object, ``check`` alone decides);
    ``built_in`` the built-in entries by name, each an object or a ``"module:attribute"`` string, or a function
    returning them (called once, when first needed); ``reserved`` names no package may take.
    """

    def __init__(
        self,
        kind: str,
        group: str | None,
        expected: type | tuple[type, ...] | None = None,
        *,
        built_in: Mapping[str, T | str] | Callable[[], Mapping[str, T | str]] | None = None,
        check: Check[T] | None = None,
        reserved: Iterable[str] = (),
    ) -> None:
        self.kind = kind
        self.group = group
        self.expected = expected
        self.check = check
        self.reserved = frozenset(reserved)
        self._built_in_source = built_in
        self._built_in: dict[str, T | str] | None = None
        self._names: tuple[str, ...] | None = None
        self._loaded: dict[str, T] = {}
        self._items: tuple[tuple[str, T], ...] | None = None
        self._failed: dict[str, str] = {}
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r})"

    def built_in(self) -> dict[str, T | str]:
        """The built-in entries by name, in their declared order (an object, or ``module:attribute`` not yet loaded)."""
        if self._built_in is None:
            source = self._built_in_source
            self._built_in = dict((source() if callable(source) else source) or {})
        return self._built_in

    def names(self) -> list[str]:
        """The entries' names: the built-in ones in their declared order, then the packages' in name order (a package's
        entry named like a built-in or a reserved name is left out, with a warning)."""
        return list(self._order())

    def _order(self) -> tuple[str, ...]:
        if self._names is None:
            built_in = tuple(self.built_in())
            added = sorted(plugins.declared().get(self.group, {})) if self.group else []
            for name in [n for n in added if n in built_in or n in self.reserved]:
                warnings.warn(
                    f"the {self.kind} {name!r} of an installed package is left out: the name is cudaforge's own",
                    stacklevel=3,
                )
            self._names = built_in + tuple(n for n in added if n not in built_in and n not in self.reserved)
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self._order()

    def is_built_in(self, name: str) -> bool:
        """Whether ``name`` is one of the built-in entries (not a package's)."""
        return name in self.built_in()

    def get(self, name: str) -> T:
        """The entry called ``name``: ValueError naming the known ones when there is none, or saying why it cannot be
        loaded (it cannot be imported, is not of the kind's type, or fails the kind's check)."""
        if name in self._loaded:
            return self._loaded[name]
        if not self.is_built_in(name) and name not in self._order():  # a built-in one needs no scan of the packages
            raise ValueError(f"unknown {self.kind} {name!r}; known: {', '.join(self._order()) or 'none'}")
        if name in self._failed:
            raise ValueError(self._failed[name])
        try:
            entry = self._load(name)
        except ValueError as exc:
            self._failed[name] = str(exc)
            raise
        self._loaded[name] = entry
        return entry

    def items(self) -> list[tuple[str, T]]:
        """Every entry that loads, with its name, in :meth:`names` order: a package's entry that does not is left out
        with one warning; a built-in one that does not raises (ValueError)."""
        if self._items is not None:
            return list(self._items)
        found = []
        for name in self._order():
            try:
                found.append((name, self.get(name)))
            except ValueError as exc:
                if self.is_built_in(name):
                    raise
                self._warn_once(name, str(exc))
        self._items = tuple(found)
        return found

    def loaded(self) -> list[T]:
        """Every entry that loads, in :meth:`names` order (the rules of :meth:`items`)."""
        return [entry for _, entry in self.items()]

    def clear(self) -> None:
        """Forget what was loaded and scanned (the next question reads the built-in entries and the packages again)."""
        self._built_in = self._names = self._items = None
        self._loaded.clear()
        self._failed.clear()
        self._warned.clear()

    def _load(self, name: str) -> T:
        value = self.built_in().get(name)
        if value is None:
            assert self.group is not None  # names() lists a package's entry only for a registry with a group
            obj = plugins.load(self.group, name)
            where = f"the {self.kind} entry point {name!r}"
        elif isinstance(value, str):
            try:
                obj = plugins.resolve(value)
            except Exception as exc:  # noqa: BLE001 - a built-in entry that cannot be imported, said as one line
                raise ValueError(f"the built-in {self.kind} {name!r} = {value!r} cannot be loaded: {exc}") from exc
            where = f"the built-in {self.kind} {name!r}"
        else:
            obj, where = value, f"the built-in {self.kind} {name!r}"
        problem = self._problem(name, obj)
        if problem:
            label = getattr(obj, "name", "") if isinstance(getattr(obj, "name", None), str) else ""
            raise ValueError(f"{where} names {type(obj).__name__}{f' {label!r}' if label else ''}, {problem}")
        return cast(T, obj)

    def _problem(self, name: str, obj: object) -> str | None:
        if self.expected is not None and not isinstance(obj, self.expected):
            return f"not a {_type_names(self.expected)}"
        return self.check(name, cast(T, obj)) if self.check else None

    def _warn_once(self, name: str, message: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            warnings.warn(f"{message}; left out of the {self.kind}s", stacklevel=4)


def _type_names(expected: type | tuple[type, ...]) -> str:
    types = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(t.__name__ for t in types)


__all__ = ["Check", "Registry"]
