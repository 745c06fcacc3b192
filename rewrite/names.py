"""One namespace for generated identifiers: derived from user names, never shadowing."""
from __future__ import annotations

import builtins
import keyword
import re

__all__ = ["Namespace"]


class Namespace:
    """Hands out unique identifiers: `gate`, `gate_1`, `gate_2`, ..."""

    def __init__(self, taken=()):
        self._taken = set(taken) | set(dir(builtins)) | set(keyword.kwlist)

    def checkpoint(self) -> frozenset[str]:
        """The names taken so far; `rollback` hands out again every name taken after it."""
        return frozenset(self._taken)

    def rollback(self, checkpoint: frozenset[str]) -> None:
        self._taken = set(checkpoint)

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_") or "v"
        if base[0].isdigit():
            base = "v_" + base
        name, n = base, 0
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name
