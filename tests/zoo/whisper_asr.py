"""Hugging Face Whisper (speech to text) from a tiny random config: conv front end, an encoder
whose positions are sinusoids its constructor computes without grad, a decoder with cross-attention."""
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

torch.manual_seed(0)
config = WhisperConfig(vocab_size=100, num_mel_bins=8, encoder_layers=1, decoder_layers=1, d_model=32,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                       max_source_positions=16, max_target_positions=16, pad_token_id=0, bos_token_id=1,
                       eos_token_id=2, decoder_start_token_id=1)
model = WhisperForConditionalGeneration(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
features = torch.randn(2, 8, 32)  # (batch, mel bins, frames): two conv layers halve them to 16 positions
labels = torch.randint(3, 100, (2, 6))


def step():
    return model(input_features=features, labels=labels).loss
