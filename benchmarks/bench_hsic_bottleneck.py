"""HSIC-bottleneck training (structkernels-hsic[torch]) against back-propagation, in one run.

Sections:

accuracy
    scikit-learn's ``load_digits`` (1,797 8x8 images), ``StratifiedShuffleSplit`` (5 splits,
    a quarter held out).  On every split, one architecture, 64 -> 64 -> 32 -> 10 tanh units,
    trained three ways: each hidden layer on its own HSIC-bottleneck loss
    ``nHSIC(Z_i, X) - beta nHSIC(Z_i, Y)`` (kernel alignment, RBF with the median bandwidth;
    ``HSICBottleneckClassifier``), end to end by back-propagation through a soft-max head
    (``training="backprop"``), and not at all (``training="none"``: the random initial
    weights).  All three use the same initial weights, batches, optimiser (Adam), epochs and
    output layer (``LogisticRegression`` on the 10-unit last layer).  Beside them: the paper's
    regularised nHSIC (``tr(K~ L~)``, a fixed wide bandwidth) and a linear model on the raw
    pixels.  The last hidden layer has as many units as classes (the paper's setting): a
    random 10-unit projection keeps too little of the image for a linear read-out, so the
    control measures what training adds, where a wide random layer would be almost as good
    as the pixels themselves.
dependence
    Per epoch and layer, nHSIC(Z_i, X) and nHSIC(Z_i, Y) on 512 training images (split 0),
    for the HSIC-trained and the back-propagated network; drawn as the information plane
    and over epochs (``--plot``).
cost
    Seconds per epoch of each training at batch sizes 64-1024 on 4,096 rows (the digits
    tiled with a little noise): HSIC with exact Grams (``O(b^2)`` per layer and batch, so an
    epoch grows as ``n b``), with random Fourier features (``O(b D^2)``, an epoch constant
    in ``b``), the paper's regularised form (exact, ``O(b^3)``) and back-propagation; timed
    in ABBA order (HSIC, back-propagation, back-propagation, HSIC: each figure the mean of
    its two runs), the load average beside each.

Usage::

    python benchmarks/bench_hsic_bottleneck.py --threads 1 \\
        --out benchmarks/results/hsic_bottleneck.json      # full (a minute on an idle 2-core machine)
    python benchmarks/bench_hsic_bottleneck.py --quick     # smoke run (about a minute)

Progress goes to stderr; the JSON (with the ratios) to stdout and, with ``--out``, to that
file, beside which ``--plot`` (default: the same name ending ``_dependence.png``) and a
Markdown summary (``.md``) are written.  Every file is written to a temporary file in its
folder and renamed into place at the end: an interrupted run (Ctrl-C) leaves none.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from structkernels.utils import atomic_open

ARCH = (64, 32, 10)
PARAMS = dict(hidden=ARCH, activation="tanh", batch_size=128, learning_rate=1e-2, epochs=30,
              normalization="cka", beta=10.0, sigma="median", monitor_size=512)
#: the paper's nHSIC: regularised, with a fixed bandwidth wider than the median
REGULARIZED = dict(normalization="regularized", beta=100.0, sigma=20.0, epsilon=1e-5)
MODELS = ("hsic", "backprop", "random", "hsic_regularized", "linear_pixels")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def mean_sd(values: list[float]) -> dict:
    a = np.asarray(values, dtype=float)
    return {"mean": round(float(a.mean()), 4), "sd": round(float(a.std(ddof=1)) if len(a) > 1 else 0.0, 4),
            "values": [round(float(v), 4) for v in a]}


# ------------------------------------------------------------------ accuracy
def accuracy(args: argparse.Namespace) -> tuple[dict, dict]:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedShuffleSplit
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from structkernels_hsic import HSICBottleneckClassifier

    X, y = load_digits(return_X_y=True)
    splits = list(StratifiedShuffleSplit(args.splits, test_size=0.25, random_state=args.seed).split(X, y))
    params = dict(PARAMS, epochs=args.epochs)
    rows, histories = [], {}
    for s, (tr, te) in enumerate(splits):
        row: dict = {"split": s, "n_train": len(tr), "n_test": len(te)}
        variants = {
            "hsic": HSICBottleneckClassifier(**params, random_state=args.seed + s),
            "backprop": HSICBottleneckClassifier(**params, training="backprop", random_state=args.seed + s),
            "random": HSICBottleneckClassifier(**params, training="none", random_state=args.seed + s),
            "hsic_regularized": HSICBottleneckClassifier(**dict(params, **REGULARIZED),
                                                         random_state=args.seed + s),
            "linear_pixels": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        }
        for name, model in variants.items():
            t0 = time.perf_counter()
            model.fit(X[tr], y[tr])
            seconds = time.perf_counter() - t0
            acc = float(model.score(X[te], y[te]))
            row[name] = {"accuracy": round(acc, 4), "fit_seconds": round(seconds, 2), "loadavg": load()}
            if hasattr(model, "history_") and name != "random":
                row[name]["train_seconds_per_epoch"] = round(float(np.mean(model.history_["seconds"])), 3)
                if s == 0:
                    histories[name] = {k: np.round(model.history_[k], 4).tolist()
                                       for k in ("nhsic_x", "nhsic_y", "hsic_x", "hsic_y")}
            log(f"[accuracy split {s + 1}/{len(splits)}] {name:16s} {acc:.4f}  ({seconds:.1f} s, "
                f"load {row[name]['loadavg'][0]})")
        rows.append(row)
    summary = {m: mean_sd([r[m]["accuracy"] for r in rows]) for m in MODELS}
    return {"dataset": "sklearn load_digits", "n_samples": len(X), "splits": rows, "summary": summary}, histories


# ---------------------------------------------------------------------- cost
def cost(args: argparse.Namespace) -> dict:
    from sklearn.datasets import load_digits
    from structkernels_hsic import HSICBottleneckClassifier

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(args.seed)
    reps = -(-args.cost_rows // len(X))
    Xc = np.tile(X, (reps, 1))[: args.cost_rows] + rng.normal(scale=0.25, size=(args.cost_rows, X.shape[1]))
    yc = np.tile(y, reps)[: args.cost_rows]
    base = dict(PARAMS, epochs=args.cost_epochs, monitor_size=64)
    kinds = {
        "hsic_exact": dict(base),
        "hsic_rff": dict(base, n_features=args.rff_features),
        "hsic_regularized": dict(base, **REGULARIZED),
        "backprop": dict(base, training="backprop"),
    }

    def per_epoch(kind: str, b: int) -> tuple[float, list[float]]:
        clf = HSICBottleneckClassifier(**dict(kinds[kind], batch_size=b), random_state=args.seed)
        clf.fit(Xc, yc)
        return float(np.mean(clf.history_["seconds"])), load()

    rows = []
    for b in args.batch_sizes:
        row: dict = {"batch_size": b, "batches_per_epoch": len(Xc) // b}
        for kind in ("hsic_exact", "hsic_rff", "hsic_regularized"):
            if kind == "hsic_regularized" and b > args.max_regularized_batch:
                row[kind] = None
                continue
            a1, l1 = per_epoch(kind, b)          # A
            b1, m1 = per_epoch("backprop", b)    # B
            b2, m2 = per_epoch("backprop", b)    # B
            a2, l2 = per_epoch(kind, b)          # A
            row[kind] = {"seconds_per_epoch": round((a1 + a2) / 2, 4), "loadavg": [l1, l2]}
            row.setdefault("backprop", {"runs": []})["runs"] += [(round(b1, 4), m1), (round(b2, 4), m2)]
            row[kind]["ratio_to_backprop"] = round((a1 + a2) / (b1 + b2), 2)
            log(f"[cost b={b}] {kind:16s} {(a1 + a2) / 2:.3f} s/epoch, x{(a1 + a2) / (b1 + b2):.1f} "
                f"back-propagation (load {l2[0]})")
        bp = [r[0] for r in row["backprop"]["runs"]]
        row["backprop"]["seconds_per_epoch"] = round(float(np.mean(bp)), 4)
        rows.append(row)
    return {
        "n_rows": len(Xc), "n_features_rff": args.rff_features, "epochs_timed": args.cost_epochs,
        "note": "training seconds per epoch (history_['seconds']: the monitoring excluded); ABBA "
                "against back-propagation at each batch size",
        "rows": rows,
    }


# ---------------------------------------------------------------------- plot
def plot(histories: dict) -> bytes:
    from structkernels.experiments.plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(ARCH)))
    for ax, name in zip(axes[:2], ("hsic", "backprop"), strict=True):
        hx, hy = np.asarray(histories[name]["nhsic_x"]), np.asarray(histories[name]["nhsic_y"])
        for i in range(hx.shape[1]):
            ax.plot(hx[:, i], hy[:, i], "-", color=colours[i], lw=1.2, label=f"layer {i + 1} ({ARCH[i]} units)")
            ax.scatter(hx[:, i], hy[:, i], c=np.arange(len(hx)), cmap="Greys", s=12, zorder=3,
                       edgecolors="none")
            ax.plot(hx[0, i], hy[0, i], "o", mfc="white", mec=colours[i], ms=8, zorder=4)
            ax.plot(hx[-1, i], hy[-1, i], "*", color=colours[i], ms=12, zorder=4)
        ax.set_xlabel("nHSIC(Z_i, X)")
        ax.set_ylabel("nHSIC(Z_i, Y)")
        title = "HSIC-bottleneck training" if name == "hsic" else "back-propagation"
        ax.set_title(f"Information plane, {title}\n(circle: epoch 0, star: last epoch)", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.3)
    ax = axes[2]
    hx, hy = np.asarray(histories["hsic"]["nhsic_x"]), np.asarray(histories["hsic"]["nhsic_y"])
    for i in range(hx.shape[1]):
        ax.plot(hy[:, i], "-", color=colours[i], label=f"layer {i + 1}: nHSIC(Z, Y)")
        ax.plot(hx[:, i], "--", color=colours[i], label=f"layer {i + 1}: nHSIC(Z, X)")
    ax.set_xlabel("epoch")
    ax.set_title("HSIC-bottleneck training over epochs\n(kernel alignment, digits, split 0)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


# ------------------------------------------------------------------ summary
def ratios(acc: dict, cost_doc: dict | None) -> dict:
    s = acc["summary"]
    out = {
        "hsic_over_backprop_accuracy": round(s["hsic"]["mean"] / s["backprop"]["mean"], 4),
        "hsic_minus_random_points": round(100 * (s["hsic"]["mean"] - s["random"]["mean"]), 2),
        "hsic_minus_linear_pixels_points": round(100 * (s["hsic"]["mean"] - s["linear_pixels"]["mean"]), 2),
        "hsic_regularized_over_backprop_accuracy": round(
            s["hsic_regularized"]["mean"] / s["backprop"]["mean"], 4),
    }
    if cost_doc:
        out["cost_ratio_to_backprop_by_batch"] = {
            str(r["batch_size"]): {k: (r[k] or {}).get("ratio_to_backprop")
                                   for k in ("hsic_exact", "hsic_rff", "hsic_regularized")}
            for r in cost_doc["rows"]}
    return out


def checks(acc: dict, histories: dict, r: dict) -> dict:
    hx, hy = np.asarray(histories["hsic"]["nhsic_x"]), np.asarray(histories["hsic"]["nhsic_y"])
    return {
        "hsic_at_least_0.98_backprop": r["hsic_over_backprop_accuracy"] >= 0.98,
        "hsic_at_least_3_points_above_random": r["hsic_minus_random_points"] >= 3.0,
        "y_dependence_rose_in_every_layer": bool((hy[-1] > hy[0]).all()),
        "x_dependence_fell_in_layers": [int(i + 1) for i in np.flatnonzero(hx[-1] < hx[0])],
    }


def markdown(doc: dict) -> str:
    s = doc["accuracy"]["summary"]
    lines = [
        "# HSIC-bottleneck training on scikit-learn's digits",
        "",
        f"Written by `benchmarks/bench_hsic_bottleneck.py {' '.join(doc['argv'])}` "
        f"({doc['machine']['torch_threads']} torch thread(s), load average "
        f"{doc['machine']['loadavg_at_start'][0]} at the start, {doc['machine']['loadavg_at_end'][0]} at the end).",
        "",
        f"Architecture 64 -> {' -> '.join(map(str, ARCH))} (tanh), Adam lr {PARAMS['learning_rate']}, "
        f"batch {PARAMS['batch_size']}, {doc['settings']['epochs']} epochs; output layer "
        "LogisticRegression on the last (10-unit) layer for every network.",
        "",
        f"| model | test accuracy, mean ± sd over {len(doc['accuracy']['splits'])} splits |",
        "|---|---|",
    ]
    names = {"hsic": "HSIC bottleneck (kernel alignment, median σ)",
             "hsic_regularized": "HSIC bottleneck (the paper's regularised nHSIC, σ = 20)",
             "backprop": "back-propagation, same network", "random": "same network, random weights",
             "linear_pixels": "logistic regression on the pixels"}
    for m in MODELS:
        lines.append(f"| {names[m]} | {s[m]['mean']:.4f} ± {s[m]['sd']:.4f} |")
    r = doc["ratios"]
    lines += ["", f"HSIC / back-propagation: {r['hsic_over_backprop_accuracy']}; HSIC − random weights: "
              f"{r['hsic_minus_random_points']} points; checks: {json.dumps(doc['checks'])}.", ""]
    if doc.get("cost"):
        lines += [f"Seconds per training epoch on {doc['cost']['n_rows']} rows (ABBA against back-propagation; "
                  "ratio to back-propagation in brackets; load average at the end of each figure):", "",
                  "| batch | HSIC exact | HSIC RFF (D = "
                  f"{doc['cost']['n_features_rff']}) | HSIC regularised (exact) | back-propagation |",
                  "|---|---|---|---|---|"]
        for row in doc["cost"]["rows"]:
            cells = []
            for k in ("hsic_exact", "hsic_rff", "hsic_regularized"):
                c = row[k]
                cells.append("not run" if c is None else
                             f"{c['seconds_per_epoch']:.3f} (×{c['ratio_to_backprop']}, load {c['loadavg'][1][0]})")
            lines.append(f"| {row['batch_size']} | " + " | ".join(cells)
                         + f" | {row['backprop']['seconds_per_epoch']:.3f} |")
    if doc.get("plot"):
        lines += ["", f"![information plane]({Path(doc['plot']).name})"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 splits, 8 epochs, 2 batch sizes")
    p.add_argument("--out", help="write the JSON here (and the .md and plot beside it)")
    p.add_argument("--plot", help="the dependence figure (PNG); default: beside --out")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="torch.set_num_threads (default: the CPUs this process may use)")
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--epochs", type=int, default=PARAMS["epochs"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    p.add_argument("--cost-rows", type=int, default=4096)
    p.add_argument("--cost-epochs", type=int, default=2)
    p.add_argument("--rff-features", type=int, default=128)
    p.add_argument("--max-regularized-batch", type=int, default=1024,
                   help="time the O(b^3) regularised form up to this batch size")
    p.add_argument("--no-cost", action="store_true", help="skip the cost section")
    args = p.parse_args(argv)
    if args.quick:
        args.splits, args.epochs, args.batch_sizes, args.cost_rows = 2, 8, [64, 256], 1024
        args.max_regularized_batch = 256
    if args.threads < 1:
        p.error("--threads must be at least 1")
    out = Path(args.out) if args.out else None
    plot_path = Path(args.plot) if args.plot else (
        out.with_name(out.stem + "_dependence.png") if out else None)
    for target in (out, plot_path):
        if target is not None and not target.parent.is_dir():
            p.error(f"folder {str(target.parent)!r} does not exist")

    import sklearn
    import torch

    torch.set_num_threads(args.threads)
    doc: dict[str, Any] = {
        "benchmark": "hsic_bottleneck",
        "argv": sys.argv[1:] if argv is None else argv,
        "machine": {"python": platform.python_version(), "torch": torch.__version__,
                    "sklearn": sklearn.__version__, "cpus_available": len(os.sched_getaffinity(0)),
                    "torch_threads": args.threads, "device": "cpu", "loadavg_at_start": load()},
        "settings": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in PARAMS.items()},
                     "epochs": args.epochs, "regularized": REGULARIZED, "splits": args.splits,
                     "seed": args.seed},
    }
    try:
        t0 = time.perf_counter()
        doc["accuracy"], histories = accuracy(args)
        doc["dependence"] = {"split": 0, "monitored_rows": PARAMS["monitor_size"], **histories}
        doc["cost"] = None if args.no_cost else cost(args)
        doc["ratios"] = ratios(doc["accuracy"], doc["cost"])
        doc["checks"] = checks(doc["accuracy"], histories, doc["ratios"])
        png = plot(histories) if plot_path else None
        doc["plot"] = str(plot_path) if plot_path else None
        doc["machine"]["loadavg_at_end"] = load()
        doc["seconds"] = round(time.perf_counter() - t0, 1)
        text = json.dumps(doc, indent=1)
        # everything computed: now the files, each complete or absent
        if png is not None:
            with atomic_open(plot_path, "wb") as fh:
                fh.write(png)
        if out is not None:
            with atomic_open(out.with_suffix(".md")) as fh:
                fh.write(markdown(doc))
            with atomic_open(out) as fh:
                fh.write(text + "\n")
    except KeyboardInterrupt:
        log("interrupted: no results file written")
        return 130
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
