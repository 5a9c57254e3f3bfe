"""Where a CUDA device string goes that keeps it CUDA's: code that reads ``"cuda"`` for more than a device.

The current device's type is ``"cuda"`` on a GPU and ``"neuron"`` on Trainium, as wanted, but
``"cpu"`` on a CPU-only host, where some code that received ``"cuda"`` behaved differently:

- ``torch.autocast("cuda", ...)`` and ``GradScaler("cuda")`` switch themselves off on a host
  without CUDA; handed ``"cpu"`` they run (CPU autocast in bfloat16, other losses). A parameter
  default (timm's ``NativeScaler(device='cuda')``) or a local variable (olmo's ``autocast_device =
  "mps" if self.device.type == "mps" else "cuda"``) that reaches one of them stays;
- a parameter whose value the function checks against CUDA's name (lm_eval's ``if device not in
  ["cuda", "cpu"]: device = int(device)``) would get ``"neuron"`` there and fail the check;
- a test that passes the string through code under test and then asserts it came back
  (lm-eval's ``Namespace(device="cuda:1")`` ... ``assert cfg.device == "cuda:1"``): it is data.
"""

from __future__ import annotations

import ast

from ..checks.device_strings import device_named
from .device_choice import cuda_test, is_availability, is_test_file, short
from .device_defaults import parameter_default
from .module_kind import is_str, is_test_path

_AMP = ("GradScaler", "autocast")


#: Runtimes other than PyTorch whose calls take a device by name and know CUDA's, not Neuron's
#: (OpenVoice's ``WhisperModel(model_size, device="cuda")`` is faster-whisper's, on CTranslate2).
_OTHER_RUNTIMES = frozenset({"faster_whisper", "ctranslate2", "onnxruntime", "tensorflow", "jax", "paddle",
                             "mxnet", "cupy", "llama_cpp", "whisperx",
                             # PyTorch's, but placing their inputs for the CPU or CUDA only: OpenMMLab's
                             # `init_detector(cfg, ckpt, device=...)` then `inference_detector` moves the
                             # batch only to a CUDA model (InternImage, set 41); Isaac Gym simulates there
                             "mmdet", "mmseg", "mmdet3d", "mmpose", "mmrotate", "mmocr", "mmaction",
                             "isaacgym", "isaacgymenvs",
                             # ModelScope's `pipeline(..., device=...)` takes `cpu`, `cuda` or `gpu` and
                             # asserts on any other name (VGen's gradio app, read set 104)
                             "modelscope"})


def other_runtime_call(ctx, node) -> str:
    """The callee, when ``node`` is an argument of a call into one of :data:`_OTHER_RUNTIMES`, or is
    assigned to a name or attribute that the function (the module) hands to one (OpenNMT's
    ``self.device = "cuda"``, then ``ctranslate2.Translator(path, device=self.device)``), else ``""``.
    An arm of a conditional counts as the conditional (GPT-SoVITS's ``device = "cuda" if
    torch.cuda.is_available() else "cpu"`` before ``WhisperModel(path, device=device)``)."""
    if not _names_any(ctx, "_nrn_other_runtimes", _OTHER_RUNTIMES):  # they are imported by name
        return ""
    call = ctx.parent(node)
    while isinstance(call, ast.IfExp) and node is not call.test:
        node, call = call, ctx.parent(call)
    if isinstance(call, ast.keyword):
        call = ctx.parent(call)
    option = option_dest(call, node)
    if option:  # `parser.add_argument("--device", default="cuda:0")`, then `init_detector(..., args.device)`
        return next((callee for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)
                     and any(isinstance(a, ast.Attribute) and a.attr == option
                             for a in (*n.args, *(k.value for k in n.keywords)))
                     for callee in [_runtime_callee(ctx, n)] if callee), "")
    if isinstance(call, ast.Assign) and call.value is node and len(call.targets) == 1:
        held = ctx.segment(call.targets[0])
        scope = ctx.enclosing_function(node) or ctx.tree
        return next((callee for n in ctx.walk(scope) if isinstance(n, ast.Call)
                     and any(ctx.segment(a) == held for a in (*n.args, *(k.value for k in n.keywords)))
                     for callee in [_runtime_callee(ctx, n) or _through_own_class(ctx, n, held)] if callee), "")
    if not isinstance(call, ast.Call) or node is call.func:
        return ""
    return _runtime_callee(ctx, call)


