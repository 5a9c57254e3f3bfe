"""A prefetching loader that copies the next batch to the GPU on a side stream while the current one
is used, normalising it there.

A test program for neuron-lint (tests/test_fix_runs_on_cpu.py), written in the usual CUDA style
(`torch.cuda.Stream`, `with torch.cuda.stream(...)`, `wait_stream`, `.cuda(non_blocking=True)`,
`pin_memory`, `is_cuda` and `device.type == "cuda"` checks), fixed by neuron-lint and run on
CPU-only torch before and after. It prints every batch it yields, exactly.
"""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class SyntheticImages(Dataset):
    def __init__(self, n, size=4, classes=3):
        gen = torch.Generator().manual_seed(3)
        self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=gen)
        self.labels = torch.arange(n) % classes

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


class Prefetcher:
    """Yields (normalised float images, labels) on `device`, one batch ahead of the consumer."""

    def __init__(self, loader, device, mean=MEAN, std=STD):
        self.loader = loader
        self.device = device
        self.use_stream = device.type == "cuda"
        self.mean = torch.tensor([m * 255 for m in mean], device=device).view(1, 3, 1, 1)
        self.std = torch.tensor([s * 255 for s in std], device=device).view(1, 3, 1, 1)

    def _prepare(self, images, labels):
        if self.use_stream:
            images = images.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
        else:
            images = images.to(self.device)
            labels = labels.to(self.device)
        return images.float().sub_(self.mean).div_(self.std), labels

    def __iter__(self):
        stream = torch.cuda.Stream() if self.use_stream else None
        first, batch = True, None
        for images, labels in self.loader:
            if stream is not None:
                with torch.cuda.stream(stream):
                    next_batch = self._prepare(images, labels)
            else:
                next_batch = self._prepare(images, labels)
            if not first:
                yield batch
            first = False
            if stream is not None:
                torch.cuda.current_stream().wait_stream(stream)
            batch = next_batch
            if batch[0].is_cuda:
                batch[0].record_stream(torch.cuda.current_stream())
        if not first:
            yield batch

    def __len__(self):
        return len(self.loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=4)
    opt = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(
        SyntheticImages(opt.samples), batch_size=opt.batch_size, shuffle=True,
        pin_memory=torch.cuda.is_available(), generator=torch.Generator().manual_seed(1),
    )
    prefetcher = Prefetcher(loader, device)
    print(f"batches {len(prefetcher)}")
    for i, (images, labels) in enumerate(prefetcher):
        assert images.device.type == labels.device.type
        # float32 values print exactly as Python floats
        print(f"batch {i} {tuple(images.shape)} {images.dtype} {images.device.type} labels {labels.tolist()}")
        print(f"images {images.flatten().tolist()}")


if __name__ == "__main__":
    main()
