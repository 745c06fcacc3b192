"""Lists of tensors as dense networks build them (RANet's dense and fusion blocks), around decisions.

- A layer takes a tensor or a list (`if not isinstance(x, list): x = [x]`), a list's second part
  whole or in pieces (`elif isinstance(x[1], tuple):`), and puts the wider part of a list first
  (`elif` on widths that `F.interpolate(..., size=(h, w))` upstream feeds): type and shape tests
  that never change, folded. The layer is called with a tensor (neither `elif` reached), with a
  list whose second part comes in pieces, and with one whose narrower part comes first.
- Each layer joins `[x[0], f(x[0])]` with `torch.cat`; a block collects `outputs = [x]` and
  `outputs.append(...)`, reads `outputs[-1]` and its size (`_, _, h, w = x.size()`), and passes
  `(x, outputs)` on: list plumbing between tensor ops, with nothing the host decides.
- An early exit on the first classifier's confidence; after it, a list appended to in both arms
  of a run-time decision (`if logits[0, 0] > 0: kept.append(h)`) and joined after the `if`: a
  list the host builds.

Samples take each arm of both run-time decisions.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, width, growth):
        super().__init__()
        self.conv = nn.Conv2d(width, growth, 3, padding=1)

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        elif isinstance(x[1], tuple):  # the second part in pieces
            x = [x[0], torch.cat(x[1], dim=1)]
        elif x[0].shape[1] < x[1].shape[1]:  # the wider first
            x = [x[1], x[0]]
        res = [x[0], torch.relu(self.conv(x[0]))]
        return torch.cat(res, dim=1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Layer(3, 2)
        self.second = Layer(5, 2)
        self.low = nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        outputs = [x]
        x = self.first(x)
        outputs.append(x)
        x = self.second([x, (outputs[0][:, :1], outputs[0][:, 1:2])])
        outputs.append(x)
        x = outputs[-1]
        _, _, h, w = x.size()
        x = [x]
        x.append(F.interpolate(self.low(outputs[0]), size=(h, w), mode="bilinear", align_corners=True))
        x = torch.cat(x, dim=1)
        return x, outputs


class DenseLists(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.again = Layer(11, 2)
        self.exit = nn.Linear(11, 3)
        self.head = nn.Linear(13, 3)  # every other channel of the two joined

    def forward(self, x):
        h, outputs = self.block(x)
        logits = self.exit(h.mean((2, 3)))
        if logits.softmax(-1).max() > 0.6:
            return logits, 0
        h = self.again([h[:, :1], h])
        kept = []
        if logits[0, 0] > 0:
            kept.append(h)
        else:
            kept.append(-h)
        kept.append(torch.relu(h))
        joined = torch.cat(kept, dim=1)
        return self.head(joined.mean((2, 3))[:, ::2]), len(kept)


def get_model():
    torch.manual_seed(0)
    model = DenseLists().eval()
    with torch.no_grad():
        model.exit.weight.mul_(4.0)
    return model


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [((2 * torch.rand(1, 3, 1, 1, generator=gen) - 1) * 3 + 0.3 * torch.randn(1, 3, 8, 8, generator=gen),)
            for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
