"""Three levels of nested data-dependent ifs, with shared code after each level.

Decisions look at simple input statistics (energy, left/right balance,
sign of the first feature) as a hand-written cascade would.  Five paths.
"""

import torch
import torch.nn as nn

DIM = 32


def mlp(dim):
    return nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))


class Cascade(nn.Module):
    def __init__(self, dim=DIM, num_classes=6, energy_threshold=0.5):
        super().__init__()
        self.energy_threshold = energy_threshold
        self.stem = nn.Linear(dim, dim)
        self.a = mlp(dim)
        self.b = mlp(dim)
        self.c1 = nn.Linear(dim, dim)
        self.c2 = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.d = nn.Linear(dim, dim)
        self.e = nn.Sequential(nn.Linear(dim, dim), nn.Sigmoid())
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.stem(x)
        half = x.shape[1] // 2
        if x.abs().mean() > self.energy_threshold:
            h = self.a(h)
            if x[:, :half].mean() > x[:, half:].mean():
                h = self.b(h)
                if x[:, 0].sum() > 0:
                    h = self.c1(h)
                else:
                    h = self.c2(h)
                h = h * 0.5 + x
            else:
                h = self.d(h)
            h = torch.relu(h)
        else:
            h = self.e(h)
        h = self.norm(h)
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    return Cascade().eval()


# (energy high?, left half larger?, first feature positive?) per path.
PATHS = [
    (True, True, True),
    (True, True, False),
    (True, False, True),
    (False, True, True),
    (True, True, True),
    (True, True, False),
    (True, False, False),
    (False, False, False),
    (True, True, True),
    (True, True, False),
]


def sample_inputs(n, seed=0):
    """Positive vectors whose halves / first feature are set per path, far from every threshold."""
    gen = torch.Generator().manual_seed(seed)
    half = DIM // 2
    inputs = []
    for i in range(n):
        high, left, first = PATHS[i % len(PATHS)]
        mag = 1.0 if high else 0.2
        left_level, right_level = (1.5, 0.5) if left else (0.5, 1.5)
        x = torch.cat([torch.full((1, half), left_level), torch.full((1, DIM - half), right_level)], dim=1)
        x = mag * x * (1.0 + 0.1 * torch.rand(1, DIM, generator=gen))
        if not first:
            x[:, 0] = -x[:, 0]
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
