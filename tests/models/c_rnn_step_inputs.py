"""An LSTM cell over the frames of a zero-padded batch, stopping at the first all-padding frame.

`for t in range(x.shape[1]):` reads the frame `x[:, t]` (a time step of the input) and, through
`nn.LSTMCell`, multiplies it by the cell's input weights; the loop `break`s when a frame is all zeros
(the batch's sequences have ended). A second cell then runs over `steps` more frames of a learned
embedding table, `embed(ids[:, t])`, for as many steps as the first loop read, returning both states
and the step count. Sample `i` has its padding from frame `i % 7` (0 = an empty batch: the first
loop stops at once; 6 = no padding: it reads every frame).
"""
import torch
from torch import nn

FRAMES, DIM, BATCH, VOCAB = 6, 5, 2, 9


class StepInputs(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(DIM, hidden)
        self.embed = nn.Embedding(VOCAB, DIM)
        self.second = nn.RNNCell(DIM, hidden)

    def forward(self, x, ids):
        h = torch.zeros(x.shape[0], self.hidden)
        c = torch.zeros(x.shape[0], self.hidden)
        steps = 0
        for t in range(x.shape[1]):
            if x[:, t].abs().sum() == 0:
                break
            h, c = self.cell(x[:, t], (h, c))
            steps += 1
        g = h
        for t in range(steps):
            g = self.second(self.embed(ids[:, t]), g)
        return h, c, g, steps


def get_model():
    torch.manual_seed(0)
    return StepInputs().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        x = torch.randn(BATCH, FRAMES, DIM, generator=gen)
        x[:, i % (FRAMES + 1):] = 0.0
        ids = torch.randint(0, VOCAB, (BATCH, FRAMES), generator=gen)
        inputs.append((x, ids))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
