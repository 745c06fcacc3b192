"""Loops over tensors: `for idx in mask.nonzero():` and `for row in x:` become host index loops.

Each nonzero position of a gate mask picks a row to refine, accumulated in place with
`index_add_`; a data-dependent `continue` skips rows whose score is negative. A second
loop walks the rows of a small tensor directly.
"""
import torch
from torch import nn

D = 8


class RowRefiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(D, 1)
        self.refine = nn.Linear(D, D)
        self.score = nn.Linear(D, 1)

    def forward(self, x):
        mask = self.gate(x).squeeze(-1) > 0
        acc = torch.zeros_like(x)
        for idx in mask.nonzero():
            row = x[idx[0]]
            if self.score(row).item() < 0:
                continue
            acc.index_add_(0, idx, torch.tanh(self.refine(row)).unsqueeze(0))
        total = torch.zeros(D)
        for row in acc:
            total = total + row * row.sum()
        return acc, total


def get_model():
    torch.manual_seed(0)
    return RowRefiner().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1 + i % 4, D, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(4)[3]


DYNAMIC = {"x": {0: "rows"}}
