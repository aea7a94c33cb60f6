"""The concept lists that drive candidate generation (Garg et al., 2016).

A *candidate interaction* pairs a node whose concept is in
:data:`INTERACTION_CONCEPTS` with nodes whose concepts are in
:data:`ENTITY_CONCEPTS` (nonstationary kernels paper, Sec. 2: "the blue nodes
are for potential interaction types, and the green nodes are potential
participants").  Both lists are plain frozensets: pass your own to
:func:`structkernels.amr.generate_candidates` to change them.

Interaction concepts (AMR/PropBank frames of the Bio AMR corpus), grouped by
the kind of biomolecular event; the counts are the nodes of each concept among
the 1,885 unique Bio AMR graphs of ``../shared/data/amr`` (v0.8 dev, test,
training prefix and v3.0 prefix):

============================  =================================================
post-translational             phosphorylate-01 (537), dephosphorylate-01 (23),
modification                   ubiquitinate-01 (58), acetylate-01 (4),
                               farnesylate-01 (2), hydrolyze-01 (20),
                               cleave-01 (16), modify-01 (12)
binding / complexes            bind-01 (154), interact-01 (61),
                               associate-01 (42), dissociate-01 (7),
                               heterodimerize-01 (28), form-01 (57),
                               exchange-01 (6), recruit-01 (11)
activation                     activate-01 (347), deactivate-01 (4),
                               stimulate-01 (137), induce-01 (216),
                               enhance-01 (69), promote-01 (52),
                               mediate-01 (79), signal-07 (141),
                               catalyze-01 (10)
inhibition                     inhibit-01 (422), block-01 (40),
                               suppress-01 (30), repress-01 (22),
                               impair-01 (18), abrogate-01 (9)
expression / amount            express-03 (270), overexpress-01 (58),
                               transcribe-01 (83), translate-02 (3),
                               increase-01 (225), decrease-01 (102),
                               reduce-01 (88), upregulate-01 (27),
                               downregulate-01 (50), regulate-01 (75),
                               degrade-01 (8)
localisation                   translocate-01 (13)
============================  =================================================

Entity concepts (AMR named-entity types for biomolecules): protein (1,587),
enzyme (1,670), gene (439), small-molecule (727), nucleic-acid (183),
protein-family (118), molecular-physical-entity (142),
macro-molecular-complex (32), receptor (40), kinase (69), antibody (26),
peptide (20).  Sites (``amino-acid``, ``protein-segment``), cells and cell
lines are not participants.

:data:`COORDINATION_CONCEPTS` (``and``, ``or``, ``slash``) are the nodes
through which an argument role reaches several fillers (``:ARG1 (a / and
:op1 X :op2 Y)``); the distant-label rule (:mod:`structkernels.amr.labels`)
looks through them.
"""

from __future__ import annotations

__all__ = ["INTERACTION_CONCEPTS", "ENTITY_CONCEPTS", "COORDINATION_CONCEPTS"]

INTERACTION_CONCEPTS: frozenset[str] = frozenset(
    """
    phosphorylate-01 dephosphorylate-01 ubiquitinate-01 acetylate-01 farnesylate-01
    hydrolyze-01 cleave-01 modify-01
    bind-01 interact-01 associate-01 dissociate-01 heterodimerize-01 form-01 exchange-01
    recruit-01
    activate-01 deactivate-01 stimulate-01 induce-01 enhance-01 promote-01 mediate-01
    signal-07 catalyze-01
    inhibit-01 block-01 suppress-01 repress-01 impair-01 abrogate-01
    express-03 overexpress-01 transcribe-01 translate-02 increase-01 decrease-01 reduce-01
    upregulate-01 downregulate-01 regulate-01 degrade-01
    translocate-01
    """.split()
)

ENTITY_CONCEPTS: frozenset[str] = frozenset(
    """
    protein enzyme gene small-molecule nucleic-acid protein-family
    molecular-physical-entity macro-molecular-complex receptor kinase antibody peptide
    """.split()
)

COORDINATION_CONCEPTS: frozenset[str] = frozenset({"and", "or", "slash"})
