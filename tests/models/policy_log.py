"""A recurrent gate policy that logs its actions on the model (SkipNet's RNNGatePolicy, RL stage).

One LSTM (an ``nn.LSTM`` run one step at a time) reads the features before
each block and carries its state from block to block; the policy helper
appends each action to ``self.saved_actions`` (training bookkeeping nothing
reads back), checks its
state with an ``assert`` (a host check, which ends a stretch of code run as
one graph) and returns the probability of running the block. The same helper
lines run before every block, so the stretches of code after the checks
start on one line.
"""

import torch
import torch.nn as nn

WIDTH, HIDDEN, BLOCKS = 8, 6, 4


class PolicyLog(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(WIDTH, HIDDEN)
        self.proj = nn.Linear(HIDDEN, 1)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()) for _ in range(BLOCKS))
        self.head = nn.Linear(WIDTH, 3)
        self.saved_actions = []

    def policy(self, feature, hidden):
        out, (h, c) = self.rnn(feature.view(1, 1, -1), hidden)
        prob = torch.sigmoid(self.proj(out[0]))
        action = (prob > 0.5).float()
        self.saved_actions.append(action)
        assert torch.all(h.abs() <= 1), "an LSTM state is within [-1, 1]"
        return prob, (h, c)

    def forward(self, x):
        hidden = (torch.zeros(1, 1, HIDDEN), torch.zeros(1, 1, HIDDEN))
        ran = torch.zeros(1)
        for block in self.blocks:
            prob, hidden = self.policy(x, hidden)
            if prob[0, 0] > 0.5:
                x = x + block(x)
                ran = ran + 1
            else:
                x = x * 0.5
        return self.head(x), ran


def get_model():
    torch.manual_seed(1)
    model = PolicyLog()
    with torch.no_grad():  # the gate follows feature 0 (and its history): every block goes both ways
        model.proj.weight.mul_(20.0)
    return model.eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(2.0 * torch.randn(1, WIDTH, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
