"""Sentences with entity offsets to dependency graphs, through a spaCy pipeline.

:class:`DependencyParser` makes every entity boundary a token boundary, keeps each sentence
one tree, runs the pipeline in batches and caches each parse on disk, checked when read
(:func:`parse_problem`); :class:`BackgroundParser` runs it in a child process.  A sentence
longer than :data:`MAX_SENTENCE_CHARS` characters is refused: the parser's time grows faster
than the length.  The ``parse`` extra installs spaCy's ``en_core_web_sm``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.engine.parallel import ChildCall, ChildProcess
from structkernels.graphs.model import Graph, GraphFormatError, new_graph, node_data
from structkernels.relations.corpus import MAX_SENTENCE_CHARS, RelationFormatError
from structkernels.relations.pipelines import (
    DEFAULT_PIPELINE,
    check_pipeline,
    keep_torch_out,
    pipeline_packages,
)
from structkernels.utils import (
    CacheFolder,
    check_cache_dir,
    check_int,
    effective_n_jobs,
    optional_module,
    tqdm,
    user_cache_dir,
)

__all__ = ["DEFAULT_PIPELINE", "MAX_SENTENCE_CHARS", "BackgroundParser", "MIN_PARALLEL_PARSE",
           "DependencyParser", "parse_problem", "ParsedSentence", "ParsesCall", "entity_tokens",
           "load_pipeline", "parse_ahead_pays", "parse_without_torch", "split_at"]

_HINT = (
    "parsing text needs spaCy and an English pipeline: pip install 'structkernels[parse]' "
    "(or pip install -e '.[parse]' in a checkout)"
)
_CACHE_VERSION = 2  # 2: entries carry their key's and content's SHA-256
_MAX_CACHE_BYTES = 4 << 20
_FIELDS = ("words", "heads", "deps", "tags", "pos", "lemmas")
#: The fewest sentences to parse in one call for which :class:`DependencyParser` starts
#: several processes (spaCy's worker processes take seconds to start: below this, one
#: process is faster).
MIN_PARALLEL_PARSE = 500


def load_pipeline(name: str = DEFAULT_PIPELINE) -> Any:
    """The installed spaCy pipeline ``name`` (or an alias of it), its named entity recogniser
    left out; only an installed pipeline package reaches ``spacy.load`` (:func:`check_pipeline`).

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


def parse_without_torch(parser: DependencyParser, sentences: Sequence[Any]) -> list[Any]:
    """``parser.parse(sentences)``, PyTorch kept out when the pipeline does not need it
    (:func:`~structkernels.relations.pipelines.keep_torch_out`): ``evaluate``'s parsing child."""
    keep_torch_out(parser.pipeline)
    return parser.parse(sentences)


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


def entity_tokens(token_spans: Sequence[tuple[int, int]],
                  spans: Sequence[tuple[int, int]]) -> tuple[int, ...]:
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
    """A sentence's dependency graph (nodes ``"1"`` ... ``"n"`` with ``concept`` (the word),
    ``lemma``, ``pos``, ``tag``, ``index``; edges labelled ``role``), each token's character
    span, and each entity id's token nodes in sentence order (empty for whitespace only)."""

    id: str
    graph: Graph
    token_spans: tuple[tuple[int, int], ...]
    entities: dict[str, tuple[str, ...]]


