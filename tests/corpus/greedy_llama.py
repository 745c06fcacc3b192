"""Greedy generation around transformers' `LlamaForCausalLM`, no cache: each step re-runs the whole
prefix, takes the argmax of the last position and stops at EOS or after MAX_NEW tokens.

The attention mask is passed as `generate()` passes it (all ones). Without it, transformers checks
the position ids for packed sequences on every call (`find_packed_sequence_indices`, a decision on
tensor values) and picks a different mask function on each arm; dycl refuses a function-valued
variable that differs between the arms of a run-time decision."""
import torch
from torch import nn

import _corpus
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 48
HIDDEN = 32
MAX_NEW = 6
EOS = 18


class GreedyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                             attn_implementation="eager", use_cache=False)
        self.lm = LlamaForCausalLM(config)
        self.eos = EOS
        self.max_new_tokens = MAX_NEW

    def forward(self, input_ids):
        ids = input_ids
        for _ in range(self.max_new_tokens):
            logits = self.lm(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
            token = logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, token], dim=1)
            if token.item() == self.eos:
                break
        return ids


def get_model():
    return _corpus.randomize(GreedyLlama(), seed=0, scale=0.5)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randint(4, VOCAB, (1, 2 + i % 4), generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
