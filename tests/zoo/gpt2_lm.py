"""Hugging Face GPT-2 (causal LM) from a tiny random config: Conv1D layers, tied head, causal mask."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=32))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 100, (2, 8))


def step():
    loss = model(input_ids=ids, labels=ids).loss
    return loss
