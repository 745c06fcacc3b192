"""Tensors indexed by lists built by appends of Python values.

`picks` starts empty and gets `int(...)` of a comparison or the loop's counter in the arms of
run-time decisions: the host builds it. `tops` starts as a display of a literal and grows by
`.item()`s, `more` by `+=`, `extend` and `insert`, `comp` is a comprehension: the region builds
them. torch selects the rows such a list names; in a region its items are tensors, which torch
would read as one index per dimension. `pair` holds 0-d tensors, and in a tuple index torch makes a tensor of it, which tracing
would freeze. Every list has the same length on every input, its values change with the input, and
each decision takes both arms on the samples.
"""

import torch
import torch.nn as nn

DIM = 4


class AppendedIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(DIM, DIM)
        self.gates = nn.ModuleList([nn.Linear(DIM, 1) for _ in range(2)])

    def forward(self, x):
        h = self.mix(x)
        picks = []
        for i, gate in enumerate(self.gates):
            if gate(h[i]).item() > 0:
                picks.append(int(h[i, 1] > 0))
            else:
                picks.append(i + 1)
        tops = [0]
        for i in range(2):
            tops.append(h[i].argmax().item() % 2)
        more = []
        more += [int(h[0, 2] > 0)]
        more.extend([1, int(h[1, 2] > 0)])
        more.insert(0, 2)
        comp = [h[i].argmin().item() % 2 for i in range(2)]  # a comprehension of Python values
        pair = [h[0].argmax(), h[1].argmin()]  # 0-d tensors, in a tuple index: a tensor of them
        out = h[picks] + h[tops].sum(0) + h[:, more].sum(1, keepdim=True)[:2] + h[:2, pair].sum(1, keepdim=True) + h[comp]
        if out[0, 0] > out[1, 0]:
            return out * 2
        return out - 1


def get_model():
    torch.manual_seed(0)
    return AppendedIndex().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(3 + i % 3, DIM, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]


DYNAMIC = {"x": {0: "rows"}}
