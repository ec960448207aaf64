"""Hugging Face BERT (masked LM) from a tiny random config: weight init under no_grad, tied embeddings."""
import torch
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)
model = BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=32))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ids = torch.randint(0, 100, (2, 8))


def step():
    loss = model(input_ids=ids, labels=ids).loss
    return loss
