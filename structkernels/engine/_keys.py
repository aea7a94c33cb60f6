"""Keys that change whenever a kernel's values may: for caches and resumable runs."""

from __future__ import annotations

import hashlib
from typing import Any

import joblib

from structkernels import __version__
from structkernels.engine._blocks import BlockKernel
from structkernels.engine.checks import component_kernels

__all__ = ["content_hash", "kernel_code_version", "kernel_key", "run_key"]

#: structures hashed together by :func:`run_key`
HASH_CHUNK = 1 << 14


def kernel_code_version(kernel: BlockKernel) -> tuple:
    """The package version and each kernel class in ``kernel`` with its ``code_version``:
    part of every cache and resume key, so a changed implementation never serves old values."""
    return (
        ("structkernels", __version__),
        *(
            (f"{type(k).__module__}.{type(k).__qualname__}", repr(getattr(k, "code_version", None)))
            for k in component_kernels(kernel)
        ),
    )


def content_hash(obj: Any) -> str:
    """:func:`joblib.hash` of ``obj``; objects plain pickle cannot take (a lambda among a
    kernel's parameters) are hashed through cloudpickle, as dask sends them."""
    try:
        return joblib.hash(obj)
    except Exception:
        import cloudpickle  # the serialiser of joblib's workers and of dask

        return "cloudpickle-" + hashlib.sha256(cloudpickle.dumps(obj)).hexdigest()


def kernel_key(kernel: BlockKernel) -> dict:
    """A key that changes whenever ``kernel``'s values may: its class, a hash of *all* its
    parameters (a ``repr`` would be truncated and hide a changed σ), its code versions."""
    return {
        "kernel": f"{type(kernel).__module__}.{type(kernel).__qualname__}",
        "params": content_hash(kernel.get_params(deep=True)),
        "code_version": [list(v) for v in kernel_code_version(kernel)],
    }


def run_key(kernel: BlockKernel, X: Any, **fields: Any) -> dict:
    """The key of a resumable run over ``X``: ``fields``, :func:`kernel_key` and a content
    hash of ``X`` (changing with its order), pickled :data:`HASH_CHUNK` structures at a time."""
    hashes = [content_hash(X[r0:r0 + HASH_CHUNK]) for r0 in range(0, len(X), HASH_CHUNK)]
    return {**fields, **kernel_key(kernel), "data": joblib.hash([len(X), hashes])}
