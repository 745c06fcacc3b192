"""Split sizes from per-expert token counts, made a Python list with `.tolist()`.

A router (a submodule without a branch) sends each token to one of three
experts; `counts.tolist()` gives the tokens per expert, `torch.split` cuts the sorted tokens into one chunk per
expert (empty for an expert no token chose), and each expert runs on its
chunk. The list's items feed host arithmetic too (`max`, `sum`, `len`,
`.count`, a loop over them) and a decision on whether one expert took most
tokens; `.tolist()` of a 0-d tensor is a Python number, and a `.tolist()`
written inside tensor code splits the experts' outputs back by the same sizes.
"""

import torch
import torch.nn as nn

DIM = 16
EXPERTS = 3


class Router(nn.Module):
    """No branch, and yet Python values out: like JetMoE's top-k gating, whose forward ends in `.tolist()`."""

    def __init__(self, dim, experts):
        super().__init__()
        self.layer = nn.Linear(dim, experts)

    def forward(self, x):
        choice = self.layer(x).argmax(-1)
        _, order = choice.sort(0)
        counts = torch.zeros(x.shape[0], self.layer.out_features).scatter(1, choice[:, None], 1.0).long().sum(0)
        sizes = counts.tolist()
        return order, counts, sizes


class SplitExperts(nn.Module):
    def __init__(self, dim=DIM, experts=EXPERTS):
        super().__init__()
        self.router = Router(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x):
        order, counts, sizes = self.router(x)
        chunks = torch.split(x[order], sizes, dim=0)
        outs = []
        for i, expert in enumerate(self.experts):
            outs.append(torch.tanh(expert(chunks[i])))
        h = torch.cat(outs, 0)
        parts = torch.split(h, counts.tolist())
        y = torch.zeros_like(x)
        y[order] = torch.cat([parts[0] * 0.5, parts[1], parts[2] * 2.0], 0)
        if max(sizes) * 2 > sum(sizes):  # one expert took most tokens
            y = y + 1.0
        empty = 0
        for n in sizes:
            if n == 0:
                empty = empty + 1
        top = counts.max().tolist()
        return y * top + empty + sizes.count(0) * len(sizes)


def get_model():
    torch.manual_seed(0)
    return SplitExperts().eval()


def sample_inputs(n, seed=0):
    """2..7 tokens; every third sample is pulled toward one expert, so other experts get no token."""
    gen = torch.Generator().manual_seed(seed)
    pull = get_model().router.layer.weight.detach()
    inputs = []
    for i in range(n):
        x = torch.randn(2 + i % 6, DIM, generator=gen)
        if i % 3 == 0:
            x = x * 0.1 + 2.0 * pull[(i // 3) % EXPERTS]
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(2)[1]


DYNAMIC = {"x": {0: "tokens"}}