def parse_problem(parse: Any, words: Sequence[str] | None = None,
                  labels: Iterable[str] | None = None) -> str | None:
    """Why ``parse`` is not a parse of one sentence of ``words`` (None when it is one): a dict
    of lists of one length (``words``, ``heads``, ``deps``, ``tags``, ``pos``, ``lemmas``),
    strings but ``heads``, integers forming one tree (one root, its own head; no cycle); with
    ``labels``, every dependency label one of them.

    Examples
    --------
    >>> ok = {"words": ["Ras", "binds"], "heads": [1, 1], "deps": ["nsubj", "ROOT"],
    ...       "tags": ["NN", "VBZ"], "pos": ["NOUN", "VERB"], "lemmas": ["ras", "bind"]}
    >>> parse_problem(ok, ["Ras", "binds"]) is None
    True
    >>> parse_problem(dict(ok, heads=[0, 1]))
    'two roots (tokens 0 and 1)'
    >>> parse_problem(dict(ok, deps=["nsubj", "zzz"]), labels={"nsubj", "ROOT"})
    "dependency label 'zzz' of token 1 is not one of the pipeline's"
    """
    if not isinstance(parse, dict):
        return f"a {type(parse).__name__}, not a parse"
    for k in _FIELDS:
        if not isinstance(parse.get(k), list):
            return f"field {k!r} is not a list"
    n = len(parse["words"])
    for k in _FIELDS:
        if len(parse[k]) != n:
            return f"{len(parse[k])} {k} for {n} words"
        if k == "heads":
            bad = next((i for i, h in enumerate(parse[k])
                        if isinstance(h, bool) or not isinstance(h, int)), None)
            if bad is not None:
                return f"head {bad} is a {type(parse[k][bad]).__name__}, not a token index"
        else:
            bad = next((i for i, x in enumerate(parse[k]) if not isinstance(x, str)), None)
            if bad is not None:
                return f"{k}[{bad}] is a {type(parse[k][bad]).__name__}, not a string"
    if words is not None and parse["words"] != list(words):
        return f"its {n} words are not the sentence's {len(words)} tokens"
    heads = parse["heads"]
    if n == 0:
        return "no token"
    out = next((i for i, h in enumerate(heads) if not 0 <= h < n), None)
    if out is not None:
        return f"head {heads[out]} of token {out} is outside the sentence"
    roots = [i for i, h in enumerate(heads) if h == i]
    if len(roots) != 1:
        return (f"two roots (tokens {roots[0]} and {roots[1]})" if roots else "no root")
    state = [0] * n  # 0 unseen, 1 on the current walk, 2 reaches the root
    state[roots[0]] = 2
    for i in range(n):
        walk = []
        j = i
        while state[j] == 0:
            state[j] = 1
            walk.append(j)
            j = heads[j]
        if state[j] == 1:
            return f"the heads form a cycle through token {j}"
        for w in walk:
            state[w] = 2
    if labels is not None:
        labels = set(labels)
        bad = next((i for i, d in enumerate(parse["deps"]) if d not in labels), None)
        if bad is not None:
            return (f"dependency label {parse['deps'][bad]!r} of token {bad} is not one of "
                    "the pipeline's")
    return None


def _graph(sentence_id: str, text: str, parse: dict[str, list]) -> Graph:
    G = new_graph(sentence_id, "dependency")
    words, heads, deps = parse["words"], parse["heads"], parse["deps"]
    lemmas, pos, tags = parse["lemmas"], parse["pos"], parse["tags"]
    keys = [str(i + 1) for i in range(len(words))]
    G.add_nodes_from((keys[i], node_data(words[i], lemma=lemmas[i] or None,
                                         pos=pos[i] or None, tag=tags[i] or None,
                                         index=i + 1))
                     for i in range(len(words)))  # in one call
    root = None
    edges = []
    for i, h in enumerate(heads):
        if h == i:
            if root is not None:
                raise GraphFormatError("the parse has two roots", None, None, sentence_id)
            root = keys[i]
        else:
            edges.append((keys[h], keys[i], {"role": deps[i], "inverted": False}))
    G.add_edges_from(edges)
    G.graph["root"] = root
    return Graph(id=sentence_id, sentence=text, graph=G)