def option_dest(call, node) -> str:
    """The destination of the command-line option whose ``default=`` is ``node`` (``--device`` ->
    ``device``), or ``""``."""
    if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"
            and any(k.arg == "default" and k.value is node for k in call.keywords)):
        return ""
    dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    dest = dest or next((f.lstrip("-") for f in flags if f.startswith("--")), flags[0].lstrip("-") if flags else "")
    return dest.replace("-", "_") if isinstance(dest, str) else ""



def _through_own_class(ctx, call: ast.Call, held: str) -> str:
    """The runtime call that the module's own class, made by ``call`` with ``held`` as an argument,
    hands that parameter to in its ``__init__`` (MuseTalk's ``AnalyzeFace(device, ...)``, whose
    ``__init__`` calls mmpose's ``init_model(..., device=self.device)``; read set 113), else ``""``."""
    if not isinstance(call.func, ast.Name):
        return ""
    cls = next((c for c in ctx.tree.body if isinstance(c, ast.ClassDef) and c.name == call.func.id), None)
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None) if cls else None
    if init is None:
        return ""
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    given = {params[i] for i, a in enumerate(call.args) if i < len(params) and ctx.segment(a) == held}
    given |= {k.arg for k in call.keywords if k.arg in params and ctx.segment(k.value) == held}
    # the parameter, and the attributes it is kept in (`self.device = device`)
    names = given | {f"self.{t.attr}" for n in ast.walk(init) if isinstance(n, ast.Assign)
                     and isinstance(n.value, ast.Name) and n.value.id in given for t in n.targets
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return next((callee for n in ast.walk(init) if isinstance(n, ast.Call)
                 and any(ctx.segment(a) in names for a in (*n.args, *(k.value for k in n.keywords)))
                 for callee in [_runtime_callee(ctx, n)] if callee), "") if given else ""


def _runtime_callee(ctx, call: ast.Call) -> str:
    qual = ctx.qualname(call.func) or ""
    if not qual and ctx.segment(call.func).split(".")[0] in _OTHER_RUNTIMES:
        # imported inside the function that uses it (OpenNMT's `import ctranslate2` in `__init__`)
        root = ctx.segment(call.func).split(".")[0]
        qual = root if any(isinstance(n, ast.Import) and any(a.name == root and not a.asname for a in n.names)
                           for n in ctx.walk(ctx.enclosing_function(call) or ctx.tree)) else ""
    return short(ctx, call.func) if qual.split(".")[0] in _OTHER_RUNTIMES else ""


def _parameter(ctx, node) -> tuple[ast.AST, str] | None:
    """(the function, the parameter's name) when ``node`` is a parameter's default (or the string of a
    ``torch.device("cuda")`` default), else None."""
    found = parameter_default(ctx, node)
    return (found[0], found[1].arg) if found else None


def _called(ctx, call: ast.Call) -> tuple[ast.expr, list]:
    """What ``call`` calls and with which positional arguments, looking through ``functools.partial``
    (open_clip's ``partial(torch.amp.autocast, device_type=device_type, ...)``)."""
    if short(ctx, call.func).rsplit(".", 1)[-1] == "partial" and call.args:
        return call.args[0], call.args[1:]
    return call.func, call.args


def _names_any(ctx, key: str, words) -> bool:
    """Does the module's text hold one of ``words``? (asked once per module, kept under ``key``)"""
    found = ctx.__dict__.get(key)
    if found is None:
        found = ctx.__dict__[key] = any(w in ctx.text for w in words)
    return found


def _amp_call_given(ctx, scope, name: str) -> ast.Call | None:
    """The first ``GradScaler``/``autocast`` call in ``scope`` that is handed the name ``name``."""
    if not _names_any(ctx, "_nrn_amp_named", _AMP):
        return None
    for n in ctx.walk(scope):
        if not isinstance(n, ast.Call):
            continue
        func, args = _called(ctx, n)
        if short(ctx, func).rsplit(".", 1)[-1] in _AMP:
            if any(isinstance(v, ast.Name) and v.id == name for v in (*args, *(k.value for k in n.keywords))):
                return n
    return None


def amp_callee(ctx, call: ast.Call) -> str:
    """The ``GradScaler``/``autocast`` that :func:`_amp_call_given` found, as written."""
    return short(ctx, _called(ctx, call)[0])


def default_for_amp(ctx, node) -> ast.Call | None:
    """The ``GradScaler``/``autocast`` call a parameter defaulting to ``node`` is given to in its
    function (timm's ``NativeScaler(device='cuda')``: ``torch.amp.GradScaler(device=device)``), or None."""
    found = _parameter(ctx, node)
    return _amp_call_given(ctx, found[0], found[1]) if found else None


def _assigned_name(ctx, node) -> tuple[ast.AST, str] | None:
    """(the function or module, the local name) when ``node`` is assigned to a name, alone or as an
    arm of a conditional expression whose test is not about CUDA (olmo's ``autocast_device = "mps" if
    self.device.type == "mps" else "cuda"``), else None. A test about CUDA (nanoGPT's ``'cuda' if
    'cuda' in device else 'cpu'``) is rewritten with the string."""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, ast.IfExp) and child is not parent.test:
        compares, available, _ = cuda_test(ctx, parent.test)
        if compares or available or is_availability(ctx, parent.test):
            return None
        child, parent = parent, ctx.parent(parent)
    if not (isinstance(parent, ast.Assign) and parent.value is child and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):
        return None
    scope = next((p for p in ctx.ancestors(parent) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))),
                 ctx.tree)
    return scope, parent.targets[0].id


