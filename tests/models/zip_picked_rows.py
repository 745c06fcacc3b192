"""`zip` of a ModuleList and a list whose length depends on the input's values: the rows whose sum is
positive, one per expert. Every sample has at least as many such rows as experts, so the loop is
unrolled for the experts; the package refuses an input with fewer, where Python would end the loop early."""
import torch
import torch.nn as nn

EXPERTS = 3


class PickedRows(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList(nn.Linear(4, 4) for _ in range(EXPERTS))

    def forward(self, x):
        picks = (x.sum(-1) > 0).nonzero().squeeze(1).tolist()
        y = torch.zeros_like(x[0])
        for i, expert in zip(picks, self.experts):
            y = y + expert(x[i])
        return y


def get_model():
    torch.manual_seed(0)
    return PickedRows().eval()


def sample_inputs(n, seed=0):
    """6 rows, 3 to 6 of them with a positive sum."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(6, 4, generator=gen).abs()
        x[: i % 4] *= -1
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(2)[1]
