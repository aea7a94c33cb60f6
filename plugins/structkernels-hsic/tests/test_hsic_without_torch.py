"""Without PyTorch the plugin imports, and HSIC training says which extra to install."""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import sys


class NoTorch:  # as if PyTorch were not installed: `import torch` fails
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}")


sys.meta_path.insert(0, NoTorch())
import structkernels_hsic
from structkernels_hsic import HSIC, HSICBottleneckClassifier
clf = HSICBottleneckClassifier(epochs=1)
print(sorted(clf.get_params())[:2])
try:
    clf.fit([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], [0, 1, 0, 1])
except ImportError as exc:
    print("ImportError:", exc)
print("torch" in sys.modules)
"""


def test_plugin_imports_and_fit_names_the_extra_without_torch():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "['activation', 'batch_size']"
    assert lines[1].startswith("ImportError: HSIC training needs PyTorch")
    assert "pip install 'structkernels-hsic[torch]'" in lines[1]
    assert lines[2] == "False"
