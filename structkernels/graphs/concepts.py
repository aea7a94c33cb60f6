"""The concept lists that drive candidate generation (Garg et al., 2016).

A *candidate interaction* pairs a node whose concept is in :data:`INTERACTION_CONCEPTS`
with nodes whose concepts are in :data:`ENTITY_CONCEPTS` (nonstationary kernels paper,
Sec. 2: "the blue nodes are for potential interaction types, and the green nodes are
potential participants").  Pass your own frozensets to
:func:`structkernels.amr.generate_candidates` to change them.

The interaction concepts are the AMR/PropBank frames of the Bio AMR corpus
(``../shared/data/amr``: v0.8 dev, test, training prefix and v3.0 prefix) that name a
biomolecular event, grouped below by kind: post-translational modification, binding and
complexes, activation, inhibition, expression or amount, localisation.  The entity
concepts are the AMR named-entity types for biomolecules; sites (``amino-acid``,
``protein-segment``), cells and cell lines are not participants.

:data:`COORDINATION_CONCEPTS` (``and``, ``or``, ``slash``) are the nodes through which an
argument role reaches several fillers (``:ARG1 (a / and :op1 X :op2 Y)``); the distant-label
rule (:mod:`structkernels.amr.labels`) looks through them.
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
