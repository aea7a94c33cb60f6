"""The costs a user pays on every run (issue 25): memory of a normalised Gram in a file, the
dask path's data sent once and its blocks made durable without a flush per block.

Each test pins a mechanism, not a timing: the file output is written and normalised one
block at a time through maps of that block only (and its peak memory above the baseline is
a fraction of the matrix, in a subprocess); ``dask_gram`` sends the data, the kernel and the
scales to the workers once and its tasks receive them by reference; a block is marked done
only after the file holding it was flushed to disk.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from structkernels import Path, gram
from structkernels.engine import gram as engine

NODES = [f"n{i}" for i in range(30)]


def random_paths(n: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    return [Path([(None, rng.choice(NODES))] + [("ARG0", rng.choice(NODES)) for _ in range(3)])
            for _ in range(n)]


# ------------------------------------------------------------ a normalised Gram in a file
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_file_output_is_normalised_block_by_block_through_maps_of_one_block(
        tmp_path, monkeypatch, n_jobs):
    X = random_paths(230, 1)
    expected = gram("path", X, normalize=True, block_size=32)
    regions: list[tuple[int, int, int, int]] = []
    region = engine._FileMatrix.region

    def recording(self, r0, r1, c0, c1):
        regions.append((r0, r1, c0, c1))
        return region(self, r0, r1, c0, c1)

    def forbidden(*args, **kwargs):
        raise AssertionError("the file output must not be normalised after the fact")

    monkeypatch.setattr(engine._FileMatrix, "region", recording)
    monkeypatch.setattr(engine, "normalize_inplace", forbidden)
    monkeypatch.setattr(engine, "_write_block", forbidden)  # the whole-matrix writer
    K = gram("path", X, out=tmp_path / "K.npy", normalize=True, block_size=32, n_jobs=n_jobs,
             backend="threading" if n_jobs > 1 else None)
    assert np.array_equal(np.asarray(K), expected)  # bit for bit
    # every map holds one block (or its mirror), never more
    assert max((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in regions) <= 32 * 32
    nb = len(engine.block_ranges(230, 32))
    assert len(regions) == nb * nb  # each block once, each off-diagonal mirror once
    # the diagonal blocks were written before any other (their diagonal gives the scales)
    first = regions[:nb]
    assert all(r0 == c0 for r0, _, c0, _ in first)


def test_file_output_of_x_against_y_is_normalised_as_written(tmp_path, monkeypatch):
    X, Y = random_paths(120, 2), random_paths(70, 3)
    expected = gram("path", X, Y, normalize=True, block_size=32)
    monkeypatch.setattr(engine, "normalize_inplace", lambda *a, **k: pytest.fail("after the fact"))
    K, info = gram("path", X, Y, out=tmp_path / "K.npy", normalize=True, block_size=32,
                   return_info=True)
    assert np.array_equal(np.asarray(K), expected)
    assert info.n_evaluations == 120 * 70 + 120 + 70


def test_normalize_inplace_of_a_memmap_maps_one_row_block_at_a_time(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    A = rng.random((200, 30))
    A = A @ A.T
    d = np.diag(A).copy()
    M = np.lib.format.open_memmap(tmp_path / "M.npy", mode="w+", shape=A.shape)
    M[:] = A
    M.flush()
    expected = engine.normalize_inplace(A.copy(), d, d)
    sizes: list[int] = []
    region = engine._FileMatrix.region

    def recording(self, r0, r1, c0, c1):
        sizes.append((r1 - r0) * (c1 - c0))
        return region(self, r0, r1, c0, c1)

    monkeypatch.setattr(engine._FileMatrix, "region", recording)
    engine.normalize_inplace(M, d, d, row_bytes=8 * 200 * 16)
    assert np.array_equal(np.asarray(M), expected)
    assert sizes and max(sizes) <= 200 * 16
    # a slice of a map, or a copy-on-write map, is normalised through its own array
    sizes.clear()
    engine.normalize_inplace(np.load(tmp_path / "M.npy", mmap_mode="c"), d, d)
    assert sizes == []


RSS_SCRIPT = textwrap.dedent(
    """
    import random, sys
    import numpy as np
    from structkernels import Path, gram
    rng = random.Random(0)
    nodes = [f"n{i}" for i in range(30)]
    n = int(sys.argv[2])
    X = [Path([(None, rng.choice(nodes))] + [("ARG0", rng.choice(nodes)) for _ in range(3)])
         for _ in range(n)]
    gram("path", X[:300], out=sys.argv[1], normalize=True, n_jobs=2, block_size=128,
         backend="threading")  # compiled code, threads, the file path
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the peak RSS restarts from here
    def status(field):
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field))
    base = status("VmRSS")
    K = gram("path", X, out=sys.argv[1], normalize=True, n_jobs=2, block_size=128,
             backend="threading")
    # the high-water mark since the reset (ru_maxrss would also hold the peak recorded when
    # a thread of the warm-up exited, before the reset)
    peak = status("VmHWM")
    assert abs(float(K[5, 5]) - 1.0) < 1e-12 and K[3, 7] == K[7, 3]
    print((peak - base) * 1024 / (8.0 * n * n))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/clear_refs")
def test_file_output_peak_memory_is_a_fraction_of_the_matrix(tmp_path):
    # the matrix is 3,000^2 doubles (72 MB); kept mapped while written and normalised, the
    # peak above the baseline was 1.1 matrices
    r = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(tmp_path / "K.npy"), "3000"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "clear_refs" in r.stderr:
        pytest.skip("the peak RSS counter cannot be reset here")
    assert r.returncode == 0, r.stderr[-2000:]
    ratio = float(r.stdout.split()[-1])
    assert ratio < 0.25, f"peak RSS above the baseline = {ratio:.3f} matrices"
