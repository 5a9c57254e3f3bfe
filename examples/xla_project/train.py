"""Data-parallel regression on the legacy PyTorch/XLA path (torch-neuronx 2.9 and older).

The way Trainium training scripts were written before TorchNeuron: workers started by
``xmp.spawn``, the XLA process group, batches fed by ``MpDeviceLoader``, a step cut by
``xm.mark_step()``, ``xm.optimizer_step`` under DDP, ``xm.save`` and the bf16 environment
variables. ``neuron-lint fix --unsafe-fixes`` ports it to native TorchNeuron (see README.md).

    python train.py --out losses.json   # on the XLA path: one worker per NeuronCore
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" process group)
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

os.environ["XLA_USE_BF16"] = "1"
os.environ["PJRT_DEVICE"] = "NEURON"


def make_dataset(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=g)
    y = x @ torch.linspace(-1, 1, 8).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def train(index, flags):
    dist.init_process_group(
        "xla",
        init_method="xla://",
    )
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    dataset = make_dataset()
    sampler = DistributedSampler(
        dataset,
        num_replicas=xr.world_size(),
        rank=xr.global_ordinal(),
        shuffle=False,
    )
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    device_loader = pl.MpDeviceLoader(loader, device)
    losses = []
    for epoch in range(flags["epochs"]):
        start = time.time()
        for step, (x, y) in enumerate(device_loader):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            xm.optimizer_step(opt)
            losses.append(loss.item())
        xm.mark_step()
        elapsed = time.time() - start
        xm.master_print(f"epoch {epoch}: loss {losses[-1]:.6f} ({elapsed:.3f}s)")
    xm.rendezvous("training done")
    if xm.is_master_ordinal():
        with open(flags["out"], "w") as fh:
            json.dump({"rank": index, "losses": losses}, fh)
    xm.save(model.state_dict(), flags["checkpoint"])
    dist.destroy_process_group()  # the gloo/XLA group ends before the interpreter does


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", default="losses.json")
    parser.add_argument("--checkpoint", default="model.pt")
    flags = vars(parser.parse_args())
    xmp.spawn(train, args=(flags,))
