"""``structkernels candidates``: the candidate interactions of graph files as JSON Lines, for
inspection or hand labelling (a record given ``"label": 0`` or ``1`` trains with
``structkernels train-npk FILE``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path as FilePath

from structkernels.cli import CommandError
from structkernels.cli._common import writes_files
from structkernels.utils import split_lines


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "candidates",
        help="write the candidate interactions of graph files as JSON Lines",
        description=(
            "Read graphs (DOT files or folders, CoNLL-U, PENMAN, GraphML, GML; format from the "
            "extension) and write one JSON record per candidate interaction: graph, sentence, "
            "interaction/catalyst/participant nodes, path and tree."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="graph files or folders")
    p.add_argument("--out", "-o", default="-",
                   help="JSON Lines output file; - is standard output (default: %(default)s)")
    p.add_argument("--format", choices=["dot", "conllu", "penman", "graphml", "gml"], default=None,
                   help="graph format (default: from each file's extension)")
    p.add_argument("--kind", choices=["auto", "amr", "dependency"], default="auto",
                   help="kind of DOT/GraphML/GML graphs; auto detects it for DOT and reads "
                   "GraphML and GML as amr (default: %(default)s)")
    p.add_argument("--triggers", default=None, metavar="WORDS|FILE", help="interaction trigger "
                   "words or lemmas: comma-separated, or a file with one per line")
    p.add_argument("--entities", default=None, metavar="WORDS|FILE",
                   help="entity words or names: comma-separated, or a file with one per line")
    p.add_argument("--match", choices=["word", "lemma", "stem", "any"], default="any",
                   help="how lexicon entries match nodes (default: %(default)s)")
    p.add_argument("--case-sensitive", action="store_true", help="do not case-fold lexicon matches")
    p.add_argument("--max-participants", type=int, choices=[1, 2], default=2,
                   help="most participants per candidate (default: %(default)s)")
    p.add_argument("--no-catalysts", action="store_true", help="only candidates without a catalyst")
    p.add_argument("--max-distance", type=int, default=None, help="entities at most this many "
                   "edges away from the interaction (default: no limit)")
    p.add_argument("--no-trees", action="store_true", help="leave the trees out of the records")
    p.add_argument("--n-jobs", type=int, default=1,
                   help="processes parsing DOT files (-1: all cores) (default: %(default)s)")
    p.add_argument("--skip-bad", action="store_true", help="leave out malformed graphs (each "
                   "one is reported on stderr) instead of stopping")
    p.set_defaults(func=writes_files(run, "--out", streams=("--out",), inputs=_inputs))
    return p


def _inputs(args: argparse.Namespace) -> list[str | None]:
    """Every file and folder ``candidates`` reads: the graphs and the word-list files."""
    lists = [v for v in (args.triggers, args.entities) if v is not None and FilePath(v).is_file()]
    return [*args.files, *lists]


def _words(value: str | None) -> frozenset[str]:
    if value is None:
        return frozenset()
    path = FilePath(value)
    if path.is_file():
        try:
            # lines end at \n, \r\n or \r only: U+2028 may be part of a word
            lines = split_lines(path.read_text(encoding="utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise CommandError(f"{value}: word list is not UTF-8 text ({exc.reason} at byte "
                               f"{exc.start})") from None
        return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))
    return frozenset(w.strip() for w in value.split(",") if w.strip())


def build_lexicon(args: argparse.Namespace, kind: str):
    """The :class:`~structkernels.graphs.Lexicon` the options describe, for one kind of graph."""
    from structkernels.graphs import Lexicon

    kw = {"match": args.match, "case_sensitive": args.case_sensitive}
    triggers, entities = _words(args.triggers), _words(args.entities)
    if kind == "dependency":
        if triggers:
            kw["triggers"] = triggers
        return Lexicon.for_dependency(entities=entities, **kw)
    return Lexicon(triggers=triggers, entities=entities, **kw)


def run(args: argparse.Namespace) -> int:
    import json

    from structkernels.graphs import candidate_records, read_graphs
    from structkernels.graphs.model import graph_kind
    from structkernels.utils import open_output

    for f in args.files:
        if not FilePath(f).exists():
            raise CommandError(f"no such file or folder: {f}")
    if args.max_distance is not None and args.max_distance < 1:
        raise CommandError(f"--max-distance must be at least 1, got {args.max_distance}")
    options = {} if args.kind == "auto" else {"kind": args.kind}
    if args.n_jobs != 1:
        if args.format not in (None, "dot"):
            raise CommandError("--n-jobs applies to DOT files only")
        options["n_jobs"] = args.n_jobs
    t0 = time.perf_counter()
    corpus = read_graphs(args.files, format=args.format,
                         on_error="skip" if args.skip_bad else "raise", **options)
    t_read = time.perf_counter() - t0
    for s in corpus.skipped:
        print(f"structkernels candidates: skipped {s}", file=sys.stderr)
    lexicons = {k: build_lexicon(args, k) for k in ("amr", "dependency")}
    n = 0
    # a file is written under a temporary name and renamed when complete: an interrupted
    # run leaves an existing output intact
    with open_output(args.out, stream_ok=True) as out:
        for g in corpus:
            for rec in candidate_records(g, lexicons[graph_kind(g.graph)],
                                         max_participants=args.max_participants,
                                         catalysts=not args.no_catalysts,
                                         max_distance=args.max_distance, trees=not args.no_trees):
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
    print(f"structkernels candidates: {len(corpus)} graphs ({len(corpus.skipped)} skipped), "
          f"{n} candidates; read {t_read:.2f} s, total {time.perf_counter() - t0:.2f} s",
          file=sys.stderr)
    return 0
