"""Early exit over transformers' BERT encoder layers: after each `BertLayer` an exit head reads the
[CLS] position, and the model returns as soon as one is confident enough (DeeBERT-style)."""
import torch
from torch import nn

import _corpus
from transformers import BertConfig, BertModel

LAYERS = 4
HIDDEN = 32
CLASSES = 4
VOCAB = 40
THRESHOLD = 0.6


class EarlyExitBert(nn.Module):
    def __init__(self):
        super().__init__()
        config = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=32, attn_implementation="eager",
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.exits = nn.ModuleList([nn.Linear(HIDDEN, CLASSES) for _ in range(LAYERS)])
        self.threshold = THRESHOLD

    def forward(self, input_ids):
        h = self.bert.embeddings(input_ids=input_ids)
        for i, layer in enumerate(self.bert.encoder.layer):
            h = layer(h)
            logits = self.exits[i](h[:, 0])
            if torch.softmax(logits, dim=-1).max() > self.threshold:
                return logits, i
        return logits, LAYERS - 1


def get_model():
    model = _corpus.randomize(EarlyExitBert(), seed=0, scale=0.3)
    with torch.no_grad():
        for head, gain in zip(model.exits, (2.0, 3.0, 4.0, 5.0)):  # later exits are more confident
            head.weight.mul_(gain)
    return model


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, VOCAB, (1, 3 + i % 5), generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
