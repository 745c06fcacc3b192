"""Adaptive Computation Time (Graves, 2016) over a single input vector.

Architecture: the input x [1, 16] is fed, together with a first-step flag,
to an ``nn.GRUCell`` (hidden 32) for a variable number of "ponder" steps.
After every step a halting unit ``p = sigmoid(halt(state))`` adds to the
accumulated halting probability; the step that brings the sum to
``1 - eps`` contributes only the remainder ``1 - sum``.  The output is a
linear classifier (32 -> 10) on the halting-weighted mean of the states.

Dynamic behaviour: the ponder loop is
``while halting_prob.item() < 1 - self.eps and n_steps < self.max_steps:``,
so the number of steps depends on the input; the loop ends either because
the model halted or because the budget of ``max_steps`` (8) ran out (the
last state then takes the remaining probability mass).  The model returns
``(logits, n_steps)`` with ``n_steps`` a Python int.

Calibration: the halting unit is sharpened and its bias set once
(``HALT_GAIN``, ``HALT_BIAS``); ``sample_inputs`` scales a fixed direction by
"difficulty" levels ``LEVELS`` that were computed once on this model: the
first level never halts within the budget, the others halt after 8, 7, ...,
1 steps.  Each level sits in the middle of its range, and the accumulated
halting probability stays clear of ``1 - eps`` at every step.
"""

import torch
import torch.nn as nn

INPUT_DIM = 16

# Calibration (see module docstring).
HALT_GAIN = 20.0
HALT_BIAS = 0.0

# Input distribution of sample_inputs: LEVELS[k] * direction + noise.  Ponder
# steps per level: budget exhausted (8), then 8, 7, 6, 5, 4, 3, 2, 1.
LEVELS = [-6.0, -2.2, -1.3, -0.5, 0.12, 0.7, 1.4, 2.6, 16.0]
DIRECTION_SEED = 14
NOISE_STD = 0.002


class AdaptiveComputationTime(nn.Module):
    def __init__(self, input_dim=INPUT_DIM, hidden_size=32, num_classes=10, max_steps=8, eps=0.01):
        super().__init__()
        self.hidden_size = hidden_size
        self.max_steps = max_steps
        self.eps = eps
        self.cell = nn.GRUCell(input_dim + 1, hidden_size)
        self.halt = nn.Linear(hidden_size, 1)
        self.out = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        batch = x.shape[0]
        state = torch.zeros(batch, self.hidden_size)
        weighted = torch.zeros(batch, self.hidden_size)
        halting_prob = torch.zeros(batch)
        flag = torch.ones(batch, 1)
        n_steps = 0
        while halting_prob.item() < 1 - self.eps and n_steps < self.max_steps:
            state = self.cell(torch.cat([x, flag], dim=1), state)
            flag = torch.zeros(batch, 1)
            n_steps += 1
            p = torch.sigmoid(self.halt(state)).squeeze(1)
            # The step that reaches 1 - eps only contributes the remainder.
            w = torch.where(halting_prob + p < 1 - self.eps, p, 1 - halting_prob)
            weighted = weighted + w.unsqueeze(1) * state
            halting_prob = halting_prob + w
        # If the step budget ran out, the last state takes the remaining mass.
        weighted = weighted + (1 - halting_prob).unsqueeze(1) * state
        return self.out(weighted), n_steps


def get_model():
    torch.manual_seed(0)
    model = AdaptiveComputationTime()
    with torch.no_grad():
        model.halt.weight.mul_(HALT_GAIN)
        model.halt.bias.fill_(HALT_BIAS)
    return model.eval()


def direction():
    """The fixed unit input direction along which the difficulty levels lie."""
    gen = torch.Generator().manual_seed(DIRECTION_SEED)
    d = torch.randn(1, INPUT_DIM, generator=gen)
    return d / d.norm()


def sample_inputs(n, seed=0):
    """``n`` inputs [1, 16]: sample ``i`` is ``LEVELS[i % len(LEVELS)] * direction() + noise``."""
    gen = torch.Generator().manual_seed(seed)
    d = direction()
    inputs = []
    for i in range(n):
        level = LEVELS[i % len(LEVELS)]
        inputs.append((level * d + NOISE_STD * torch.randn(1, INPUT_DIM, generator=gen),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
