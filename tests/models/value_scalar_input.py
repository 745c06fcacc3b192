"""A decision on a Python int input: `if k > 2:`. Every sample passes k = 2, so every run takes one
arm; it reads no shape, so it must not be folded to that arm (it once was)."""
import torch
from torch import nn


class Steps(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)

    def forward(self, x, k: int):
        h = self.a(x)
        if k > 2:
            h = h + 1
        return h * k


def get_model():
    torch.manual_seed(0)
    return Steps().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 2, generator=gen), 2) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
