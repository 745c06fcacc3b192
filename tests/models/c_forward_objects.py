"""An object created in forward that holds tensors its methods grow (the shape of transformers'
`DynamicCache`): `History` keeps one row per step, grown by `torch.cat` in `update()`, its flag set
on the first update only. A data-dependent loop feeds it and breaks when the state settles; after the
loop, forward reads the object's tensor back and its length (a shape). Samples break early, late or
never."""
import torch
from torch import nn

W = 6
STEPS = 5


class History:
    """Rows of every step so far; `started` is configuration, `rows` run-time state."""

    def __init__(self, width):
        self.width = width
        self.rows = None
        self.started = False

    def update(self, h):
        if not self.started:
            self.rows = h.new_zeros((h.shape[0], 0, self.width))
            self.started = True
        self.rows = torch.cat([self.rows, h.unsqueeze(1)], dim=1)
        return self.rows

    def length(self):
        if not self.started:
            return 0
        return self.rows.shape[1]


class ForwardObjects(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(W, W)
        self.query = nn.Linear(W, W)

    def forward(self, x):
        history = History(W)
        h = x
        for _ in range(STEPS):
            rows = history.update(h)
            weights = torch.softmax((rows @ self.query(h).unsqueeze(-1)).squeeze(-1), dim=-1)
            h = torch.tanh(self.cell(h) + (weights.unsqueeze(-1) * rows).sum(1))
            if h.mean() > 0.1:
                break
        summary = history.rows.mean(dim=1)
        return summary * history.length(), h


def get_model():
    torch.manual_seed(0)
    return ForwardObjects().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, W, generator=gen) * 0.5 + (k % 3 - 1) * 0.2,) for k in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
