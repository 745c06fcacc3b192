"""Decisions over a batch whose size is declared dynamic: `.any()` / `.all()` of per-sample
scores pick the branch; `x.size(0)` feeds a view. One package serves every batch size."""
import torch
from torch import nn

DYNAMIC = {"x": {0: "batch"}}


class BatchGated(nn.Module):
    def __init__(self, d=6):
        super().__init__()
        self.score = nn.Linear(d, 1)
        self.light = nn.Linear(d, 4)
        self.heavy = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        s = self.score(x).squeeze(1)
        if (s > 0).any():
            y = self.heavy(x)
            if (s > 0).all():
                y = y * 2
        else:
            y = self.light(x)
        return y.view(x.size(0), -1).sum(1)


def get_model():
    torch.manual_seed(0)
    return BatchGated().eval()


def sample_inputs(n, seed=0):
    """Batches of 3 whose rows score clearly positive or negative, in every mix."""
    gen = torch.Generator().manual_seed(seed)
    model = get_model()
    direction = model.score.weight.detach()[0] / model.score.weight.detach().norm()
    inputs = []
    for k in range(n):
        signs = torch.tensor([1.0 if (k >> b) & 1 else -1.0 for b in range(3)])
        x = 0.1 * torch.randn(3, 6, generator=gen) + 3.0 * signs[:, None] * direction
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(2)[1]
