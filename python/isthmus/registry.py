"""Names to things, one idiom for every kind Isthmus looks up by name: control apps,
forecasters, studies and bundled scenarios. A registry is a read-only mapping; `lookup`
answers a miss with the closest name and every known one, and `register` refuses a
name twice."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """The `what`s (e.g. "control app") Isthmus knows, by name, in registration order."""

    def __init__(self, what: str, entries: Mapping[str, T] | None = None):
        self.what = what
        self._entries: dict[str, T] = {}
        for name, entry in (entries or {}).items():
            self.register(name, entry)

    def register(self, name: str, entry: T) -> T:
        """Adds `entry` under `name`; returns the entry (so it can decorate a class)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what}'s name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"a {self.what} named '{name}' is already registered")
        self._entries[name] = entry
        return entry

    def lookup(self, name: str) -> T:
        """The entry under `name`; a miss names the closest known name and all of them."""
        if name in self._entries:
            return self._entries[name]
        close = difflib.get_close_matches(str(name), list(self._entries), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown {self.what} {name!r}; {hint}known: {', '.join(self._entries)}")

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)})"


__all__ = ["Registry"]
