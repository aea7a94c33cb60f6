"""One declarative check of an estimator's (or a function's) parameters, and ``n_jobs``
turned into a number of workers.

Each estimator states once, as a dict parameter -> list of constraints (a value is valid
when it satisfies any one), what its parameters may be.  A constraint is ``None``, a type,
an :class:`Interval`, :class:`Options`, ``"boolean"``, ``"n_jobs"`` or ``"random_state"``.
Cross-parameter rules stay in the estimator, after this check.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import joblib
import numpy as np

from structkernels.utils._errors import StructkernelsError

__all__ = [
    "InvalidParameterError", "Interval", "Options", "validate_params", "ValidatedParamsMixin",
    "N_JOBS", "n_jobs_value", "available_cores", "effective_n_jobs",
]


class InvalidParameterError(StructkernelsError, ValueError, TypeError):
    """A parameter is outside what its owner accepts: a ``ValueError`` (what scikit-learn
    and the command line catch), and a ``TypeError`` for a caller catching a wrong type's."""


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _fmt(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


class Interval:
    """Ints (``numbers.Integral``, not bools) or finite reals (``numbers.Real``) in a range
    from ``left`` to ``right`` (None: unbounded), ``closed`` on "both" sides, the "left",
    the "right" or "neither".

    Examples
    --------
    >>> import numbers
    >>> Interval(numbers.Integral, 1, None, closed="left").is_satisfied_by(3)
    True
    >>> str(Interval(numbers.Real, 0, 1, closed="left"))
    'a number in [0, 1)'
    """

    def __init__(self, type: type, left: float | None, right: float | None, *,
                 closed: str = "both"):
        if type not in (numbers.Integral, numbers.Real):
            raise TypeError(f"Interval type must be numbers.Integral or numbers.Real, got {type!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval closed must be 'both', 'left', 'right' or 'neither', "
                             f"got {closed!r}")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def is_satisfied_by(self, value: Any) -> bool:
        """Whether ``value`` is of the type and inside the range."""
        if self.type is numbers.Integral:
            if not _is_int(value):
                return False
        elif not _is_real(value) or not math.isfinite(value):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        integral = self.type is numbers.Integral
        what = "an int" if integral else "a number"
        lo, hi = self.left, self.right
        if lo is not None and hi is not None:
            return (f"{what} in {'[' if self.closed in ('both', 'left') else '('}{_fmt(lo)}, "
                    f"{_fmt(hi)}{']' if self.closed in ('both', 'right') else ')'}")
        if not integral:
            what = "a finite number"
        if lo is not None:
            closed = self.closed in ("both", "left")
            if integral and ((lo == 1 and closed) or (lo == 0 and not closed)):
                return "a positive int"
            return f"{what} {'>=' if closed else '>'} {_fmt(lo)}"
        if hi is not None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {_fmt(hi)}"
        return what

    def alternatives(self) -> list[str]:
        return [str(self)]


class Options:
    """One of a few values (``Options(["uniform", "similarity"])``); ``hidden`` values
    (aliases) are accepted but not named in the message.  A bool is never taken for 0 or 1.

    Examples
    --------
    >>> Options(["auto"]).is_satisfied_by("auto"), Options([0, 1]).is_satisfied_by(True)
    (True, False)
    >>> str(Options(["loss1", "knn-ap"]))
    "'loss1' or 'knn-ap'"
    """

    def __init__(self, values: Iterable[Any], *, hidden: Iterable[Any] = ()):
        # a set has no order: its values are named sorted
        self.values = sorted(values, key=repr) if isinstance(values, (set, frozenset)) else list(values)
        self.hidden = list(hidden)

    def is_satisfied_by(self, value: Any) -> bool:
        """Whether ``value`` equals one of the options (of the same kind)."""
        for option in self.values + self.hidden:
            if (isinstance(option, (bool, np.bool_)) != isinstance(value, (bool, np.bool_))
                    or isinstance(option, str) != isinstance(value, str)):
                continue
            try:
                if bool(value == option):
                    return True
            except (TypeError, ValueError):  # arrays and the like
                continue
        return False

    def alternatives(self) -> list[str]:
        return [repr(v) for v in self.values]

    def __str__(self) -> str:
        return _join(self.alternatives())


class _Check:
    """A constraint from a test and what it accepts, in words."""

    def __init__(self, test: Any, *alternatives: str):
        self.test, self.names = test, list(alternatives)

    def is_satisfied_by(self, value: Any) -> bool:
        return bool(self.test(value))

    def alternatives(self) -> list[str]:
        return self.names


def _type_constraint(kind: type) -> _Check:
    name = kind.__name__
    return _Check(lambda v: isinstance(v, kind) and not (
        kind in (int, float) and isinstance(v, (bool, np.bool_))),
        f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}")


_NONE = _Check(lambda v: v is None, "None")
_NAMED = {
    "boolean": _Check(lambda v: isinstance(v, (bool, np.bool_)), "True", "False"),
    "n_jobs": _Check(lambda v: v is None or (_is_int(v) and v != 0), "None", "a non-zero int"),
    "random_state": _Check(
        lambda v: v is None or (_is_int(v) and 0 <= v < 2**32)
        or isinstance(v, np.random.RandomState),
        "None", "an int in [0, 2**32)", "a numpy RandomState"),
}

#: The ``n_jobs`` constraint list, for ``{"n_jobs": N_JOBS}``.
N_JOBS = ["n_jobs"]


def _constraint(c: Any) -> Any:
    if c is None:
        return _NONE
    if isinstance(c, str):
        try:
            return _NAMED[c]
        except KeyError:
            raise ValueError(f"unknown constraint {c!r}; the named ones are "
                             f"{', '.join(sorted(_NAMED))}") from None
    if isinstance(c, type):
        return _type_constraint(c)
    if hasattr(c, "is_satisfied_by"):
        return c
    raise TypeError(f"not a parameter constraint: {c!r}")


def _join(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _owner_name(owner: Any) -> str:
    if owner is None or isinstance(owner, str):
        return owner or ""
    return owner.__name__ if isinstance(owner, type) else type(owner).__name__


def validate_params(owner: Any, params: Mapping[str, Any],
                    constraints: Mapping[str, Sequence[Any]]) -> None:
    """Refuse the first parameter of ``params`` that satisfies none of its constraints.

    ``owner`` (an object, a class, a str or None) names who takes the parameters in the
    message, ``"<Owner>.<param> must be <what it may be>, got <value!r>"``; ``params`` maps
    names to values (``est.get_params(deep=False)``), ``constraints`` names to lists of
    constraints (see the module docstring).  Parameters without constraints are not checked.

    Examples
    --------
    >>> import numbers
    >>> validate_params("Model", {"k": 3}, {"k": [Interval(numbers.Integral, 1, None)]})
    >>> validate_params("Model", {"n_jobs": 0}, {"n_jobs": ["n_jobs"]})
    Traceback (most recent call last):
    ...
    structkernels.utils._params.InvalidParameterError: Model.n_jobs must be None or a non-zero int, got 0
    """
    prefix = _owner_name(owner)
    for name, options in constraints.items():
        if name not in params:
            continue
        value = params[name]
        checks = [_constraint(c) for c in options]
        if any(c.is_satisfied_by(value) for c in checks):
            continue
        what = _join([a for c in checks for a in c.alternatives()])
        label = f"{prefix}.{name}" if prefix else name
        raise InvalidParameterError(f"{label} must be {what}, got {value!r}")


def n_jobs_value(n_jobs: Any, owner: Any = None) -> int:
    """``n_jobs`` checked, with None as -1 (every core the process may use, joblib's rule).

    Examples
    --------
    >>> n_jobs_value(None), n_jobs_value(2)
    (-1, 2)
    """
    validate_params(owner, {"n_jobs": n_jobs}, {"n_jobs": N_JOBS})
    return -1 if n_jobs is None else int(n_jobs)


class ValidatedParamsMixin:
    """``_validate_params()`` (called at the start of ``fit``) from the class's
    ``_param_constraints = {"C": [Interval(Real, 0, None, closed="neither")], ...}``.

    Examples
    --------
    >>> class Model(ValidatedParamsMixin):
    ...     _param_constraints = {"n_jobs": ["n_jobs"]}
    ...     def __init__(self, n_jobs=None):
    ...         self.n_jobs = n_jobs
    >>> Model(0)._validate_params()
    Traceback (most recent call last):
    ...
    structkernels.utils._params.InvalidParameterError: Model.n_jobs must be None or a non-zero int, got 0
    """

    _param_constraints: dict[str, list[Any]] = {}

    def _validate_params(self) -> None:
        constraints = self._param_constraints
        params = {name: getattr(self, name) for name in constraints if hasattr(self, name)}
        validate_params(self, params, constraints)


def available_cores() -> int:
    """The number of cores this process may run on (:func:`joblib.cpu_count`: the machine's,
    the CPU affinity, the cgroup CPU quota and ``$LOKY_MAX_CPU_COUNT``), at least 1.

    Examples
    --------
    >>> from structkernels.utils import available_cores
    >>> available_cores() >= 1
    True
    """
    return max(1, int(joblib.cpu_count()))


def effective_n_jobs(n_jobs: int | None) -> int:
    """The number of workers for ``n_jobs``.

    ``None`` and ``-1`` are :func:`available_cores`, ``-k`` that number less ``k - 1`` (at
    least 1), a positive number itself; 0 or a non-integer is an
    :class:`InvalidParameterError`.

    Examples
    --------
    >>> from structkernels.utils import effective_n_jobs
    >>> effective_n_jobs(3)
    3
    >>> effective_n_jobs(None) == effective_n_jobs(-1) >= 1
    True
    """
    n_jobs = n_jobs_value(n_jobs)
    if n_jobs < 0:
        return max(1, available_cores() + 1 + n_jobs)
    return n_jobs
