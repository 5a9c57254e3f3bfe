"""A float16 autocast and the CUDA loss scalers of its module go together.

``torch.cuda.amp.GradScaler`` switches itself off where CUDA is missing. A ``torch.cuda.amp.autocast()``
(float16 by default) rewritten for the current device while the module's scalers stay CUDA's would
run float16 on Trainium with no loss scaling: overflowing steps would no longer be skipped
(imaginaire's trainers, read set 68, whose scalers take ``**kwargs`` and are left with a note).
bfloat16 needs no scaler.
"""

from __future__ import annotations

import ast

_CUDA_SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})
_HALF = frozenset({"torch.float16", "torch.half"})


def scaled_with(ctx, call: ast.Call) -> dict:
    """``{"region": ...}`` tying the autocast ``call`` to the module's CUDA loss scalers, so that
    settle() keeps its fix only when they are rewritten too; ``{}`` for another dtype than float16,
    or when there are none."""
    # `dtype` comes second in `torch.autocast(device_type, dtype)` and `torch.cuda.amp.autocast(enabled, dtype)`
    dtype = next((k.value for k in call.keywords if k.arg == "dtype"), call.args[1] if len(call.args) > 1 else None)
    if dtype is not None and ctx.qualname(dtype) not in _HALF:
        return {}
    scalers = ctx.__dict__.get("_nrn_cuda_scalers")
    if scalers is None:
        scalers = ctx.__dict__["_nrn_cuda_scalers"] = [
            [*ctx.span(n), ctx.segment(n)[:60]] for n in ctx.walk(ctx.tree)
            if isinstance(n, ast.Call) and ctx.qualname(n.func) in _CUDA_SCALERS] if "GradScaler" in ctx.text else []
    return {"region": scalers} if scalers else {}
