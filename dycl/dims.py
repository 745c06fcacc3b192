"""Name the dims of region inputs after the model's dynamic symbols.

Exploration runs the model at several sizes of each declared symbol and
records, for every region call, the input shapes together with the symbols'
sizes in that run. A region dim that always equals `batch` is named
`batch`; one that tracks it by a simple formula (`2*h`, `(h+1)//2`,
`time+1`) is named by the formula; one that varies with the run itself
(a sequence that grows in a loop) gets a plain name of its own.
"""
from __future__ import annotations

__all__ = ["name_dims"]

_MULTIPLES = (2, 3, 4)
_OFFSETS = (-3, -2, -1, 1, 2, 3)
_DIVISORS = (2, 4, 8, 16, 32)


def _formula(values: list[tuple[int, dict]], symbol: str) -> str | None:
    pairs = [(v, syms[symbol]) for v, syms in values]
    if all(v == s for v, s in pairs):
        return symbol
    for m in _MULTIPLES:
        if all(v == m * s for v, s in pairs):
            return f"{m}*{symbol}"
    for c in _OFFSETS:
        if all(v == s + c for v, s in pairs):
            return f"{symbol}{c:+d}"
    for q in _DIVISORS:
        for c in range(q):
            if all(v == (s + c) // q for v, s in pairs):
                return f"({symbol}+{c})//{q}" if c else f"{symbol}//{q}"
    return None


def name_dims(record) -> list[list]:
    """Per input leaf of a region, each dim as an int (static) or a symbol name."""
    dims = record.dims()
    named = []
    for k, leaf in enumerate(dims):
        row = []
        for a, size in enumerate(leaf):
            if size is not None:
                row.append(size)
                continue
            values = [(sig[k][0][a], dict(syms)) for sig, syms in record.observations]
            symbols = sorted(set.intersection(*(set(s) for _, s in values))) if values else []
            # Among runs at the declared sizes a dim must vary with one symbol alone.
            name = next((f for f in (_formula(values, s) for s in symbols) if f), None)
            row.append(name or f"i{k}_d{a}")
        named.append(row)
    return named
