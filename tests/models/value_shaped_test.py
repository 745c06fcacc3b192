"""A shape test on a tensor whose shape depends on values: `sel = h[x[:, 0] > 0]`, then
`if sel.shape[0] > 2:`. No dim is dynamic, and every sample selects 3 rows, so every run takes one
arm; still, other input values select fewer rows. It must stay a run-time decision (it was folded)."""
import torch
from torch import nn


class Selected(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        sel = h[x[:, 0] > 0]
        if sel.shape[0] > 2:
            h = h * 2
        return h


def rows(gen, selected: int):
    """An input whose first `selected` rows have x[:, 0] > 0."""
    x = torch.randn(6, 4, generator=gen)
    x[:, 0] = x[:, 0].abs() + 0.1
    x[selected:, 0] = -x[selected:, 0]
    return x


def get_model():
    torch.manual_seed(0)
    return Selected().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(rows(gen, 3),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
