"""What the branch of a device guard is about, where that makes the guard CUDA's own question.

A ``torch.cuda.is_available()`` that decides how a C++/CUDA extension is built, which build of a
package to install, whether the CUDA toolkit is there, or how a ``cuda:N`` key is handled asks
about CUDA itself, not about "an accelerator": Trainium needs the other branch, so the test stays
(:func:`.guards.decided_region` says why in its note).
"""

from __future__ import annotations

import ast
import re

from .name_words import string_picks_gpu


def cpu_build_choice(ctx, guard) -> str:
    """``f"tensorflow{'' if torch.cuda.is_available() else '-cpu'}"`` (yolov5's export): the string
    naming a CPU build (``-cpu``, ``faiss-cpu``) in the arm the test takes without CUDA, or ``""``."""
    choice = ctx.parent(guard)
    if isinstance(choice, ast.Assign) and len(choice.targets) == 1 and isinstance(choice.targets[0], ast.Name):
        # through a flag: `cuda = torch.cuda.is_available()`, then `'' if cuda else '-cpu'` (FastSAM's export)
        name = choice.targets[0].id
        scope = ctx.enclosing_function(choice) or ctx.tree
        arms = [n.orelse for n in ctx.walk(scope) if isinstance(n, ast.IfExp) and isinstance(n.test, ast.Name)
                and n.test.id == name]
    elif isinstance(choice, ast.IfExp) and choice.test is guard:
        arms = [choice.orelse]
    else:
        return ""
    return next((f"`{n.value!r}` (line {n.lineno})" for arm in arms for n in ast.walk(arm)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and _CPU_BUILD.search(n.value)), "")


_CPU_BUILD = re.compile(r"[-_]cpu$", re.IGNORECASE)


_TOOLKITS = frozenset({"CUDA_HOME", "CUDA_PATH"})


#: Names and flags of a C++/CUDA extension's build: what an ``if`` deciding them decides is the build.
_BUILD_NAMES = frozenset({"extra_cuda_cflags", "_is_cuda_file", "CUDAExtension", "nvcc"})
_BUILD_FLAG = re.compile(r"^-D\w*CUDA\w*$|\.cu$")


def extension_build(ctx, call: ast.AST) -> str:
    """What the ``if`` whose test holds ``call`` builds for CUDA (torchdrug's ``load_extension``: with
    CUDA, ``extra_cuda_cflags`` and ``-DCUDA_OP``; without, the ``.cu`` sources dropped), or ``""``."""
    stmt = ctx.parent(call)
    while isinstance(stmt, (ast.BoolOp, ast.UnaryOp, ast.Compare)):
        stmt = ctx.parent(stmt)
    if not isinstance(stmt, ast.If):
        return ""
    for n in (n for part in (stmt.body, stmt.orelse) for top in part for n in ast.walk(top)):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else n.arg if isinstance(
            n, ast.keyword) else ""
        if name in _BUILD_NAMES:
            return f"`{name}`, line {n.lineno if hasattr(n, 'lineno') else stmt.lineno}"
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and _BUILD_FLAG.search(n.value):
            return f"`{n.value}`, line {n.lineno}"
    return ""


def cuda_key_branch(ctx, call: ast.AST) -> str:
    r"""``re.match(r"cuda:(\d+)", key)`` (line 124) when ``call`` is in the body of an ``if`` testing
    such a match, directly or through the name it was stored in (speechbrain's RNG states restored
    from a checkpoint: a ``cuda:N`` generator exists only where CUDA does), else ``""``."""
    child, function = call, ctx.enclosing_function(call)
    for p in ctx.ancestors(call):
        if p is function:
            return ""
        if isinstance(p, ast.If) and any(s is child for s in p.body):
            tests = [p.test] + [a.value for a in ctx.walk(function or ctx.tree) if isinstance(a, ast.Assign)
                                and isinstance(p.test, ast.Name) and any(getattr(t, "id", "") == p.test.id
                                                                          for t in a.targets)]
            for n in (n for t in tests for n in ast.walk(t)):
                if (isinstance(n, ast.Call) and getattr(n.func, "attr", "") in ("match", "search", "fullmatch")
                        and n.args and isinstance(n.args[0], ast.Constant) and "cuda" in str(n.args[0].value)):
                    return f"`{ast.unparse(n)}`, line {n.lineno}"
        child = p
    return ""


def toolkit_test(ctx, call: ast.AST) -> str:
    """``CUDA_HOME`` when the test around ``call`` also asks about the CUDA toolkit (XMem's syncbn
    loader: ``if torch.cuda.is_available() and CUDA_HOME is not None:`` adds the ``.cu`` sources and
    ``-DWITH_CUDA`` to a build), else ``""``."""
    test = call
    while isinstance(ctx.parent(test), (ast.BoolOp, ast.UnaryOp)):
        test = ctx.parent(test)
    for n in ast.walk(test):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if name in _TOOLKITS:
            return name
    return ""


def gpu_path_test(ctx, call: ast.AST) -> str:
    """``dali_device == "gpu"`` when the test around ``call`` also compares something with a string that
    picks the project's GPU path (solo-learn's DALI loaders: ``if torch.cuda.is_available() and
    dali_device == "gpu":``, NVIDIA DALI's CUDA pipeline, set 60), as written, else ``""``."""
    test = call
    while isinstance(ctx.parent(test), (ast.BoolOp, ast.UnaryOp)):
        test = ctx.parent(test)
    for n in ast.walk(test):
        if isinstance(n, ast.Compare) and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) and string_picks_gpu(c.value)
                for c in (n.left, *n.comparators)):
            return ctx.segment(n)[:60]
    return ""


#: ``torch.cuda``'s RNG state per CUDA device: no fix rewrites them.
_CUDA_RNG_STATES = frozenset({"torch.cuda.get_rng_state", "torch.cuda.get_rng_state_all", "torch.cuda.set_rng_state",
                              "torch.cuda.set_rng_state_all"})


def cuda_rng_note(ctx, call: ast.AST) -> str:
    """Why a device count stays when the function around ``call`` saves or restores CUDA's
    per-device RNG states, or ``""``: avalanche's ``cuda_rng_load_state`` counts the devices whose
    states it restores with ``torch.cuda.set_rng_state``; counting NeuronCores there would warn of
    missing states on every reload while Neuron's own RNG is never restored."""
    scope = ctx.enclosing_function(call) or ctx.tree
    rng = next((f"`{ctx.qualname(n.func)}` (line {n.lineno})" for n in ctx.walk(scope)
                if isinstance(n, ast.Call) and ctx.qualname(n.func) in _CUDA_RNG_STATES), "")
    return (f"not rewritten: it counts the devices whose CUDA RNG states {rng} keeps; a count of another "
            "device's would not match them. Port the two together") if rng else ""