def _sorted_entity_tokens(starts: Sequence[int], ends: Sequence[int],
                          spans: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    """:func:`entity_tokens` of tokens in text order, by bisection."""
    found: set[int] = set()
    for s, e in spans:
        found.update(range(bisect_right(ends, s), bisect_left(starts, e)))
    return tuple(sorted(found))


class DependencyParser:
    """Parse sentences with entity offsets into dependency graphs (spaCy), cached on disk.

    Parameters
    ----------
    pipeline : str, default "en_core_web_sm"
        An installed spaCy pipeline with a dependency parser.
    cache_dir : str or path or None or False, default None
        Where parses are kept (one checked entry per sentence, under
        ``<cache_dir>/parses/<pipeline>-<version>/``); None is
        :func:`structkernels.utils.user_cache_dir`, False keeps nothing.
    batch_size : int, default 128
        Sentences per ``nlp.pipe`` batch.
    n_process : int or None, default 1
        Processes of ``nlp.pipe`` (None: the cores this process may use), for a call with at
        least ``min_parallel`` sentences to parse (:meth:`processes`); the parses are the same.
    min_parallel : int, default :data:`MIN_PARALLEL_PARSE`
    progress : bool, default True
    max_chars : int, default :data:`MAX_SENTENCE_CHARS`
        The longest sentence parsed (spaCy's ``nlp.max_length`` too, if smaller).

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

    def __init__(self, pipeline: str = DEFAULT_PIPELINE, *,
                 cache_dir: str | os.PathLike | None | bool = None, batch_size: int = 128,
                 n_process: int | None = 1, progress: bool = True,
                 max_chars: int = MAX_SENTENCE_CHARS, min_parallel: int = MIN_PARALLEL_PARSE):
        if cache_dir is not None and not isinstance(cache_dir, bool):
            check_cache_dir(cache_dir)
        if cache_dir is True:
            cache_dir = None
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValueError(f"max_chars must be a positive integer, got {max_chars!r}")
        self.pipeline = pipeline
        self.cache_dir = cache_dir
        self.max_chars = max_chars
        self.batch_size = batch_size
        check_int(n_process, "n_process", 1, allow_none=True)
        check_int(min_parallel, "min_parallel", 1)
        self.n_process = n_process
        self.min_parallel = min_parallel
        self.progress = progress
        self._nlp = None
        self._cache: CacheFolder | None = None
        self._labels: frozenset[str] | None = None

    @property
    def nlp(self) -> Any:
        """The loaded spaCy pipeline (loaded on first use)."""
        if self._nlp is None:
            self._nlp = load_pipeline(self.pipeline)
        return self._nlp

    def pipeline_info(self) -> dict[str, str]:
        """The pipeline as a model file records it: ``{"name", "package", "version",
        "spacy"}`` (loads the pipeline)."""
        import spacy

        meta = self.nlp.meta
        return {"name": self.pipeline,
                "package": f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}",
                "version": str(meta.get("version", "")), "spacy": spacy.__version__}

    def _folder(self) -> Path | None:
        if self.cache_dir is False:
            return None
        base = user_cache_dir() if self.cache_dir is None else Path(self.cache_dir)
        meta = self.nlp.meta
        name = f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}-{meta.get('version', '0')}"
        return base / "parses" / name

    def _store(self) -> CacheFolder:
        """The parse cache (one per parser: its writes, once off, stay off)."""
        if self._cache is None:
            self._cache = CacheFolder(self._folder(), "parse cache")
        return self._cache

    def labels(self) -> frozenset[str] | None:
        """The dependency labels the pipeline's parser gives (with ``ROOT`` and ``dep``),
        or None when the pipeline does not say."""
        if self._labels is None:
            try:
                found = self.nlp.get_pipe("parser").labels
            except (AttributeError, KeyError, ValueError):
                return None
            self._labels = frozenset(found) | {"ROOT", "dep"}
        return self._labels

    def _check_length(self, s: Any) -> None:
        limit = min(self.max_chars, int(getattr(self.nlp, "max_length", self.max_chars)))
        if len(s.text) > limit:
            raise RelationFormatError(
                f"sentence of {len(s.text):,} characters; at most {limit:,} are parsed "
                "(DependencyParser's max_chars, and spaCy's nlp.max_length): split it",
                getattr(s, "file", None), getattr(s, "line", None), str(s.id))

    @staticmethod
    def _key(text: str, cuts: Sequence[int]) -> str:
        blob = json.dumps([_CACHE_VERSION, text, list(cuts)], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def processes(self, n_sentences: int) -> int:
        """The processes ``nlp.pipe`` runs with to parse ``n_sentences`` sentences.

        Examples
        --------
        >>> p = DependencyParser(cache_dir=False, n_process=4)
        >>> p.processes(10), p.processes(MIN_PARALLEL_PARSE)
        (1, 4)
        """
        n = effective_n_jobs(None) if self.n_process is None else self.n_process
        return 1 if n_sentences < self.min_parallel else max(1, min(n, n_sentences))

    def _tokens(self, text: str, cuts: Sequence[int]) -> tuple[list[str], list[bool], list]:
        spans = [(t.idx, t.idx + len(t.text)) for t in self.nlp.tokenizer(text)]
        spans = split_at(spans, cuts)
        words = [text[a:b] for a, b in spans]
        spaces = [b < len(text) and text[b].isspace() and
                  (k + 1 == len(spans) or spans[k + 1][0] > b)
                  for k, (a, b) in enumerate(spans)]
        return words, spaces, spans

    def _run(self, todo: list[tuple[str, list[str], list[bool]]]) -> list[dict[str, list]]:
        from spacy.attrs import DEP, HEAD, LEMMA, POS, TAG
        from spacy.tokens import Doc

        vocab = self.nlp.vocab
        docs = [Doc(vocab, words=words, spaces=spaces,  # one sentence, one tree
                    sent_starts=[True] + [False] * (len(words) - 1) if words else None)
                for _, words, spaces in todo]
        name = cache(vocab.strings.__getitem__)  # a string id -> its string, over the call
        out = []
        with tqdm(total=len(docs), desc="parsing", unit="sentence",
                  disable=not self.progress) as bar:
            for (_, words, _), doc in zip(todo, self.nlp.pipe(
                    docs, batch_size=self.batch_size, n_process=self.processes(len(docs))),
                    strict=True):
                # the token attributes as arrays (one Token object per token is the
                # slow way); a head is read as its offset from the token
                table = doc.to_array([HEAD, DEP, TAG, POS, LEMMA])  # unsigned
                offsets = table[:, 0].astype(np.int64).tolist()
                deps, tags, pos, lemmas = table[:, 1:].T.tolist()
                deps = [name(d) or "dep" for d in deps]
                out.append({
                    "words": (list(words) if len(doc) == len(words)
                              else [t.text for t in doc]),
                    "heads": [i + h for i, h in enumerate(offsets)],
                    "deps": deps,
                    "tags": [name(t) for t in tags],
                    "pos": [name(p) for p in pos],
                    "lemmas": [name(x) for x in lemmas],
                })
                bar.update(1)
        return out

    def _read_cached(self, name: str, key: str, words: list[str]) -> dict[str, list] | None:
        store = self._store()
        payload = store.read(name, key, _MAX_CACHE_BYTES)
        if payload is None:
            return None
        try:
            parse = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            parse = None
        problem = parse_problem(parse, words, self.labels()) if parse is not None \
            else "not JSON"
        if problem is not None:
            store.discard(name, problem)
            return None
        return parse

    def parse(self, sentences: Iterable[Any]) -> list[ParsedSentence]:
        """Parse each sentence (``.id``, ``.text``, ``.entities`` with ``.id`` and ``.spans``).

        Returns
        -------
        list of ParsedSentence
            In the order given.
        """
        return [_parsed(r) for r in self._records(sentences)]

    def _records(self, sentences: Iterable[Any]) -> list[tuple]:
        """:meth:`parse` before the graphs are built, ``(id, text, parse, token spans, entity
        tokens)`` per sentence: what a :class:`BackgroundParser`'s child sends back."""
        sentences = list(sentences)
        for s in sentences:
            self._check_length(s)
        store = self._store()
        items, todo, where = [], [], []
        for s in sentences:
            cuts = sorted({o for e in s.entities for span in e.spans for o in span})
            words, spaces, spans = self._tokens(s.text, cuts)
            key = self._key(s.text, cuts)
            cached = (self._read_cached(f"{key[:2]}/{key}.json", key, words)
                      if store.path is not None else None)
            items.append([s, spans, key, cached])
            if cached is None:
                todo.append((key, words, spaces))
                where.append(len(items) - 1)
        if todo:
            for k, parse in zip(where, self._run(todo), strict=True):
                items[k][3] = parse
                key = items[k][2]
                # a parse is kept only when it passes the checks a cached one must pass
                if store.writable and parse_problem(parse, None, self.labels()) is None:
                    store.write(f"{key[:2]}/{key}.json", key,
                                json.dumps(parse, ensure_ascii=True).encode("ascii"))
        out = []
        for s, spans, _, parse in items:
            starts, ends = [a for a, _ in spans], [b for _, b in spans]
            ents = {e.id: tuple(str(i + 1) for i in _sorted_entity_tokens(starts, ends, e.spans))
                    for e in s.entities}
            out.append((s.id, s.text, parse, tuple(spans), ents))
        return out


def _parsed(record: tuple) -> ParsedSentence:
    """The :class:`ParsedSentence` of a record of :meth:`DependencyParser._records`."""
    sentence_id, text, parse, spans, ents = record
    return ParsedSentence(sentence_id, _graph(sentence_id, text, parse), spans, ents)


class ParsesCall:
    """A :meth:`BackgroundParser.submit` call: :meth:`result` waits for the child's records
    and builds ``DependencyParser.parse``'s graphs from them here."""

    def __init__(self, call: ChildCall):
        self._call = call

    def done(self) -> bool:
        """Whether the child has finished parsing (or failed)."""
        return self._call.done()

    def result(self) -> list[ParsedSentence]:
        """The parses, in the order submitted; the child's exception is raised here."""
        return [_parsed(r) for r in self._call.result()]


#: The parser of a :class:`BackgroundParser`'s child process, kept between its calls.
_CHILD: dict[str, DependencyParser] = {}


def _in_child(parser: DependencyParser, method: str | None, *args: Any) -> Any:
    """In a :class:`BackgroundParser`'s child: ``method`` of the first parser sent (kept, its
    pipeline loaded, PyTorch kept out) called with ``args``; no method: True."""
    if "parser" not in _CHILD:
        keep_torch_out(parser.pipeline)
        _ = parser.nlp  # loaded now, then out of the collector's scans for the child's life
        gc.freeze()
        _CHILD["parser"] = parser
    return True if method is None else getattr(_CHILD["parser"], method)(*args)


def parse_ahead_pays() -> bool:
    """Whether parsing ahead (:class:`BackgroundParser`) can overlap with scoring: the
    process may use two cores or more (:func:`structkernels.utils.effective_n_jobs`).

    Examples
    --------
    >>> isinstance(parse_ahead_pays(), bool)
    True
    """
    return effective_n_jobs(None) > 1


class BackgroundParser:
    """A :class:`DependencyParser` run in a child process
    (:class:`~structkernels.engine.parallel.ChildProcess`), so that the caller goes on
    (scoring one batch) while the next batch is parsed, with the same cache and parses; the
    calling process never loads spaCy.  Close it (or use ``with``) to stop the child.

    Parameters
    ----------
    parser : DependencyParser
        The settings (no progress bar in the child; ``n_process=None``: the cores but one).

    Examples
    --------
    >>> with BackgroundParser(DependencyParser(cache_dir=False)) as bg:  # doctest: +SKIP
    ...     call = bg.submit(sentences)  # returns at once
    ...     parsed = call.result()  # the list DependencyParser.parse gives
    """

    def __init__(self, parser: DependencyParser):
        if not isinstance(parser, DependencyParser):
            raise TypeError(f"BackgroundParser takes a DependencyParser, got "
                            f"{type(parser).__name__}")
        self.parser = DependencyParser(
            parser.pipeline, cache_dir=parser.cache_dir, batch_size=parser.batch_size,
            # the calling process keeps a core for itself
            n_process=(max(1, effective_n_jobs(None) - 1) if parser.n_process is None
                       else parser.n_process), progress=False, max_chars=parser.max_chars,
            min_parallel=parser.min_parallel)
        self._child = ChildProcess(interrupt=False)  # Ctrl-C is the caller's

    def submit(self, sentences: Iterable[Any]) -> ParsesCall:
        """Parse ``sentences`` in the child; ``.result()`` is ``parser.parse(sentences)``."""
        return ParsesCall(self._child.submit(_in_child, self.parser, "_records",
                                                 list(sentences)))

    def warm(self) -> ChildCall:
        """Start the child and load the pipeline there now (while the caller loads its
        model, say); returns at once."""
        return self._child.submit(_in_child, self.parser, None)

    def submit_pipeline_info(self) -> ChildCall:
        """:meth:`DependencyParser.pipeline_info`, asked of the child after the parses submitted
        before; returns at once."""
        return self._child.submit(_in_child, self.parser, "pipeline_info")

    def close(self) -> None:
        """Stop the child (once the call running there has finished)."""
        self._child.close()

    def abandon(self) -> None:
        """Stop the child now, the call running there abandoned (a child started ahead of
        need, not needed after all: its pipeline's load is not waited for)."""
        self._child.terminate()

    def __enter__(self) -> BackgroundParser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
