"""Train the tiny classifier on one GPU, or on several with torchrun (DDP + AMP)."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

from data import accuracy, make_loader
from model import TinyClassifier

# Let cuDNN pick the fastest kernels for our fixed shapes.
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True


def setup_distributed():
    """Initialise NCCL when launched by torchrun; return (rank, world_size, local_rank)."""
    if "RANK" not in os.environ:
        return 0, 1, 0
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    return dist.get_rank(), dist.get_world_size(), local_rank


def main() -> float:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    rank, world_size, local_rank = setup_distributed()
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)

    model = TinyClassifier().cuda()
    if world_size > 1:
        model = DDP(model, device_ids=[local_rank])
    sparse_params = [p for n, p in model.named_parameters() if "embed" in n]
    dense_params = [p for n, p in model.named_parameters() if "embed" not in n]
    optimizers = [torch.optim.SparseAdam(sparse_params, lr=args.lr), torch.optim.AdamW(dense_params, lr=args.lr)]
    scaler = GradScaler()

    sampler = DistributedSampler(make_loader(1).dataset) if world_size > 1 else None
    loader = make_loader(args.batch_size, sampler)
    step, start = 0, time.time()
    while step < args.steps:
        for tokens, labels in loader:
            tokens = tokens.cuda(non_blocking=True)
            labels = labels.to("cuda", non_blocking=True)
            with autocast(dtype=torch.bfloat16):
                logits = model(tokens)
                loss = torch.nn.functional.cross_entropy(logits, labels)
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            for opt in optimizers:
                scaler.step(opt)
            scaler.update()
            step += 1
            if step >= args.steps:
                break

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    acc = accuracy(logits.float(), labels)
    if rank == 0:
        peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
        print(f"steps={step} loss={loss.item():.4f} acc={acc:.3f} time={time.time() - start:.1f}s peak_mem={peak:.0f}MiB")
    if world_size > 1:
        dist.destroy_process_group()
    return loss.item()


if __name__ == "__main__":
    main()
