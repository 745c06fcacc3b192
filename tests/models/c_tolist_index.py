"""Tensors indexed by lists of Python values: `.tolist()`'s, host list arithmetic, a display with a shape.

torch turns a list of Python ints into an index tensor (`x[[0, 2]]` selects rows 0 and 2), a list of
bools into a mask; a region holds the items as 0-d tensors, for which torch reads the list as a tuple
(`x[t0, t2]`). The lists here have the same length on every input (the top two rows, one flag per
column, none at all), their values change with the input, and a decision on the picked rows takes
both arms.
"""

import torch
import torch.nn as nn

DIM = 6


class ListIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(DIM, DIM)

    def forward(self, x):
        top = x[:, 0].topk(2).indices.tolist()  # two row numbers
        h = self.mix(x)
        rows = h[top]  # rows top[0] and top[1], not the element h[top[0], top[1]]
        cols = h[:, top + [0]]  # list arithmetic, inside a tuple index
        ends = h[[0, h.shape[0] - 1]]  # a display holding a shape
        flags = (h[0] > 0).tolist()  # one bool per column: a mask
        masked = h[1][flags].sum()
        none = (h[:, 0] > 1e9).nonzero().squeeze(1).tolist()  # always empty
        out = h.clone()
        out[list(top)] = 0.0
        if rows[0, 1] > rows[1, 1]:
            out = out + rows.sum(0)
        else:
            out = out - cols.sum(1, keepdim=True)
        return out + ends.mean(0) + masked + h[none].sum(0)


def get_model():
    torch.manual_seed(0)
    return ListIndex().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(3 + i % 4, DIM, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(2)[1]


DYNAMIC = {"x": {0: "rows"}}
