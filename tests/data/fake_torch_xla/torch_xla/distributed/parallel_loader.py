class MpDeviceLoader:
    """Iterates the wrapped loader and moves each batch to the device (as PyTorch/XLA does; it does not shard)."""

    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        import torch

        for batch in self._loader:
            yield torch.utils._pytree.tree_map(lambda t: t.to(self._device) if isinstance(t, torch.Tensor) else t, batch)
