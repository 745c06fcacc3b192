"""A GRU greedy decoder with attention: `while len(tokens) < self.max_len:` and a `break` on EOS.

The encoder (`nn.GRU`) reads the source; each decoding step embeds the last
token, updates a `GRUCell`, attends over the encoder outputs and picks the
next token by `argmax`. The loop ends when the token list is full (no EOS)
or at EOS, whichever comes first. Unit 0 of the decoder state counts the
steps, and EOS reads only it, so a source of `c` words (1..7) decodes
`8 - c` tokens ending in EOS, and an empty source runs into `max_len`.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

SRC_LEN, VOCAB, PAD, BOS, EOS = 8, 16, 0, 1, 2
RATE = 0.9


class GreedyAttentionDecoder(nn.Module):
    def __init__(self, vocab=VOCAB, embed=8, hidden=16, max_len=8):
        super().__init__()
        self.max_len, self.bos, self.eos = max_len, BOS, EOS
        self.src_embed = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.encoder = nn.GRU(embed, hidden, batch_first=True)
        self.tgt_embed = nn.Embedding(vocab, embed)
        self.cell = nn.GRUCell(embed, hidden)
        self.attn = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, src):
        enc, h = self.encoder(self.src_embed(src))
        h = h[0]
        tok = torch.full((src.size(0),), self.bos, dtype=torch.long)
        tokens = []
        while len(tokens) < self.max_len:
            h = self.cell(self.tgt_embed(tok), h)
            scores = torch.bmm(enc, self.attn(h).unsqueeze(2)).squeeze(2)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights.unsqueeze(1), enc).squeeze(1)
            tok = self.out(torch.cat([h, context], dim=1)).argmax(-1)
            tokens.append(tok)
            if tok.item() == self.eos:
                break
        return torch.stack(tokens, dim=1)


def _timer(w_ih, w_hh, b_ih, b_hh, hidden, column=None):
    """Unit 0 moves a fixed fraction 1 - RATE towards 1 per step (per source word with `column`)."""
    z, n = hidden, 2 * hidden
    for row in (z, n):
        w_ih[row], w_hh[row], b_hh[row] = 0.0, 0.0, 0.0
    b_ih[n] = 20.0
    logit = math.log(RATE / (1 - RATE))
    if column is None:
        b_ih[z] = logit
    else:
        b_ih[z] = 20.0
        w_ih[z, column] = logit - 20.0


def get_model():
    torch.manual_seed(0)
    m = GreedyAttentionDecoder()
    hidden = m.cell.hidden_size
    with torch.no_grad():
        m.src_embed.weight[:, 0] = 1.0
        m.src_embed.weight[PAD] = 0.0
        e = m.encoder
        _timer(e.weight_ih_l0, e.weight_hh_l0, e.bias_ih_l0, e.bias_hh_l0, hidden, column=0)
        _timer(m.cell.weight_ih, m.cell.weight_hh, m.cell.bias_ih, m.cell.bias_hh, hidden)
        m.out.weight.mul_(30.0)
        m.out.bias.mul_(30.0)
        m.out.weight[:, 0] = 0.0
        m.out.weight[EOS] = 0.0
        m.out.weight[EOS, 0] = 3000.0
        m.out.bias[EOS] = -3000.0 * (1 - RATE ** 8.5)
    return m.eval()


def sample_inputs(n, seed=0):
    """Sample i has i % 8 source words: 8 - c tokens ending in EOS, or 8 without EOS when empty."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        c = i % SRC_LEN
        src = torch.full((1, SRC_LEN), PAD, dtype=torch.long)
        src[0, :c] = torch.randint(EOS + 1, VOCAB, (c,), generator=gen)
        inputs.append((src,))
    return inputs


def get_inputs():
    return sample_inputs(3)[2]
