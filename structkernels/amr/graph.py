"""The AMR graph model: a :class:`networkx.MultiDiGraph` built from a PENMAN graph.

Conventions (nonstationary kernels paper, Sec. 2 and Fig. 1):

- one node per AMR variable, with node attributes

  ``concept``
      the concept, e.g. ``"bind-01"`` or ``"protein"``;
  ``attributes``
      the node's constants as a tuple of ``(role, value)`` pairs in PENMAN
      order, roles without the leading colon and string values unquoted,
      e.g. ``(("polarity", "-"),)`` or ``(("op1", "Ras"),)``;
  ``name``
      for a node with a ``:name`` edge to a ``name`` node, the name's
      ``:op1 :op2 ...`` strings joined by single spaces (``"protein kinase B1"``),
      else ``None``;
  ``wiki``
      the ``:wiki`` constant or ``None``;

- one edge per AMR relation between two variables, with edge attributes
  ``role`` (no leading colon, e.g. ``"ARG0"``, ``"op1"``, ``"consist-of"``) and
  ``inverted``.  Inverse roles are normalised to forward edges: ``(x :ARG0-of
  (y / ...))`` becomes the edge ``y -> x`` with ``role="ARG0"`` and
  ``inverted=True`` (the fact that it was written inverted is kept).  Roles
  whose name merely ends in ``-of`` (``consist-of``, ``prep-out-of``) follow
  the AMR model of :mod:`penman` and are not inverted.  A graph is a *set* of
  triples: a relation stated twice (``(a :ARG0 (p :ARG1-of a) :ARG1 p)``
  states ``a -ARG1-> p`` once inverted, once not) is one edge, with
  ``inverted=True`` only if every statement of it is inverted;
- graph attributes ``root`` (the top variable) and ``id``.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import penman
from penman import layout
from penman.models.amr import model as AMR_MODEL

__all__ = ["to_networkx", "AMR_MODEL", "unquote", "concept_label"]


def unquote(value: Any) -> str:
    """A PENMAN constant as text: string constants lose their quotes."""
    if value is None:
        return ""
    s = str(value)
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('\\"', '"')
    return s


def concept_label(concept: str, senses: bool = False) -> str:
    """The node label used in paths and trees.

    With ``senses=False`` (the default, as in Table 1 of the paper, where
    ``bind-01`` reads ``bind``) a trailing PropBank sense number is removed:
    ``"bind-01" -> "bind"``, ``"have-org-role-91" -> "have-org-role"``;
    concepts without one (``"protein"``) are unchanged.
    """
    if not senses:
        head, sep, tail = concept.rpartition("-")
        if sep and head and tail.isdigit():
            return head
    return concept


def _appears_inverted(graph: penman.Graph, triple) -> bool:
    """Whether an edge was written inverted (``:ARG0-of``) in the PENMAN text."""
    pushed = layout.get_pushed_variable(graph, triple)
    if pushed is not None:  # the branch introduced a node: it is the one pushed
        return pushed == triple[0]
    return bool(layout.appears_inverted(graph, triple))  # re-entrancy: slow path, rare


def _statement_inversions(tree: penman.Tree, model=AMR_MODEL) -> list[bool]:
    """For each branch of ``tree`` in the order :func:`penman.layout.interpret`
    makes its triples, whether it states an inverted relation.

    Iterative (any depth).  Used where epigraph data cannot tell: penman keeps
    the epigraph of the first statement of a triple only.
    """
    variables = {v for v, _ in tree.nodes()}
    flags: list[bool] = []
    stack = [iter(tree.node[1])]
    while stack:
        branch = next(stack[-1], None)
        if branch is None:
            stack.pop()
            continue
        role, target = branch
        role = role.partition("~")[0] if role != "/" else role
        if isinstance(target, tuple):
            flags.append(role != "/" and model.is_role_inverted(role))
            stack.append(iter(target[1]))
        else:
            value = target.partition("~")[0] if target and not target.startswith('"') else target
            flags.append(role != "/" and model.is_role_inverted(role) and value in variables)
    return flags


def to_networkx(
    graph: penman.Graph, graph_id: str | None = None, tree: penman.Tree | None = None
) -> nx.MultiDiGraph:
    """Build the :class:`networkx.MultiDiGraph` model of a PENMAN graph.

    Parameters
    ----------
    graph : penman.Graph
        A decoded graph (decode with ``model=structkernels.amr.graph.AMR_MODEL``
        so that inverse roles are normalised the AMR way).
    graph_id : str, optional
        Stored as the graph attribute ``id``.
    tree : penman.Tree, optional
        The parsed tree ``graph`` was interpreted from.  It tells exactly
        which statements of a relation stated more than once were inverted;
        without it the epigraph data of ``graph`` is used, which penman keeps
        for a relation's first statement only.

    Returns
    -------
    networkx.MultiDiGraph

    Raises
    ------
    ValueError
        A variable without a concept, or defined twice.

    Examples
    --------
    >>> import penman
    >>> from structkernels.amr.graph import AMR_MODEL, to_networkx
    >>> g = to_networkx(penman.decode('(p / protein :ARG0-of (b / bind-01))', model=AMR_MODEL))
    >>> list(g.edges(data="role")), g.edges["b", "p", 0]["inverted"]
    ([('b', 'p', 'ARG0')], True)
    """
    G = nx.MultiDiGraph(root=graph.top, id=graph_id)
    for var, _, concept in graph.instances():
        if concept is None:
            raise ValueError(f"variable {var!r} has no concept")
        if var in G:
            raise ValueError(f"variable {var!r} is defined twice")
        G.add_node(var, concept=str(concept), attributes=(), name=None, wiki=None)
    flags = _statement_inversions(tree) if tree is not None else []
    if len(flags) != len(graph.triples):
        flags = []  # not the tree of this graph: fall back to the epigraph
    inverted: dict[tuple, bool] = {}  # one edge per distinct triple, in first-seen order
    edges = set(graph.edges())
    for i, triple in enumerate(graph.triples):
        if triple not in edges:
            continue
        flag = flags[i] if flags else None
        if triple in inverted:
            if flag is not None:
                inverted[triple] = inverted[triple] and flag
            continue
        for v in (triple[0], triple[2]):
            if v not in G:
                raise ValueError(f"variable {v!r} has no concept")
        inverted[triple] = flag if flag is not None else _appears_inverted(graph, triple)
    for (src, role, tgt), inv in inverted.items():
        G.add_edge(src, tgt, role=role[1:], inverted=inv)
    attrs: dict[str, list[tuple[str, str]]] = {}
    for src, role, value in graph.attributes():
        if src not in G:
            raise ValueError(f"variable {src!r} has no concept")
        attrs.setdefault(src, []).append((role[1:], unquote(value)))
    for var, pairs in attrs.items():
        node = G.nodes[var]
        node["attributes"] = tuple(pairs)
        for role, value in pairs:
            if role == "wiki":
                node["wiki"] = value
    for src, tgt, role in G.edges(data="role"):
        if role == "name" and G.nodes[tgt]["concept"] == "name" and G.nodes[src]["name"] is None:
            ops = [
                (int(r[2:]), v)
                for r, v in G.nodes[tgt]["attributes"]
                if r.startswith("op") and r[2:].isdigit()
            ]
            if ops:
                G.nodes[src]["name"] = " ".join(v for _, v in sorted(ops))
    return G
