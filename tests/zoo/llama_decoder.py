"""Hugging Face Llama (decoder) from a tiny random config: RMSNorm, rotary embeddings, SwiGLU, GQA."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 100, (2, 8))


def step():
    loss = model(input_ids=ids, labels=ids).loss
    return loss
