"""Step script: a small convolutional network on random 16x16 images."""
import torch
from torch import nn

torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = x.flatten(1)
        return self.fc(x)


model = SmallCNN()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images = torch.randn(8, 1, 16, 16)
labels = torch.randint(0, 10, (8,))


def step():
    logits = model(images)
    return nn.functional.cross_entropy(logits, labels)


if __name__ == "__main__":
    for i in range(3):
        optimizer.zero_grad()
        loss = step()
        loss.backward()
        optimizer.step()
        print(i, loss.item())
