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
    if not _float16(ctx, call):
        return {}
    scalers = ctx.__dict__.get("_nrn_cuda_scalers")
    if scalers is None:
        scalers = ctx.__dict__["_nrn_cuda_scalers"] = [
            [*ctx.span(n), ctx.segment(n)[:60]] for n in ctx.walk(ctx.tree)
            if isinstance(n, ast.Call) and _cuda_scaler(ctx, n)] if "GradScaler" in ctx.text else []
    return {"region": scalers} if scalers else {}


def _float16(ctx, call: ast.Call) -> bool:
    """Does the autocast ``call`` cast to float16 (given no other dtype)?"""
    # `dtype` comes second in `torch.autocast(device_type, dtype)` and `torch.cuda.amp.autocast(enabled, dtype)`
    dtype = next((k.value for k in call.keywords if k.arg == "dtype"), call.args[1] if len(call.args) > 1 else None)
    return dtype is None or ctx.qualname(dtype) in _HALF


def _cuda_scaler(ctx, call: ast.Call) -> bool:
    """``torch.cuda.amp.GradScaler(...)``, or ``torch.amp.GradScaler("cuda")`` (``device="cuda"``)."""
    qual = ctx.qualname(call.func)
    if qual in _CUDA_SCALERS:
        return True
    device = next((k.value for k in call.keywords if k.arg == "device"), call.args[0] if call.args else None)
    return qual in _SCALERS and isinstance(device, ast.Constant) and device.value == "cuda"


_SCALERS = frozenset({"torch.GradScaler", "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"})


def decided_autocast(ctx, nodes) -> dict:
    """:func:`scaled_with` for the first float16 autocast (a ``torch.autocast``/``amp.autocast`` call
    given no other dtype) in ``nodes``, the code a device comparison decides (nnU-Net's
    ``autocast(self.device.type) if self.device.type == 'cuda' else dummy_context()``, its scaler
    ``GradScaler("cuda")`` kept by its own test, set 81); ``{}`` when there is none."""
    if "autocast" not in ctx.text:
        return {}
    for top in nodes:
        for n in ctx.walk(top):
            if isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").endswith("autocast"):
                return scaled_with(ctx, n)
    return {}


def handed_scaler_note(ctx, call: ast.Call) -> str:
    """Why the float16 autocast ``call`` stays, when it is in a function that is handed a loss scaler
    made elsewhere (:func:`_scaler_from_elsewhere`), else ``""``."""
    handed = _scaler_from_elsewhere(ctx, call)
    return (f"not rewritten: the function scales its loss with `{handed}`, made by its caller (timm's `NativeScaler` "
            "and `torch.cuda.amp.GradScaler` switch themselves off without CUDA); rewritten, this float16 autocast "
            "would run on Trainium without loss scaling. Make that scaler with `torch.amp.GradScaler(device_type)` "
            "first, or autocast to bfloat16") if handed else ""


def _scaler_from_elsewhere(ctx, call: ast.Call) -> str:
    """The name of a loss scaler that the function holding the float16 autocast ``call`` is handed and
    uses, made elsewhere (DeiT's and UniFormer's ``train_one_epoch(..., loss_scaler)`` calling
    ``loss_scaler(loss, optimizer, ...)``, read set 99: timm's ``NativeScaler`` is CUDA's ``GradScaler``,
    which switches itself off without CUDA), or ``""``. Its module's own scalers are tied by
    :func:`scaled_with` instead."""
    if not _float16(ctx, call) or "scaler" not in ctx.text.lower():
        return ""
    fn = next((p for p in ctx.ancestors(call) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None:
        return ""
    given = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs) if "scaler" in a.arg.lower()}
    for n in ctx.walk(fn) if given else ():
        if not isinstance(n, ast.Call):
            continue
        func = n.func.value if isinstance(n.func, ast.Attribute) else n.func
        if isinstance(func, ast.Name) and func.id in given:
            return func.id
    return ""
