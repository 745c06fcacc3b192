"""Shared set-up for the library corpus: no hub, no torchvision, seeded tiny configs."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from standins import ensure_importable  # noqa: E402

ensure_importable("torchvision")

__all__ = ["randomize"]


def randomize(module, seed: int, scale: float = 0.2):
    """Seeded normal weights for every parameter (library inits leave some uninitialised)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif "norm" in name or "ln" in name.split(".")[-2:][0]:
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return module.eval()
