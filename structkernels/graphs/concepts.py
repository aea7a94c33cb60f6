"""The concept lists that drive candidate generation (Garg et al., 2016).

A candidate interaction pairs a node whose concept is in :data:`INTERACTION_CONCEPTS` (the
AMR/PropBank frames of the Bio AMR corpus that name a biomolecular event) with nodes whose
concepts are in :data:`ENTITY_CONCEPTS` (the AMR named-entity types of biomolecules; sites,
cells and cell lines are not participants).  Through :data:`COORDINATION_CONCEPTS` an
argument role reaches several fillers (``:ARG1 (a / and :op1 X :op2 Y)``).
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
