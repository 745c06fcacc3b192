"""A `break` at the top of a loop body, on a flag the rest of the body sets for the next iteration.

`for t in range(x.shape[0]):` stops when `done` (set at the end of the previous iteration, from the
running sum) holds, before the step's work; `done` starts from the input too, so a loop may run no
step at all. The body's work after the break reassigns `done`: the break reads the value from before.
Sample `i` scales the rows by `SCALES[i % 4]`, from a loop that never stops early to one that stops
before its first step.
"""
import torch
from torch import nn

ROWS, DIM = 5, 3
SCALES = [0.05, 0.6, 2.0, 40.0]


class BreakBeforeUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(DIM, DIM)

    def forward(self, x):
        h = torch.zeros(DIM)
        done = x[0].abs().sum() > 50.0
        steps = 0
        for t in range(x.shape[0]):
            if done:
                break
            h = h + self.lin(x[t]).abs()
            done = h.sum() > 4.0
            steps += 1
        return h, steps


def get_model():
    torch.manual_seed(0)
    return BreakBeforeUpdate().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(SCALES[i % len(SCALES)] * torch.randn(ROWS, DIM, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
