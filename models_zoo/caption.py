"""Image-caption LSTM decoder with greedy decoding (Show-and-Tell style), batch 2.

Architecture: pooled image features [B, 32] initialise the decoder state
(``h0 = tanh(init_h(f))``, ``c0 = init_c(f)``, as in Show, Attend and Tell).
Each step embeds the previous word (16-d, vocabulary of 20 with PAD=0, BOS=1,
EOS=2), runs an ``nn.LSTMCell`` (hidden 32) and a linear word classifier, and
picks the next word greedily with ``argmax``.  Rows that have already emitted
EOS emit PAD from then on.

Dynamic behaviour: the decoding loop is ``while True:``; after every step
``finished = finished | (tok == self.eos)`` and the loop breaks as soon as
``finished.all()`` -- both captions are done -- or after ``self.max_len``
(12) steps.  The number of steps (the caption length, i.e. the longer of the
two captions) therefore varies from 1 to 12 with two ways out of the loop.
The model returns the word ids, int64 [B, steps].

Calibration: hidden unit 0 (``TIMER``) of the LSTM cell is wired as a step
counter -- its input, forget and output gates are saturated open and its
candidate is a constant, so its cell value grows by ``TIMER_STEP`` per step
independently of the words -- and the EOS logit reads only that unit
(``EOS_GAIN * h[:, 0]``), while the other words do not read it.  A row emits
EOS at the first step where its counter cell is positive.  ``init_c``'s
counter row is fitted (least squares) to the image-class prototypes of
``sample_inputs`` so that class ``k`` starts the counter at
``-(CLASS_LENGTHS[k] - 0.5) * TIMER_STEP``: a caption of that many words,
with half a counter step of margin either side.  Classes with a length above
``max_len`` never finish within the budget.
"""

import math

import torch
import torch.nn as nn

FEATURE_DIM = 32
BATCH = 2
PAD, BOS, EOS = 0, 1, 2

# Counter unit (see module docstring).
TIMER = 0
TIMER_STEP = 0.5
GATE_OPEN = 20.0  # sigmoid(20) == 1 in float32
EOS_GAIN = 100.0
WORD_GAIN = 10.0  # sharpens the other words' logits (wider argmax gaps)

# Input distribution of sample_inputs: image classes are fixed non-negative
# prototype vectors (pooled CNN features) plus small Gaussian noise.  Class k
# has a typical caption length CLASS_LENGTHS[k]; the last two classes run past
# max_len.
PROTOTYPE_SEED = 7
CLASS_LENGTHS = list(range(1, 13)) + [15, 18]
NOISE_STD = 0.01


def class_prototypes():
    """Fixed non-negative feature prototypes, shape [len(CLASS_LENGTHS), FEATURE_DIM]."""
    gen = torch.Generator().manual_seed(PROTOTYPE_SEED)
    return torch.relu(torch.randn(len(CLASS_LENGTHS), FEATURE_DIM, generator=gen)) + 0.1


class CaptionDecoder(nn.Module):
    def __init__(self, feature_dim=FEATURE_DIM, vocab_size=20, embed_dim=16, hidden_size=32,
                 max_len=12, bos=BOS, eos=EOS, pad=PAD):
        super().__init__()
        self.max_len = max_len
        self.bos, self.eos, self.pad = bos, eos, pad
        self.init_h = nn.Linear(feature_dim, hidden_size)
        self.init_c = nn.Linear(feature_dim, hidden_size)
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad)
        self.cell = nn.LSTMCell(embed_dim, hidden_size)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, feats):
        batch = feats.shape[0]
        h = torch.tanh(self.init_h(feats))
        c = self.init_c(feats)
        tok = torch.full((batch,), self.bos, dtype=torch.long)
        finished = torch.zeros(batch, dtype=torch.bool)
        tokens = []
        t = 0
        while True:
            h, c = self.cell(self.embed(tok), (h, c))
            logits = self.out(h)
            tok = logits.argmax(-1)
            tok = tok.masked_fill(finished, self.pad)
            tokens.append(tok)
            finished = finished | (tok == self.eos)
            t += 1
            if finished.all():
                break
            if t >= self.max_len:
                break
        return torch.stack(tokens, dim=1)


def get_model():
    torch.manual_seed(0)
    model = CaptionDecoder()
    hidden = model.cell.hidden_size
    with torch.no_grad():
        # LSTMCell gate rows are ordered (input, forget, cell, output).
        i, f, g, o = (k * hidden + TIMER for k in range(4))
        model.cell.weight_ih[[i, f, g, o]] = 0.0
        model.cell.weight_hh[[i, f, g, o]] = 0.0
        model.cell.bias_hh[[i, f, g, o]] = 0.0
        model.cell.bias_ih[[i, f, o]] = GATE_OPEN
        model.cell.bias_ih[g] = math.atanh(TIMER_STEP)
        # Word logits: only EOS reads the counter.
        model.out.weight.mul_(WORD_GAIN)
        model.out.bias.mul_(WORD_GAIN)
        model.out.weight[:, TIMER] = 0.0
        model.out.weight[EOS] = 0.0
        model.out.weight[EOS, TIMER] = EOS_GAIN
        model.out.bias[EOS] = 0.0
        # Counter start per image class (least-squares fit to the prototypes).
        targets = torch.tensor([-(n - 0.5) * TIMER_STEP for n in CLASS_LENGTHS])
        row = torch.linalg.lstsq(class_prototypes(), targets.unsqueeze(1)).solution.squeeze(1)
        model.init_c.weight[TIMER] = row
        model.init_c.bias[TIMER] = 0.0
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` feature batches of shape [2, 32] whose captions take 1..12 steps or run out.

    Sample ``i`` targets a loop trip count of ``13 - i % 13`` (13: no EOS
    within ``max_len``): row 0 is an image of the class with that caption
    length (a random over-long class for 13), row 1 a random class whose
    caption is no longer.  The seed changes the classes of row 1 and the noise.
    """
    gen = torch.Generator().manual_seed(seed)
    prototypes = class_prototypes()
    num_short = sum(1 for length in CLASS_LENGTHS if length <= 12)
    inputs = []
    for i in range(n):
        target = num_short - i % (num_short + 1)
        if target < num_short:
            first = target
        else:
            first = num_short + int(torch.randint(len(CLASS_LENGTHS) - num_short, (1,), generator=gen))
        second = int(torch.randint(min(first, num_short - 1) + 1, (1,), generator=gen))
        classes = torch.tensor([first, second])
        feats = prototypes[classes] + NOISE_STD * torch.randn(BATCH, FEATURE_DIM, generator=gen)
        inputs.append((feats,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
