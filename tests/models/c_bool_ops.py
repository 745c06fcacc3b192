"""Conditions mixing static flags and tensor predicates with and/or/not.

An outlier-aware encoder: a boost branch runs when enabled and the input
is net-positive or has a spike; a robust re-projection runs when not all
features are in range; a sharpening branch runs for clean positive inputs.
"""

import torch
import torch.nn as nn

DIM = 16


class OutlierAware(nn.Module):
    def __init__(self, dim=DIM, num_classes=4, enabled=True, use_sharpen=True):
        super().__init__()
        self.enabled = enabled
        self.use_sharpen = use_sharpen
        self.proj = nn.Linear(dim, dim)
        self.boost = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.robust = nn.Linear(dim, dim)
        self.sharpen = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.proj(x)
        if self.enabled and (x.sum() > 0 or torch.any(x > 2)):
            h = h + self.boost(h)
        if not torch.all(x.abs() < 1.5):
            h = self.robust(torch.clamp(h, -1.0, 1.0))
        if self.use_sharpen and x.mean() > 0 and not torch.any(x < -2):
            h = self.sharpen(h)
        if not self.enabled or self.training:
            h = h * 0.0
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    return OutlierAware().eval()


# (base sign, spike value or None) -- spikes sit at feature 3.
PATTERNS = [
    (+1, None),   # positive sum, no spike: boost, sharpen
    (-1, 3.0),    # negative sum but spike > 2: boost, robust
    (-1, None),   # negative, clean: nothing
    (+1, -3.0),   # positive sum with negative spike: boost, robust, no sharpen
]


def sample_inputs(n, seed=0):
    """[1, 16] vectors with entries in +-[0.2, 1.0], optionally one spike of +-3."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        sign, spike = PATTERNS[i % len(PATTERNS)]
        x = sign * (0.6 + 0.4 * (2 * torch.rand(1, DIM, generator=gen) - 1))
        if spike is not None:
            x[0, 3] = spike
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
