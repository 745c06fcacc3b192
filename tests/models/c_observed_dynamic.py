"""Sequence lengths that vary across the samples although DYNAMIC does not declare them.

`x` is [1, 4, L] with L 16 or 32 in the samples: the conversion makes dim 2
dynamic itself (symbol `x_dim2`). A shape-determined branch on L and a
value-determined gate both go each way on the samples.
"""
import torch
from torch import nn


class ObservedLength(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv1d(channels, 8, 3, padding=1)
        self.gate = nn.Linear(8, 1)
        self.light = nn.Linear(8, 3)
        self.heavy = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x):
        h = torch.relu(self.conv(x))
        if x.shape[-1] > 24:  # long sequences: pool in pairs first
            h = nn.functional.avg_pool1d(h, 2)
        v = h.mean(-1)
        if (self.gate(v) + 4 * x.mean()).item() > 0:
            return self.heavy(v)
        return self.light(v)


def get_model():
    torch.manual_seed(0)
    return ObservedLength().eval()


def sample_inputs(n, seed=0):
    """Lengths 16 and 32 in turn; inputs shifted by +1 or -1 (every other pair) set the gate's sign."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for k in range(n):
        length = 16 if k % 2 == 0 else 32
        shift = 1.0 if (k // 2) % 2 == 0 else -1.0
        inputs.append((0.3 * torch.randn(1, 4, length, generator=gen) + shift,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