def assigned_for_amp(ctx, node) -> ast.Call | None:
    """The ``GradScaler``/``autocast`` call of the same function handed a local name that is
    assigned ``node`` (:func:`_assigned_name`), or None."""
    found = _assigned_name(ctx, node)
    return _amp_call_given(ctx, *found) if found else None


def assigned_checked_as_cuda(ctx, node) -> ast.AST | None:
    """Where the same function asks whether a local name assigned ``node`` is CUDA's
    (stylegan2's ``device = "cuda"`` ... ``use_gpu=device.startswith("cuda")``), or None: with the
    current device's type there, Trainium would answer no and build a CPU model."""
    held = _attribute_compared_as_cuda(ctx, node)
    if held is not None:
        return held
    found = _assigned_name(ctx, node)
    if found is None:
        return None
    scope, name = found
    for n in ctx.walk(scope):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith" \
                and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.args and is_str(n.args[0], "cuda"):
            return n
    return None  # a comparison with "cuda" is NRN211's, rewritten with the string (nanoGPT's device_type)


def _attribute_compared_as_cuda(ctx, node) -> ast.Compare | None:
    """Where the class compares ``self.<attr>``, assigned ``node`` (alone or as an arm of a
    conditional expression), with CUDA's name outside an ``if``'s test (which NRN211 rewrites with
    it): ClassyVision's EMA hook sets ``self.device = "cuda" if device == "gpu" else "cpu"`` and
    returns ``task.use_gpu == (self.device == "cuda")``, which Trainium would answer no."""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, ast.IfExp) and child is not parent.test:
        child, parent = parent, ctx.parent(parent)
    if not (isinstance(parent, ast.Assign) and parent.value is child and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return None
    cls = next((p for p in ctx.ancestors(parent) if isinstance(p, ast.ClassDef)), None)
    for n in ctx.walk(cls) if cls is not None else ():
        if not isinstance(n, ast.Compare) or isinstance(ctx.parent(n), (ast.If, ast.IfExp, ast.While)):
            continue
        operands = [n.left, *n.comparators]
        if any(_names_cuda(o) for o in operands) and any(
                isinstance(o, ast.Attribute) and o.attr == target.attr and isinstance(o.value, ast.Name)
                and o.value.id == "self" for o in operands):
            return n
    return None


def _names_cuda(node) -> bool:
    """``"cuda"``, a collection holding it, or ``torch.device("cuda")`` (stable-diffusion's
    ``if device == torch.device("cuda"): ... else: raise ValueError``)."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "device":
        return len(node.args) == 1 and is_str(node.args[0], "cuda")
    return is_str(node, "cuda") or (isinstance(node, (ast.List, ast.Tuple, ast.Set))
                                    and any(is_str(e, "cuda") for e in node.elts))


def default_checked_as_cuda(ctx, node) -> ast.Compare | None:
    """The comparison in its function of a parameter defaulting to ``node`` with CUDA's name
    (``device == "cuda"``, ``device not in ["cuda", "cpu"]``), or None. The ``except`` handlers of
    a ``try`` are left out: they are the fallback for torch releases the fixed code no longer meets."""
    found = _parameter(ctx, node)
    if found is None:
        return None
    fn, name = found
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Try):  # its handlers are the fallback for older releases (timm's fast_norm)
            todo.extend([*n.body, *n.orelse, *n.finalbody])
            continue
        todo.extend(ast.iter_child_nodes(n))
        if isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
            if (any(isinstance(o, ast.Name) and o.id == name for o in operands)
                    and any(_names_cuda(o) for o in operands)):
                return n
    return None


def asserted_by_test(ctx, node) -> ast.AST | None:
    """In test code, the comparison of the test function holding the string ``node`` with the same
    string (``assert cfg.device == "cuda:1"``, ``self.assertEqual(cfg.device, "cuda:1")``), or None;
    None too for a test whose decorators (or its class's) speak of CUDA: it runs on CUDA only."""
    if not (is_str(node) and is_test_path(getattr(ctx, "path", ""))):
        return None
    fn = next((p for p in ctx.ancestors(node) if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None or any("cuda" in (ctx.segment(d) or "").lower() for p in (fn, *ctx.ancestors(fn))
                         if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         for d in p.decorator_list):
        return None  # a test that runs on CUDA only (lerobot's skipif): the string is its device there
    if any(isinstance(p, ast.If) and "cuda" in (ctx.segment(p.test) or "").lower() for p in ctx.ancestors(node)):
        return None  # the same under `if torch.cuda.is_available():`
    for n in ctx.walk(fn):
        if isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
        elif isinstance(n, ast.Call) and getattr(n.func, "attr", "").startswith("assert"):
            operands = list(n.args)
        else:
            continue
        if any(o is not node and is_str(o, node.value) for o in operands):
            return n
    return None


def parametrize_value(ctx, node) -> bool:
    """Is ``node`` an element of the values of ``@pytest.mark.parametrize("device", [...])``?"""
    container = ctx.parent(node)
    call = ctx.parent(container)
    return (isinstance(container, (ast.List, ast.Tuple)) and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr == "parametrize"
            and len(call.args) >= 2 and call.args[1] is container)


def sole_test_device(ctx, node) -> ast.Call | None:
    """The decorator of a test that runs it on CUDA alone, with ``node`` as its only device: torchani's
    ``@expand(device="cuda")`` (its test base class skips CUDA classes without CUDA), a one-element
    ``@pytest.mark.parametrize("device", ["cuda"])``; None elsewhere, and outside test code. Such a
    test is a CUDA test (its author gave it no CPU variant); rewritten, a CPU-only host would run it
    on the CPU (torchani's cuAEV tests then failed there: read set 87)."""
    if not is_test_file(ctx):
        return None
    parent = ctx.parent(node)
    if isinstance(parent, ast.keyword) and parent.arg and device_named(parent.arg):
        call = ctx.parent(parent)
    elif parametrize_value(ctx, node) and len(parent.elts) == 1:
        call = ctx.parent(parent)
    else:
        return None
    owner = ctx.parent(call)
    if isinstance(owner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            d is call for d in owner.decorator_list):
        return call
    return None
