"""Structures the convolution kernels compare: paths of (edge, node) tuples and ordered trees.

A path is the sequence of ``(edge, node)`` tuples read by walking a subgraph
from its root to a leaf (nonstationary kernels paper, Table 1); the root's
tuple has no edge (``edge=None``).  An edge walked against its direction
carries the ``-of`` suffix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from structkernels.utils import StructkernelsError

__all__ = ["Path", "StructureError"]

class StructureError(StructkernelsError, ValueError):
    """A malformed path or tree (names what is wrong and where)."""


def load_json(obj: Any) -> Any:
    """``obj`` parsed when it is a JSON string, else as it is."""
    if not isinstance(obj, str):
        return obj
    try:
        return json.loads(obj)
    except json.JSONDecodeError as exc:
        raise StructureError(
            f"not valid JSON ({exc.msg}, column {exc.colno}): {obj[:40]!r}") from None


def check_label(value: Any, what: str, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise StructureError(f"{what} must be a str{' or None' if allow_none else ''}, got {value!r}")
    if not value:
        raise StructureError(f"{what} must be a non-empty string")
    return value


class Path(Sequence):
    """An immutable sequence of ``(edge, node)`` tuples (the root's edge is None).

    Examples
    --------
    >>> from structkernels import Path
    >>> p = Path([(None, "bind-01"), ("ARG1", "enzyme")])
    >>> len(p), p[1]
    (2, ('ARG1', 'enzyme'))
    >>> Path.from_json(p.to_json()) == p
    True
    """

    __slots__ = ("_tuples", "_hash")

    def __init__(self, tuples: Iterable[Sequence[str | None]]):
        if isinstance(tuples, (str, bytes)):
            raise StructureError("a Path is built from (edge, node) pairs, not a string")
        items = []
        for i, t in enumerate(tuples):
            if isinstance(t, (str, bytes)) or not isinstance(t, Sequence) or len(t) != 2:
                raise StructureError(f"path tuple {i} must be an (edge, node) pair, got {t!r}")
            items.append((check_label(t[0], f"edge of path tuple {i}", allow_none=True),
                          check_label(t[1], f"node of path tuple {i}")))
        object.__setattr__(self, "_tuples", tuple(items))
        object.__setattr__(self, "_hash", hash(("Path", self._tuples)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Path is immutable")

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return Path(self._tuples[i])
        return self._tuples[i]

    def __len__(self) -> int:
        return len(self._tuples)

    def __iter__(self) -> Iterator[tuple[str | None, str]]:
        return iter(self._tuples)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and self._tuples == other._tuples

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (Path, (self._tuples,))

    def __repr__(self) -> str:
        return f"Path({list(self._tuples)!r})"

    def __str__(self) -> str:
        return " ".join(f"({n})" if e is None else f"({e}, {n})" for e, n in self._tuples)

    @property
    def edges(self) -> tuple[str | None, ...]:
        return tuple(e for e, _ in self._tuples)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(n for _, n in self._tuples)

    def to_json(self) -> list[list[str | None]]:
        """A JSON-ready list of ``[edge, node]`` pairs."""
        return [[e, n] for e, n in self._tuples]

    @classmethod
    def from_json(cls, obj: Any) -> Path:
        """Inverse of :meth:`to_json`; also accepts a JSON string."""
        obj = load_json(obj)
        if not isinstance(obj, list):
            raise StructureError(f"a path in JSON is a list of [edge, node] pairs, got {obj!r}")
        return cls(obj)


