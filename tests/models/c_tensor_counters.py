"""Counters and indices kept in tensors of literal data (RANet's DyCL method).

`seen = torch.tensor(0)` counts blocks and `head` picks the next classifier;
both are incremented with `+=` and compared with static configuration
(`if seen > self.first_exit:`), the loop variable is rebound to
`torch.tensor(i, dtype=torch.int32)` and indexes the ModuleLists. All of it
is fixed at conversion time; only the confidence test depends on the input.
Samples leave at the first exit, the second, or run through.
"""

import torch
import torch.nn as nn

WIDTH = 6


class CounterExits(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(3))
        self.heads = nn.ModuleList(nn.Linear(WIDTH, 2) for _ in range(2))
        self.first_exit = 1

    def forward(self, x):
        head = torch.tensor(0)
        seen = torch.tensor(0)
        for i in range(len(self.blocks)):
            i = torch.tensor(i, dtype=torch.int32)
            x = torch.relu(self.blocks[i](x))
            seen += 1
            if seen > self.first_exit:
                logits = self.heads[head](x)
                if logits.softmax(-1).max() > 0.8:
                    return logits, head
                head += 1
        return x.sum(-1, keepdim=True), head


def get_model():
    torch.manual_seed(0)
    model = CounterExits()
    with torch.no_grad():  # blocks pass positive features on; head k is confident when feature k is large
        for block in model.blocks:
            block.weight.copy_(torch.eye(WIDTH))
            block.bias.zero_()
        for k, head in enumerate(model.heads):
            head.weight.zero_()
            head.bias.zero_()
            head.weight[1, k] = 1.0
    return model.eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = 0.2 * torch.rand(1, WIDTH, generator=gen)
        if i % 3 < 2:
            x[0, i % 3] = 2.0 + torch.rand(1, generator=gen).item()
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
