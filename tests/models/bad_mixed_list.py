"""`x[picks]` of a list that gets a Python int in one arm and a 0-d tensor in the other.

torch selects rows 1 and 0 for `[1, 0]`, and reads `[t, 0]` as one index per dimension (the element
`x[t, 0]`); in a region both items are tensors, so no region computes what the original does on both
paths.
"""
import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        picks = []
        if x[0, 0] > 0:
            picks.append(1)
        else:
            picks.append(x[1].argmax())
        picks.append(0)
        return x[picks]


def get_model():
    return M().eval()


def get_inputs():
    return (torch.randn(4, 4),)
