"""Two-input (siamese) model that branches on how its inputs compare.

If the two vectors point the same way their features are fused by a
shared MLP, otherwise by a difference encoder; a second decision compares
the norms and decides which input is treated as the anchor.
"""

import torch
import torch.nn as nn

DIM = 32


class PairFusion(nn.Module):
    def __init__(self, dim=DIM, num_classes=3):
        super().__init__()
        self.enc = nn.Linear(dim, dim)
        self.same = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU())
        self.diff = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.anchor_x = nn.Linear(dim, dim)
        self.anchor_y = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x, y):
        hx = self.enc(x)
        hy = self.enc(y)
        if torch.cosine_similarity(x, y, dim=1).mean() > 0:
            h = self.same(torch.cat([hx, hy], dim=1))
        else:
            h = self.diff(hx - hy)
        if x.norm() > y.norm():
            h = h + self.anchor_x(hx)
        else:
            h = h + self.anchor_y(hy)
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    return PairFusion().eval()


def sample_inputs(n, seed=0):
    """y = +-a * x + small noise, with the sign and a in {0.5, 2} cycling."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(1, DIM, generator=gen)
        sign = 1.0 if i % 2 == 0 else -1.0
        a = 0.5 if (i // 2) % 2 == 0 else 2.0
        y = sign * a * x + 0.1 * torch.randn(1, DIM, generator=gen)
        inputs.append((x, y))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
