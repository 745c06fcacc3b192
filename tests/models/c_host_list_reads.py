"""A host list of ints read by tensor code and by tests: `h.sum() > len(picks)` (the host counts,
the region gets an int) and `1 in picks` (decided in the host). The list is the one output that is
not a tensor."""
import torch
from torch import nn


class Picker(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 2)
        self.gates = nn.ModuleList([nn.Linear(2, 1) for _ in range(3)])

    def forward(self, x):
        picks = []
        for i, gate in enumerate(self.gates):
            if gate(x).sum().item() > 0:
                picks.append(i)
        h = self.head(x)
        if h.sum() > len(picks):
            h = h * 2
        if 1 in picks:
            h = h + 1
        return h, picks


def get_model():
    torch.manual_seed(0)
    return Picker().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(3 * torch.randn(1, 2, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
