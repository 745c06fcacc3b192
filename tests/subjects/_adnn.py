"""Import the DyCL paper's subject models from `../shared/dycl-adnn`, unmodified and read-only."""
from __future__ import annotations

import importlib
import os
import sys

__all__ = ["ADNN", "import_adnn", "coloured_images"]

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


def coloured_images(n: int, seed: int = 0, size: int = 32) -> list[tuple]:
    """`n` seeded images, each a random flat colour plus noise: the subjects' sample inputs (the colour
    sends their gates and exits different ways)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        colour = 6 * torch.rand(1, 3, 1, 1, generator=gen) - 3
        out.append((colour + 0.5 * torch.randn(1, 3, size, size, generator=gen),))
    return out
