"""`torch.cond` and `torch._higher_order_ops.while_loop` in forward, read as `if` and `while`.

A value-determined `torch.cond` picks a method of the model (one of them with
a static branch of its own, so it is inlined) and a lambda `torch.cond` scales
the result; a `while_loop` halves the state until its norm drops below a bound,
0 to several times depending on the input.
"""
import torch
from torch import nn
from torch._higher_order_ops import while_loop


class CondWhile(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.gate = nn.Linear(d, 1)
        self.up = nn.Linear(d, d)
        self.down = nn.Linear(d, d)
        self.bound = 4.0
        self.residual = True

    def grow(self, x, h):
        y = torch.relu(self.up(x))
        if self.residual:  # fixed at conversion time, as torch.cond needs
            y = y + h
        return y

    def shrink(self, x, h):
        return self.down(x) - h

    def more(self, i, h):
        return h.norm() > self.bound

    def forward(self, x):
        h = torch.tanh(x)
        y = torch.cond(self.gate(x).sum() > 0, self.grow, self.shrink, (x, h))
        y = torch.cond(y.sum() > 0, lambda a: a * 2, lambda a: a - 1, [y])
        steps, z = while_loop(self.more, lambda i, h: (i + 1, h / 2), (torch.zeros((), dtype=torch.long), y))
        return z, steps


def get_model():
    torch.manual_seed(0)
    return CondWhile().eval()


def sample_inputs(n, seed=0):
    """Inputs scaled by 0.2 to 6, both signs of the gate: the loop runs 0 to several times."""
    g = torch.Generator().manual_seed(seed)
    scales = (0.2, 1.0, 3.0, 6.0)
    return [(torch.randn(1, 8, generator=g) * scales[k % 4],) for k in range(n)]


def get_inputs():
    return sample_inputs(4)[3]
