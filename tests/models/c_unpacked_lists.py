"""Lists started by a tuple assignment (`res, feats = [], []`, as in RANet's DyCL method) collect
values at run time: appending to them is never folded away. Samples exit after the first block,
the second, the third, or run through."""

import torch
import torch.nn as nn


class UnpackedLists(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        res, feats = [], []
        for block in self.blocks:
            x = torch.relu(block(x))
            feats.append(x)
            if x.sum() > 2.0:
                return res, len(feats)
            res.append(x.mean(-1, keepdim=True))
        return res, len(feats)


def get_model():
    torch.manual_seed(0)
    model = UnpackedLists()
    with torch.no_grad():  # each block adds 0.2 to every feature: the sum passes 2 after block 1, 2, 3 or never
        for block in model.blocks:
            block.weight.copy_(torch.eye(4))
            block.bias.fill_(0.2)
    return model.eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    levels = (1.5, 0.5, 0.0, -4.0)  # leaves after block 1, 2, 3, or never
    return [(levels[i % 4] / 4 + 0.01 * torch.rand(1, 4, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
