"""Hugging Face T5 (encoder-decoder) from a tiny random config: relative position bias, cross-attention."""
import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
model = T5ForConditionalGeneration(T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                            num_decoder_layers=2, num_heads=2, decoder_start_token_id=0,
                                            use_cache=False))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
source = torch.randint(0, 100, (2, 8))
target = torch.randint(0, 100, (2, 6))


def step():
    loss = model(input_ids=source, labels=target).loss
    return loss
