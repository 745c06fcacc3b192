"""Import the DyCL paper's subject models from `../shared/dycl-adnn`, unmodified and read-only."""
from __future__ import annotations

import importlib
import os
import sys

__all__ = ["ADNN", "import_adnn"]

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADNN = os.path.join(os.path.dirname(os.path.dirname(_TESTS)), "shared", "dycl-adnn")


def import_adnn(module: str):
    """`import_adnn("adNN.skipnet.cifar.models")`: the module from the shared checkout."""
    if not os.path.isdir(os.path.join(ADNN, "adNN")):
        raise ImportError(f"the DyCL subjects are not at {ADNN} (expected ../shared/dycl-adnn beside the repository)")
    for folder in (ADNN, _TESTS):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    from standins import ensure_importable

    ensure_importable("torchvision", "h5py")  # imported at module level for data loading only
    return importlib.import_module(module)
