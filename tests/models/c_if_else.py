"""Plain data-dependent if/else: the sign of the input mean picks the branch.

Positive-mean inputs go through a residual MLP, the others through a
single tanh layer; both feed the same classifier head.
"""

import torch
import torch.nn as nn

DIM = 32


class SignRoutedMLP(nn.Module):
    def __init__(self, dim=DIM, hidden=64, num_classes=10):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.pos_branch = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.neg_branch = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.encoder(x)
        if x.mean() > 0:
            h = h + self.pos_branch(h)
        else:
            h = self.neg_branch(h)
        return self.head(torch.relu(h))


def get_model():
    torch.manual_seed(0)
    return SignRoutedMLP().eval()


def sample_inputs(n, seed=0):
    """[1, 32] vectors with mean +-0.8 (alternating) plus N(0, 0.3) noise."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        offset = 0.8 if i % 2 == 0 else -0.8
        inputs.append((offset + 0.3 * torch.randn(1, DIM, generator=gen),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
