import os

import torch
import torch.distributed as dist

REDUCE_SUM = "sum"


def xla_device(n=None, devkind=None):
    return torch.device("cpu")


def mark_step(wait=False):
    return None


def wait_device_ops(devices=()):
    return None


def get_ordinal(defval=0):
    return int(os.environ.get("RANK", defval))


def get_local_ordinal(defval=0):
    return int(os.environ.get("LOCAL_RANK", defval))


def xrt_world_size(defval=1):
    return int(os.environ.get("WORLD_SIZE", defval))


world_size = xrt_world_size


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=None, finalizer=None):
    if get_ordinal() == 0:
        print(*args)


def rendezvous(tag, payload=b"", replicas=()):
    if dist.is_initialized():
        dist.barrier()
    return [payload]


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    ws = xrt_world_size()
    if ws > 1:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad.div_(ws)


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):
    reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        mark_step()
    return loss


def _to_cpu(obj):
    return torch.utils._pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, obj)


def save(data, file_or_path, master_only=True, global_master=False):
    should = not master_only or is_master_ordinal(local=not global_master)
    if should:
        torch.save(_to_cpu(data), file_or_path)
    rendezvous("torch_xla.core.xla_model.save")
