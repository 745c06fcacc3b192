"""Helpers that return constants (SDN's DyCL method and RANet's blocks).

Each block's forward returns `(h, torch.tensor(1), logits)` when it has an
internal classifier and `(h, torch.tensor(0), zeros)` when it has none; the
blocks without one get that forward as an instance attribute in `__init__`
(`self.forward = self.plain_forward`), as SDN's blocks do. A method returns a
string constant per class (`_kind()`). `if has_exit:` and
`if block._kind() == "norm":` fold at conversion time; only the confidence
test stays. Samples leave at either exit or run through.
"""

import torch
import torch.nn as nn

WIDTH = 6


class Block(nn.Module):
    def __init__(self, head):
        super().__init__()
        self.body = nn.Linear(WIDTH, WIDTH)
        if head is not None:
            self.head = nn.Linear(WIDTH, 2)
            self.head_feature = head
        else:
            self.forward = self.plain_forward

    def forward(self, x):
        h = torch.relu(self.body(x))
        return h, torch.tensor(1), self.head(h)

    def plain_forward(self, x):
        h = torch.relu(self.body(x))
        return h, torch.tensor(0), torch.zeros([len(x), 2])

    def _kind(self):
        return "norm"


class Scaled(Block):
    def _kind(self):
        return "scaled"


class ConstantReturns(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(None), Scaled(0), Block(None), Block(1)])

    def forward(self, x):
        for i in range(len(self.blocks)):
            block = self.blocks[i]
            x, has_exit, logits = block(x)
            if block._kind() == "scaled":
                x = x * 2
            if has_exit:
                if logits.softmax(-1).max() > 0.8:
                    return logits
        return x.sum(-1, keepdim=True)


def get_model():
    torch.manual_seed(0)
    model = ConstantReturns()
    with torch.no_grad():  # blocks pass positive features on; a head is confident when its feature is large
        for block in model.blocks:
            block.body.weight.copy_(torch.eye(WIDTH))
            block.body.bias.zero_()
            if hasattr(block, "head"):
                block.head.weight.zero_()
                block.head.bias.zero_()
                block.head.weight[1, block.head_feature] = 1.0
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
