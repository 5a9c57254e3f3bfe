"""Synthetic data: token sequences whose class is decided by their first token."""

import torch
from torch.utils.data import DataLoader, Dataset


class SyntheticTokens(Dataset):
    def __init__(self, size: int = 512, seq_len: int = 32, vocab: int = 512, classes: int = 4, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, vocab, (size, seq_len), generator=g)
        self.labels = self.tokens[:, 0] % classes

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, i):
        return self.tokens[i], self.labels[i]


def make_loader(batch_size: int, sampler=None) -> DataLoader:
    dataset = SyntheticTokens()
    return DataLoader(dataset, batch_size=batch_size, shuffle=sampler is None, sampler=sampler, pin_memory=True)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    # Accumulate in double precision so the metric is exact on large eval sets.
    correct = (logits.argmax(dim=-1) == labels).double().sum()
    return (correct / labels.numel()).item()
