"""Decisions that read tensor values without `.item()`: `if t:` on a tensor, and `len()` of a list
appended to under a run-time `if`. The samples take one arm of each; forcing one gate at a time
never makes the list longer than 1. Were they classified shape-determined, as they once were,
they would be folded to the arm the samples took, and other inputs would get wrong answers."""
import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(2, 2)
        self.gates = nn.ModuleList([nn.Linear(2, 1) for _ in range(3)])
        with torch.no_grad():
            for i, gate in enumerate(self.gates):  # gate i opens where x's mean is over i + 1
                gate.weight.fill_(0.5)
                gate.bias.fill_(-(i + 1.0))

    def forward(self, x):
        y = self.head(x)
        t = x.sum()
        if t:
            y = y * 2
        feats = []
        for gate in self.gates:
            if gate(x).sum().item() > 0:
                feats.append(x)
        if len(feats) > 1:
            y = y * 3
        return y


def get_model():
    torch.manual_seed(0)
    return Gated().eval()


def sample_inputs(n, seed=0):
    # Every sample: t != 0 and all gates shut.
    return [(torch.full((1, 2), 0.25 + 0.25 * (i % 2)),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]

