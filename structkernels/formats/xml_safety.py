"""An expat parser that never expands a declared entity nor reads anything outside the file:
the one XML parse of the relation readers (interaction XML, BioC)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from xml.parsers import expat

from structkernels.relations.corpus import RelationFormatError

__all__ = ["safe_parser", "parse_xml"]


def safe_parser(refuse: Callable[[str], Any], *, doctype: str | None = None,
                external_dtd: bool = False) -> Any:
    """A new expat parser whose unsafe constructs call ``refuse(reason)`` (which raises).

    Parameters
    ----------
    refuse : callable
        Called with a one-line reason; it must raise (the parse stops there).
    doctype : str, optional
        The reason given for a refused ``<!DOCTYPE>``.
    external_dtd : bool
        Accept a ``<!DOCTYPE>`` without an internal subset (its external DTD is not read).

    Examples
    --------
    >>> def refuse(reason):
    ...     raise ValueError(reason)
    >>> p = safe_parser(refuse)
    >>> p.Parse(b'<!DOCTYPE a [<!ENTITY x "xx">]><a>&x;</a>', True)
    Traceback (most recent call last):
    ...
    ValueError: a document type declaration (<!DOCTYPE>) is refused
    >>> safe_parser(refuse, external_dtd=True).Parse(b'<!DOCTYPE a SYSTEM "a.dtd"><a/>', True)
    1
    """
    reason = doctype or "a document type declaration (<!DOCTYPE>) is refused"
    p = expat.ParserCreate()
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def on_doctype(name: str, system_id: Any, public_id: Any, internal_subset: int) -> None:
        if not external_dtd or internal_subset:
            refuse(reason)

    def on_external(*_: Any) -> int:
        refuse("external entities are refused")
        return 0

    p.StartDoctypeDeclHandler = on_doctype
    p.EntityDeclHandler = lambda name, *_: refuse(f"entity declaration {name!r} refused")
    p.ExternalEntityRefHandler = on_external
    p.SkippedEntityHandler = lambda name, *_: refuse(
        f"a reference to the entity {name!r}, which is not declared in the file, is refused")
    return p


def parse_xml(parser: Any, data: bytes, lost: str | None, file: str,
              record: Callable[[], str | None] | None = None) -> None:
    """Parse ``data``: malformed XML, an unusable encoding and the lost end of the file
    (``lost``) raise :class:`RelationFormatError` naming the line (and ``record()``, the
    record being read)."""
    try:
        parser.Parse(data, lost is None)
    except expat.ExpatError as exc:
        reason = f"not well-formed XML ({expat.ErrorString(exc.code)}, column {exc.offset + 1})"
        raise RelationFormatError(reason, file, exc.lineno, record() if record else None) from None
    except RelationFormatError:
        raise
    except (LookupError, ValueError) as exc:  # the encoding declared is unknown or unusable
        reason = f"cannot decode the file: {' '.join(str(exc).split())[:120]}"
        raise RelationFormatError(reason, file, parser.CurrentLineNumber) from None
    if lost is not None:
        raise RelationFormatError(lost, file, parser.CurrentLineNumber,
                                  record() if record else None)
