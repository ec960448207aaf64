"""Weight tying: the output projection reuses the embedding matrix (one leaf, two consumers)."""
import torch
from torch import nn

torch.manual_seed(0)


class TiedLM(nn.Module):
    def __init__(self, vocab=20, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(torch.relu(self.mix(self.embed(ids))))


model = TiedLM()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ids = torch.randint(0, 20, (4, 5))


def step():
    logits = model(ids)
    return nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten())
