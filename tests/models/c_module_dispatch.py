"""Modules chosen by run-time values: a ModuleList indexed by a tensor-derived int, a ModuleDict
indexed by an f-string of a tensor element (as transformers' SwitchTransformers experts do), and
a nested pick `self.flows[k][0]` (as RANet's scale flows do)."""
import torch
from torch import nn

D = 6


class Experts(nn.ModuleDict):
    def __init__(self, n):
        super().__init__()
        for idx in range(n):
            self[f"expert_{idx}"] = nn.Linear(D, D)

    def forward(self, x, which):
        return self[f"expert_{which[0]}"](x)


class Dispatcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(D, 3)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(D, D), nn.Tanh()) for _ in range(3)])
        self.experts = Experts(3)
        self.flows = nn.ModuleList([nn.ModuleList([nn.Linear(D, D)]) for _ in range(3)])

    def forward(self, x):
        k = int(self.router(x).argmax().item())
        h = self.blocks[k](x)
        which = self.router(h).argmax(dim=-1)
        h = h + self.experts(h, which)
        return self.flows[k][0](h), k


def get_model():
    torch.manual_seed(0)
    return Dispatcher().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, D, generator=gen) * 2,) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
