"""Greedy GRU encoder-decoder with dot-product attention (batch 1).

Architecture: the source ``src`` [1, 12] (int64 token ids; vocabulary of 20
with PAD=0, BOS=1, EOS=2, content words 3..19; sentences are right-padded)
is embedded (16-d) and encoded by an ``nn.GRU`` (hidden 32, batch_first).
The decoder is an ``nn.GRUCell`` started from the encoder's final state.
Each step embeds the previous output word, updates the state, attends over
the encoder outputs (dot-product scores, softmax, weighted sum) and maps
``[state; context]`` to word logits; the next word is ``argmax``.

Dynamic behaviour: the decoding loop ``for t in range(self.max_len):``
(``max_len`` = 12) appends every word to a Python list and breaks as soon as
``tok.item() == self.eos``; it therefore runs 1 to 12 times, ending either on
EOS or by exhausting ``max_len``.  The model returns the words, int64
[1, steps] (EOS included when emitted).

Calibration: hidden unit 0 (``TIMER``) of the encoder and of the decoder is
wired as a length-budget timer.  Its candidate is saturated at +1 and its
update gate is constant, so the unit moves a fixed fraction ``1 - TIMER_RATE``
of the way towards 1 on every source word (PAD leaves it unchanged) and on
every decoding step: after ``c`` source words and ``t`` steps it is
``1 - TIMER_RATE ** (c + t)``.  The EOS logit reads only that unit,
``EOS_GAIN * (h[0] - threshold)`` with ``threshold = 1 - TIMER_RATE ** 12.5``
(between budgets 12 and 13), and the other words do not read it, so a
source with ``c`` words in 1..12 decodes ``13 - c`` words ending in EOS, and
an empty source runs into ``max_len`` without EOS.  The other words' logits
are sharpened by ``WORD_GAIN`` so that greedy choices are far from ties.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SRC_LEN = 12
VOCAB = 20
PAD, BOS, EOS = 0, 1, 2

# Length-budget timer (see module docstring).
TIMER = 0
TIMER_RATE = 0.92
BUDGET = 12.5  # EOS once source words + decoding steps exceed this
GATE_OPEN = 20.0  # sigmoid(20) == 1 and tanh(20) == 1 in float32
EOS_GAIN = 3000.0
WORD_GAIN = 40.0


class Seq2Seq(nn.Module):
    def __init__(self, vocab_size=VOCAB, embed_dim=16, hidden_size=32, max_len=12,
                 bos=BOS, eos=EOS, pad=PAD):
        super().__init__()
        self.max_len = max_len
        self.bos, self.eos = bos, eos
        self.src_embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad)
        self.encoder = nn.GRU(embed_dim, hidden_size, batch_first=True)
        self.tgt_embed = nn.Embedding(vocab_size, embed_dim)
        self.decoder = nn.GRUCell(embed_dim, hidden_size)
        self.out = nn.Linear(2 * hidden_size, vocab_size)

    def forward(self, src):
        enc_out, h_n = self.encoder(self.src_embed(src))  # [1, S, H], [1, 1, H]
        h = h_n[0]
        tok = torch.full((src.shape[0],), self.bos, dtype=torch.long)
        tokens = []
        for t in range(self.max_len):
            h = self.decoder(self.tgt_embed(tok), h)
            scores = torch.bmm(enc_out, h.unsqueeze(2)).squeeze(2)  # [1, S]
            attn = F.softmax(scores, dim=-1)
            context = torch.bmm(attn.unsqueeze(1), enc_out).squeeze(1)  # [1, H]
            logits = self.out(torch.cat([h, context], dim=1))
            tok = logits.argmax(-1)
            tokens.append(tok)
            if tok.item() == self.eos:
                break
        return torch.stack(tokens, dim=1)


def _make_timer(weight_ih, weight_hh, bias_ih, bias_hh, hidden, input_column=None):
    """Wire unit TIMER of a GRU layer: h <- z * h + (1 - z) * 1 with constant z.

    With ``input_column`` the update gate is open (z = 1, no change) for a
    zero input and equals TIMER_RATE when that input column is 1.
    """
    z, n = hidden + TIMER, 2 * hidden + TIMER  # gate rows are ordered (r, z, n)
    for row in (z, n):
        weight_ih[row] = 0.0
        weight_hh[row] = 0.0
        bias_hh[row] = 0.0
    bias_ih[n] = GATE_OPEN
    rate_logit = math.log(TIMER_RATE / (1 - TIMER_RATE))
    if input_column is None:
        bias_ih[z] = rate_logit
    else:
        bias_ih[z] = GATE_OPEN
        weight_ih[z, input_column] = rate_logit - GATE_OPEN


def get_model():
    torch.manual_seed(0)
    model = Seq2Seq()
    hidden = model.decoder.hidden_size
    with torch.no_grad():
        # Every source word (not PAD, whose embedding is zero) carries a
        # constant feature in column 0 that advances the encoder's timer.
        model.src_embed.weight[:, 0] = 1.0
        model.src_embed.weight[PAD] = 0.0
        enc = model.encoder
        _make_timer(enc.weight_ih_l0, enc.weight_hh_l0, enc.bias_ih_l0, enc.bias_hh_l0, hidden,
                    input_column=0)
        dec = model.decoder
        _make_timer(dec.weight_ih, dec.weight_hh, dec.bias_ih, dec.bias_hh, hidden)
        # Word logits: only EOS reads the decoder's timer.
        model.out.weight.mul_(WORD_GAIN)
        model.out.bias.mul_(WORD_GAIN)
        model.out.weight[:, TIMER] = 0.0
        model.out.weight[EOS] = 0.0
        model.out.weight[EOS, TIMER] = EOS_GAIN
        model.out.bias[EOS] = -EOS_GAIN * (1 - TIMER_RATE ** BUDGET)
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` sources [1, 12] with ``i % 13`` random content words, then PAD.

    Sample ``i`` has ``c = i % 13`` words and decodes ``13 - c`` words; the
    empty source (every 13th sample, starting with sample 0) never emits EOS.
    The seed changes the words.
    """
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        length = i % (SRC_LEN + 1)
        src = torch.full((1, SRC_LEN), PAD, dtype=torch.long)
        src[0, :length] = torch.randint(EOS + 1, VOCAB, (length,), generator=gen)
        inputs.append((src,))
    return inputs


def get_inputs():
    # A one-word source: twelve decoding steps, the last one emitting EOS.
    return sample_inputs(2)[1]
