"""Mixture-of-experts dispatch by `zip` of run-time lists and a ModuleList, as JetMoE/Mixtral write it.

A router sends each token to one of three experts; `counts.tolist()` gives the tokens per expert and
`torch.split` cuts the sorted tokens into one chunk per expert (empty for an expert no token chose).
`zip(sizes, self.experts)` reads each expert's token count in the host (an expert with none is
skipped, a decision on a Python value), `zip(chunks, self.experts)` runs each expert on its chunk,
`enumerate(zip(...))` numbers them, `zip(..., strict=True)` pairs lists of the same length, and a zip of
a list of two tensors (a length known when converting) with three modules stops after two.
"""

import torch
import torch.nn as nn

DIM = 8
EXPERTS = 3


class ZipExperts(nn.Module):
    def __init__(self, dim=DIM, experts=EXPERTS):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))
        self.scales = nn.ModuleList(nn.Linear(dim, 1) for _ in range(experts))

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        _, order = choice.sort(0)
        counts = (choice[:, None] == torch.arange(self.router.out_features)).long().sum(0)
        sizes = counts.tolist()
        chunks = torch.split(x[order], sizes, dim=0)
        outs = []
        for chunk, expert in zip(chunks, self.experts):
            outs.append(torch.tanh(expert(chunk)))
        h = torch.cat(outs, 0)
        ends = [h[:1], h[-1:]]
        for end, scale in zip(ends, self.scales):  # a run-time list of known length: 2 iterations
            h = h + scale(end).sum()
        used = 0
        for n, expert in zip(sizes, self.experts):
            if n > 0:
                used = used + 1
        total = h.sum(0) * used
        for i, (n, part, scale) in enumerate(zip(sizes, torch.split(h, sizes), self.scales)):
            total = total + scale(part).sum() * (i + 1) + n
        for n, chunk, scale in zip(sizes, chunks, self.scales, strict=True):
            total = total + scale(chunk).sum() * n
        y = torch.zeros_like(x)
        y[order] = h
        return y + total


def get_model():
    torch.manual_seed(0)
    return ZipExperts().eval()


def sample_inputs(n, seed=0):
    """2..7 tokens; every third sample is pulled toward one expert, so the other experts get no token."""
    gen = torch.Generator().manual_seed(seed)
    pull = get_model().router.weight.detach()
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
