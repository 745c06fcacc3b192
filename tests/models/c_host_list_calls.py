"""Python's own functions of lists of Python values, written inside tensor code.

`sizes` comes from `.tolist()`; `picks` gets `int(...)` or the loop's counter in the arms of
run-time decisions; `tops` gets `.item()`s in straight-line code. `sorted`, `min` and `max` compare
the items, `sum` adds them and `torch.tensor` makes a tensor of them: on Python values, as the
original does, not on the 0-d tensors a region would hold (Python would compare those through
`bool()`, which tracing freezes, and `torch.tensor` of them would be a constant of the graph). Every
list has the same length on every input, its values change with the input, and each decision takes
both arms on the samples.
"""

import torch
import torch.nn as nn

DIM = 4


class HostListCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(DIM, DIM)

    def forward(self, x):
        h = self.mix(x)
        sizes = (h[0, :3] > 0).long().tolist()
        picks = []
        for i in range(2):
            if h[i, 0] > 0:
                picks.append(int(h[i, 1] > 0))
            else:
                picks.append(i + 1)
        tops = []
        for i in range(2):
            tops.append(h[i].argmax().item() % 3)
        a = h[sorted(sizes)] * max(sizes) + min(sizes) * sum(sizes) + torch.tensor(sizes).sum()
        b = h[sorted(picks)] * max(picks) - min(picks) + sum(picks) + torch.tensor(picks, dtype=torch.float32)[:, None]
        c = h[sorted(tops)].sum(0) * max(tops) + torch.tensor(tops).sum() + min(tops)
        out = a.sum(0) + b.sum(0) + c
        if out[0] > out[1]:
            return out * torch.tensor([sizes[0], picks[0]]).sum()
        return out - torch.tensor(picks).sum()


def get_model():
    torch.manual_seed(0)
    return HostListCalls().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(3 + i % 3, DIM, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]


DYNAMIC = {"x": {0: "rows"}}
