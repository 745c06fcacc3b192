"""Python conversions of comparisons inside tensor code: `int(h[0, 0] > 0)` in arithmetic, in a
host loop's body, as an index; `float(a > b)`, `bool(...)`, `len(h + 1)`.

In a region each becomes a tensor op on the comparison (`(h[0, 0] > 0).to(torch.int64)`), which
must keep its parentheses: `h[0, 0] > 0.to(torch.int64)` is no Python. The decision at the end
takes both arms on the samples.
"""

import torch
import torch.nn as nn

DIM = 4


class IntOfComparison(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(DIM, DIM)

    def forward(self, x):
        h = self.mix(x)
        total = h[0] * int(h[0, 0] > 0) + float(h[0, 1] > h[0, 2])  # arithmetic
        for i in range(h.shape[0]):  # a host loop's body
            total = total + h[i] * int(h[i, 0] > 0)
        row = h[int(h[0, 1] > 0)]  # an index
        scale = len(h + 1) * bool(h[1, 1] < 0)
        if total.sum() > 0:
            return total + row * scale
        return total - row


def get_model():
    torch.manual_seed(0)
    return IntOfComparison().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2 + i % 3, DIM, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]


DYNAMIC = {"x": {0: "rows"}}
