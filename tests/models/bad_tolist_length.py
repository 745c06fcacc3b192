"""`.tolist()` of a tensor with one item per row, read by tensor code: a region takes one input per item,
and the number of rows changes with the input."""
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        copies = (self.a(x).sum(-1) > 0).long() + 1  # each row once or twice
        sizes = copies.tolist()  # one item per row
        pieces = torch.split(x.repeat_interleave(copies, 0), sizes)
        return pieces[0] * 2


def get_model():
    torch.manual_seed(0)
    return M().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1 + i % 3, 4, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(2)[1]


DYNAMIC = {"x": {0: "tokens"}}
