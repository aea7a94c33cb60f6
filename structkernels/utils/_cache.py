"""The user's cache folder of structkernels (parses, compiled kernels, binary datasets)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir(*parts: str) -> Path:
    """The cache folder of structkernels, or a folder inside it.

    ``$STRUCTKERNELS_CACHE`` when set, else ``$XDG_CACHE_HOME/structkernels``, else
    ``~/.cache/structkernels``.  Nothing is created here: writers create what they use.

    Parameters
    ----------
    *parts : str
        Sub-folders (``user_cache_dir("numba")``).

    Examples
    --------
    >>> from structkernels.utils import user_cache_dir
    >>> user_cache_dir("numba").name
    'numba'
    """
    own = os.environ.get("STRUCTKERNELS_CACHE")
    if own:
        base = Path(own)
    else:
        root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(root) / "structkernels"
    return base.joinpath(*parts)
