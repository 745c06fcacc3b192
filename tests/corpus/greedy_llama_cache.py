"""Greedy generation around transformers' `LlamaForCausalLM` with its `DynamicCache`: the prompt runs
once, then each step feeds only the new token with `past_key_values=cache, use_cache=True`, takes the
argmax and stops at EOS or after MAX_NEW tokens."""
import torch
from torch import nn

import _corpus
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

VOCAB = 48
HIDDEN = 32
MAX_NEW = 6
EOS = 18


class GreedyLlamaCache(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                             attn_implementation="eager")
        self.lm = LlamaForCausalLM(config)
        self.eos = EOS
        self.max_new_tokens = MAX_NEW

    def forward(self, input_ids):
        cache = DynamicCache(config=self.lm.config)
        ids = input_ids
        step = input_ids
        for _ in range(self.max_new_tokens):
            logits = self.lm(input_ids=step, attention_mask=torch.ones_like(ids), past_key_values=cache,
                             use_cache=True).logits
            token = logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, token], dim=1)
            step = token
            if token.item() == self.eos:
                break
        return ids


def get_model():
    return _corpus.randomize(GreedyLlamaCache(), seed=0, scale=0.5)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randint(4, VOCAB, (1, 2 + i % 4), generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
