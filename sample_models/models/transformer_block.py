"""Step script: one transformer encoder block (self-attention + feed-forward) on random tokens."""
import torch
from torch import nn

torch.manual_seed(0)
d_model, heads, seq_len, batch = 32, 4, 10, 4


class EncoderModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 100)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = self.encoder(h)
        return self.head(h)


model = EncoderModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, 100, (batch, seq_len))
targets = torch.randint(0, 100, (batch, seq_len))


def step():
    logits = model(tokens)
    return nn.functional.cross_entropy(logits.reshape(-1, 100), targets.reshape(-1))


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
