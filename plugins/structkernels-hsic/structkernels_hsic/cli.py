"""``structkernels hsic`` and ``structkernels phsic fit | score | select``.

Inputs are ``.npy`` arrays (vectors, or Gram matrices with
``--kernel precomputed``), JSON Lines structure files (``.jsonl``, see
:mod:`structkernels.formats.structures`) or plain text, one sentence per line (``.txt``,
encoded with ``--encoder glove``: the sum of GloVe 6B 50d vectors).

Every output is written to a temporary file renamed into place when complete;
a PHSIC model file is data only (``PHSIC.save``: a ``.npz`` archive, never a
pickle).  JSON output never holds NaN or infinity: a non-finite result is one
error line naming it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.cli import CommandError, build_kernel, check_structures
from structkernels.cli import parse_params as _params
from structkernels.formats.structures import read_structures
from structkernels.utils import read_npy

__all__ = ["add_hsic_parser", "add_phsic_parser"]


def _read(path: str, encoder: str, kernel: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise CommandError(f"{path}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        return read_npy(p)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return read_structures(p).structures
    if suffix in (".txt", ".tsv") or suffix == "":
        with open(p, encoding="utf-8") as fh:
            lines = [line.rstrip("\n") for line in fh]
        if encoder != "glove":
            raise CommandError(f"{path}: text input needs --encoder glove (sentence vectors)")
        from structkernels_hsic.encoders import SumOfWordVectors

        try:
            return SumOfWordVectors("glove").fit().transform(lines)
        except ImportError as exc:
            raise CommandError(str(exc)) from None
    raise CommandError(f"{path}: unknown input type {suffix!r} (use .npy, .jsonl or .txt)")


def _check_outputs(args: argparse.Namespace, inputs: list[str], *outputs: tuple[str, str, bool]) -> None:
    """The output rule (:func:`structkernels.utils.check_output`) before any work: no output
    is an input (links included), ``-``, a folder, a FIFO or a device (unless a text
    stream), or the file of another output.  ``outputs`` are ``(option, dest, stream)``."""
    from structkernels.utils import check_output

    seen: dict[str, str] = {}
    for option, dest, stream in outputs:
        value = getattr(args, dest, None)
        if value is None:
            continue
        writes = None
        if dest == "scores" or (dest == "output" and value.endswith(".npy")):
            from structkernels.utils import npy_path

            writes = npy_path(value)
        target = check_output(value, inputs, what=option, stream_ok=stream and writes is None,
                              writes=writes)
        key = str(target)
        if key in seen:
            raise CommandError(f"{option} {value}: is also the {seen[key]} output; give each "
                               "output its own file")
        seen[key] = option


def _check_kernels(args: argparse.Namespace, X: Any, Y: Any) -> None:
    """Refuse, in one line each, a kernel parameter the kernel does not take and input the
    kernel does not read (``--kernel-x path`` on a ``.npy`` file), before any work."""
    for side, data in (("x", X), ("y", Y)):
        spec = getattr(args, f"kernel_{side}")
        if spec == "precomputed":
            continue
        params = _params(getattr(args, f"param_{side}"))
        for key in ("bandwidth", "sigma"):
            if params.get(key) == "median":  # resolved on the data at fit time
                params[key] = 1.0
        k = build_kernel(spec, params, f"--kernel-{side}", f"--param-{side}")
        kind = "vector" if isinstance(data, np.ndarray) else type(data[0]).__name__ if len(data) else "any"
        check_structures(k, data, getattr(args, side), kind, spec, f"--kernel-{side}")


def _kernel_args(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--kernel-x", default=default, help=f"kernel on X (registered name or 'precomputed'; default {default})")
    p.add_argument("--kernel-y", default=default, help=f"kernel on Y (default {default})")
    p.add_argument("--param-x", action="append", metavar="KEY=VALUE", help="parameter of the X kernel (bandwidth=median allowed)")
    p.add_argument("--param-y", action="append", metavar="KEY=VALUE", help="parameter of the Y kernel")
    p.add_argument("--max-rank", "--rank", dest="rank", type=int, nargs="+", default=None,
                   help="largest ICD rank (Nyström: landmarks), one value or rank_x rank_y; default: what --tol needs")
    p.add_argument("--tol", type=float, default=1e-3,
                   help="ICD stop: residual trace <= tol * trace, per side (default 1e-3; 0: exactly --max-rank)")
    p.add_argument("--encoder", choices=["none", "glove"], default="none", help="encoder of .txt input")


def _rank(values: list[int] | None) -> Any:
    if values is None:
        return None
    if len(values) == 1:
        return values[0]
    if len(values) == 2:
        return tuple(values)
    raise CommandError("--rank takes one value or two (rank_x rank_y)")


def add_hsic_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("hsic", help="HSIC between paired samples, with an independence test")
    p.add_argument("x", help="X: .npy, .jsonl or .txt")
    p.add_argument("y", help="Y: same number of records as X")
    _kernel_args(p, "rbf")
    p.add_argument("--estimator", choices=["biased", "unbiased", "icd", "nystrom"], default="biased")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--test", choices=["none", "gamma", "permutation"], default="none")
    p.add_argument("--n-permutations", type=int, default=1000)
    p.add_argument("--random-state", type=int, default=None)
    p.add_argument("--n-jobs", type=int, default=1)
    p.set_defaults(func=_run_hsic)
    return p


def _run_hsic(args: argparse.Namespace) -> int:
    from structkernels_hsic.hsic import HSIC

    X = _read(args.x, args.encoder, args.kernel_x)
    Y = _read(args.y, args.encoder, args.kernel_y)
    _check_kernels(args, X, Y)
    model = HSIC(
        args.kernel_x, args.kernel_y, estimator=args.estimator, max_rank=_rank(args.rank), tol=args.tol,
        kernel_x_params=_params(args.param_x), kernel_y_params=_params(args.param_y),
        n_jobs=args.n_jobs, dtype=np.dtype(args.dtype).type, random_state=args.random_state,
    )
    out: dict[str, Any] = {"estimator": args.estimator}
    if args.test == "none":
        model.fit(X, Y)
    else:
        res = model.test(X, Y, method=args.test, n_permutations=args.n_permutations, random_state=args.random_state)
        out.update({"test": args.test, "p_value": res.p_value})
    out.update({"statistic": model.statistic_, "n_samples": model.n_samples_,
                "n_kernel_evaluations": model.n_kernel_evaluations_})
    if args.estimator in ("icd", "nystrom"):
        out.update({"rank": list(model.rank_), "residual": list(model.residual_),
                    "error_bound": model.error_bound_})
    from structkernels.utils import dumps_finite

    print(dumps_finite(out, what="the HSIC result"))
    return 0


def add_phsic_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("phsic", help="pointwise HSIC: fit, score pairs, select the top K of a corpus")
    ps = p.add_subparsers(dest="phsic_command", metavar="ACTION")

    f = ps.add_parser("fit", help="learn PHSIC from training pairs and save the model")
    f.add_argument("x")
    f.add_argument("y")
    _kernel_args(f, "cosine")
    f.add_argument("--estimator", choices=["feature", "icd", "naive"], default="feature")
    f.add_argument("-o", "--output", required=True,
                   help="model file (.npz, data only: read by `phsic score`, never unpickled)")
    f.set_defaults(func=_run_fit)

    s = ps.add_parser("score", help="score pairs with a saved model")
    s.add_argument("model", help="model file written by `phsic fit` (.npz)")
    s.add_argument("x")
    s.add_argument("y")
    s.add_argument("--encoder", choices=["none", "glove"], default="none")
    s.add_argument("-o", "--output", required=True, help="scores (.npy, or .txt one per line)")
    s.set_defaults(func=_run_score)

    k = ps.add_parser("select", help="score every pair of a corpus and keep the top K")
    k.add_argument("x")
    k.add_argument("y")
    _kernel_args(k, "cosine")
    k.add_argument("--estimator", choices=["feature", "icd", "naive"], default="feature")
    k.add_argument("--top", type=int, required=True, help="K, the number of pairs to keep")
    k.add_argument("-o", "--output", required=True, help="indices of the kept pairs, best first (.txt)")
    k.add_argument("--scores", help="also write every pair's score (.npy)")
    k.set_defaults(func=_run_select)

    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])
    return p


def _phsic_from(args: argparse.Namespace):
    from structkernels_hsic.phsic import PHSIC

    return PHSIC(
        args.kernel_x, args.kernel_y, estimator=args.estimator, max_rank=_rank(args.rank), tol=args.tol,
        kernel_x_params=_params(args.param_x), kernel_y_params=_params(args.param_y),
    )


def _run_fit(args: argparse.Namespace) -> int:
    _check_outputs(args, [args.x, args.y], ("-o", "output", False))
    X = _read(args.x, args.encoder, args.kernel_x)
    Y = _read(args.y, args.encoder, args.kernel_y)
    _check_kernels(args, X, Y)
    model = _phsic_from(args).fit(X, Y)
    model.save(args.output, encoder=args.encoder)
    print(f"wrote {args.output}: PHSIC ({args.estimator}) on {model.n_samples_} pairs, "
          f"{model.n_kernel_evaluations_} kernel evaluations")
    return 0


def _write_scores(path: str, scores: np.ndarray) -> str:
    """Write the scores atomically (``.npy``, or text one per line); returns the path written."""
    from structkernels.utils import check_finite, open_output, save_npy

    check_finite(scores, "PHSIC scores", index_names=("pair",))
    if path.endswith(".npy"):
        return str(save_npy(path, scores))
    with open_output(path, stream_ok=True) as fh:  # atomic, or a FIFO as a stream
        np.savetxt(fh, scores, fmt="%.10g")
    return path


def _run_score(args: argparse.Namespace) -> int:
    from structkernels_hsic.phsic import PHSIC

    _check_outputs(args, [args.model, args.x, args.y], ("-o", "output", True))
    model = PHSIC.load(args.model)  # data only; a pickle/joblib file is refused in one line
    encoder = args.encoder if args.encoder != "none" else getattr(model, "encoder_", "none")
    X = _read(args.x, encoder, "")
    Y = _read(args.y, encoder, "")
    scores = model.score(X, Y)
    written = _write_scores(args.output, scores)
    print(f"wrote {written}: {len(scores)} scores, mean {scores.mean():.6g}")
    return 0


def _run_select(args: argparse.Namespace) -> int:
    from structkernels_hsic.applications import select_pairs

    _check_outputs(args, [args.x, args.y], ("-o", "output", True), ("--scores", "scores", False))
    X = _read(args.x, args.encoder, args.kernel_x)
    Y = _read(args.y, args.encoder, args.kernel_y)
    _check_kernels(args, X, Y)
    model = _phsic_from(args).fit(X, Y)
    scores = model.score_training() if args.estimator == "icd" else model.score(X, Y)
    keep = select_pairs(scores, args.top)
    from structkernels.utils import check_finite, open_output, save_npy

    check_finite(scores, "PHSIC scores", index_names=("pair",))
    with open_output(args.output, stream_ok=True) as fh:  # atomic, or a FIFO as a stream
        np.savetxt(fh, keep, fmt="%d")
    if args.scores:
        save_npy(args.scores, scores)
    print(f"wrote {args.output}: the top {len(keep)} of {len(scores)} pairs by PHSIC")
    return 0
