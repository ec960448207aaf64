"""Hugging Face CLIP (contrastive image-text) from a tiny random config: a text tower and a vision
tower that meet only in the contrastive loss (their projected embeddings' similarity)."""
import torch
from transformers import CLIPConfig, CLIPModel

torch.manual_seed(0)
config = CLIPConfig(
    text_config=dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                     num_attention_heads=2, max_position_embeddings=16),
    vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                       image_size=16, patch_size=8),
    projection_dim=16)
model = CLIPModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(3, 100, (2, 7))
pixels = torch.randn(2, 3, 16, 16)


def step():
    return model(input_ids=ids, pixel_values=pixels, return_loss=True).loss
