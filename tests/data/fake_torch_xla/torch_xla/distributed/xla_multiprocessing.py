import os


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(global_index, *args)`` in this process (torchrun starts one process per worker)."""
    return fn(int(os.environ.get("RANK", 0)), *args)
