"""Every PyTorch API a fix can write exists in torch 2.13 (the `[test]` extra) and takes the call as written.

Generic over the catalog: every rule's `fixed` examples and `fix_cases[*].after` texts are parsed;
every call of a dotted name rooted at torch (through the text's own aliases: `import torch as th`,
`import torch.distributed as dist`, `from torch import nn`) and every call on
`torch.get_device_module()` is resolved in the real torch, and its arguments are bound to the
real signature (`inspect.signature(fn).bind`), with placeholders: a positional-only parameter passed
by keyword, a missing required argument, an unknown keyword or too many positional arguments fail.
A call with `*args`/`**kwargs` is bound partially (the splat may supply the rest). Builtins without
a signature (`torch.ones`, `torch.device`, `torch.Stream`) are only checked to be callable and are
reported as skipped, with the reason.

`torch.get_device_module()` is resolved as `torch.cuda`, the module it returns on the CUDA machines
a safe fix must keep working on. Every `[fix.map]` target of rules/*.toml must resolve too, be
callable, and accept the arguments its `args` form lets through.

This replaces tests/test_fix_targets.py (names in fixed examples exist, map targets resolve and
are not newer than 2.13, the device definition and the fixers' own targets run on this host).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass

import pytest

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.fixes.plan import version_tuple

torch = pytest.importorskip("torch")
CATALOG = load_catalog()
TORCH_VERSION = (2, 13)
#: Calls whose result is a device module: `torch.get_device_module().synchronize()`.
DEVICE_MODULE_CALLS = ("torch.get_device_module",)
DEVICE_MODULE = "torch.get_device_module()"


# ------------------------------------------------------------------------------ collecting calls
def example_texts():
    """(where, text) of every fixed example and fix case result in the catalog."""
    for where, text, _ in example_pairs():
        yield where, text


def example_pairs():
    """(where, text, before) of every fixed example and fix case result in the catalog; ``before`` is
    the fix case's input (``""`` for a fixed example), whose own calls no fix wrote (a case that
    leaves accelerate's `torch.neuron.empty_cache()` arm alone)."""
    for rule in CATALOG.rules:
        if rule.manifest_only:
            continue
        for i, text in enumerate(rule.fixed):
            yield f"{rule.code} fixed[{i}]", text, ""
        for i, case in enumerate(rule.fix_cases):
            if "after" in case:
                yield f"{rule.code} fix_cases[{i}]", case["after"], case.get("before", "")


def torch_bindings(tree: ast.AST) -> dict[str, str]:
    """Names the text binds to torch: {"th": "torch", "dist": "torch.distributed", "nn": "torch.nn"}."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch":
                    if a.asname:
                        names[a.asname] = a.name
                    else:
                        names["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torch":
            for a in node.names:
                if a.name != "*":
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """``torch.accelerator.synchronize`` for ``th.accelerator.synchronize``; ``torch.get_device_module().x``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in names:
        return ".".join([names[node.id], *reversed(parts)])
    if isinstance(node, ast.Call) and parts and dotted(node.func, names) in DEVICE_MODULE_CALLS:
        return ".".join([DEVICE_MODULE, *reversed(parts)])
    return None


@dataclass(frozen=True)
class Call:
    callee: str  # "torch.accelerator.synchronize", "torch.get_device_module().stream"
    positional: int  # positional arguments before any *splat
    keywords: tuple[str, ...]
    splat: bool  # *args or **kwargs: bind partially
    text: str  # the call as written, for messages
    where: str


def calls_in(text: str, where: str = "<text>") -> list[Call]:
    tree = ast.parse(text)
    names = torch_bindings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = dotted(node.func, names)
        if callee is None:
            continue
        starred = [i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)]
        positional = starred[0] if starred else len(node.args)
        keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
        splat = bool(starred) or any(k.arg is None for k in node.keywords)
        found.append(Call(callee, positional, keywords, splat, ast.get_source_segment(text, node) or callee, where))
    return found


def example_calls() -> list[Call]:
    """Every torch call in the examples, one per callee and argument shape."""
    seen: dict[tuple, Call] = {}
    for where, text, before in example_pairs():
        try:
            calls = calls_in(text, where)
            given = {(c.callee, c.positional, c.keywords, c.splat) for c in calls_in(before)}
        except SyntaxError:
            continue  # test_every_fixed_text_parses says so
        for call in calls:
            key = (call.callee, call.positional, call.keywords, call.splat)
            if key not in given:
                seen.setdefault(key, call)
    return sorted(seen.values(), key=lambda c: (c.callee, c.positional, c.keywords, c.splat))


# ------------------------------------------------------------------------------ resolving and binding
def resolve(callee: str):
    """The object ``callee`` names in the installed torch; raises AttributeError/ImportError."""
    if callee.startswith(DEVICE_MODULE + "."):
        obj = torch.get_device_module("cuda")
        rest = callee[len(DEVICE_MODULE) + 1:].split(".")
    else:
        parts = callee.split(".")
        obj, rest = torch, parts[1:]
        for i, part in enumerate(rest):
            if not hasattr(obj, part):  # a submodule torch does not import by itself
                importlib.import_module(".".join(parts[: i + 2]))
            obj = getattr(obj, part)
        return obj
    for part in rest:
        obj = getattr(obj, part)
    return obj


_NO_SIGNATURE = object()


def bind(fn, call: Call) -> str | object | None:
    """None when the call fits ``fn``'s signature, the reason when not, _NO_SIGNATURE for builtins."""
    try:
        sig = inspect.signature(fn)
    except (ValueError, TypeError):
        return _NO_SIGNATURE
    args = [object()] * call.positional
    kwargs = {k: object() for k in call.keywords}
    try:
        (sig.bind_partial if call.splat else sig.bind)(*args, **kwargs)
    except TypeError as exc:
        return f"{exc} (signature {call.callee.rsplit('.', 1)[-1]}{sig})"
    return None


def problems(text: str) -> list[str]:
    """What is wrong with the torch calls of ``text``; [] when every one fits (builtins are not checked)."""
    out = []
    for call in calls_in(text):
        try:
            fn = resolve(call.callee)
        except (AttributeError, ImportError) as exc:
            out.append(f"{call.text}: {call.callee} does not exist in torch {torch.__version__}: {exc}")
            continue
        if not callable(fn):
            out.append(f"{call.text}: {call.callee} is not callable")
            continue
        why = bind(fn, call)
        if isinstance(why, str):
            out.append(f"{call.text}: {why}")
    return out


# ------------------------------------------------------------------------------ the catalog's calls
CALLS = example_calls()


def test_torch_is_the_version_the_fixes_target():
    assert tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) == TORCH_VERSION


def test_every_fixed_text_parses():
    bad = []
    for where, text in example_texts():
        try:
            ast.parse(text)
        except SyntaxError as exc:
            bad.append(f"{where}: {exc}")
    assert not bad


def test_calls_are_collected():
    callees = {c.callee for c in CALLS}
    assert "torch.accelerator.synchronize" in callees and "torch.accelerator.current_accelerator" in callees
    assert any(c.startswith(DEVICE_MODULE + ".") for c in callees)
    assert any(c.startswith("torch.distributed.") for c in callees)  # through `import torch.distributed as dist`


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.callee}({c.positional},{','.join(c.keywords)}{',*' if c.splat else ''})")
def test_every_call_a_fix_writes_fits_the_real_signature(call):
    try:
        fn = resolve(call.callee)
    except (AttributeError, ImportError) as exc:
        pytest.fail(f"{call.where}: `{call.text}`: {call.callee} does not exist in torch {torch.__version__}: {exc}")
    assert callable(fn), f"{call.where}: `{call.text}`: {call.callee} is not callable"
    why = bind(fn, call)
    if why is _NO_SIGNATURE:
        pytest.skip(f"{call.callee} is a builtin without a signature: only checked that it exists and is callable")
    assert why is None, f"{call.where}: `{call.text}`: {why}"


# ------------------------------------------------------------------------------ the checker itself
def test_the_checker_catches_a_positional_only_parameter_passed_by_keyword():
    # torch.accelerator.synchronize(device=None, /): `device=` is a TypeError at run time
    (why,) = problems("import torch\ntorch.accelerator.synchronize(device=device)\n")
    assert "positional only" in why and "device" in why
    (why,) = problems("import torch as th\nth.accelerator.synchronize(device=device)\n")
    assert "positional only" in why
    assert problems("import torch\ntorch.accelerator.synchronize(device)\ntorch.accelerator.synchronize()\n") == []


def test_the_checker_catches_other_misfits():
    assert "missing a required argument" in problems("import torch\ntorch.accelerator.set_device_index()\n")[0]
    assert "too many positional" in problems("import torch\ntorch.compile(model, True)\n")[0]  # fullgraph is keyword-only
    assert problems("import torch\ntorch.compile(model, fullgraph=True)\n") == []
    assert "unexpected keyword" in problems("import torch\ntorch.autocast('cpu', dtyp=torch.bfloat16)\n")[0]
    assert "too many positional" in problems("import torch.distributed as dist\ndist.get_default_backend_for_device(d, 1)\n")[0]
    assert "does not exist" in problems("from torch import accelerator\naccelerator.synchronise()\n")[0]
    assert "does not exist" in problems("import torch\ntorch.get_device_module().no_such_function()\n")[0]
    assert problems("import torch\nwith torch.get_device_module().stream(s):\n    pass\n") == []


def test_splats_bind_partially_and_builtins_are_not_checked():
    assert problems("import torch\ntorch.accelerator.synchronize(*args)\ntorch.accelerator.synchronize(**kw)\n") == []
    assert "too many positional" in problems("import torch\ntorch.accelerator.synchronize(a, b, *rest)\n")[0]
    assert problems("import torch\nx = torch.ones(2, 3, device=d)\ns = torch.Stream(priority=0)\n") == []
    assert problems("import numpy as np\nimport torch\nnp.ones(1)\nmodel.to(d)\n") == []  # not torch's


# ------------------------------------------------------------------------------ [fix.map] targets
def _map_targets():
    for rule in CATALOG.rules:
        if rule.fix is None:
            continue
        for source, entry in rule.fix.map.items():
            if isinstance(entry, dict) and "target" in entry:
                yield pytest.param(source, entry, id=f"{rule.code}:{source}")


def _forms():
    """What each `args` form of the cuda_api fixer lets through: (positional count, keywords) shapes."""
    from neuron_lint.fixes.fixers.cuda_api import _KEYWORDS

    return {
        "none": [(0, ())],
        "device": [(0, ()), (1, ())],  # a `device=` keyword is written positionally
        "index": [(0, ()), (1, ())],
        **{form: [(0, ()), (0, tuple(sorted(kws)))] for form, kws in _KEYWORDS.items()},
    }


MAP_TARGETS = list(_map_targets())


def test_map_targets_are_collected():
    assert len(MAP_TARGETS) >= 20


@pytest.mark.parametrize("source,entry", MAP_TARGETS)
def test_every_mapped_target_resolves_and_takes_what_its_form_passes(source, entry):
    target = entry["target"]
    fn = resolve(target)  # e.g. torch.get_device_module().stream
    assert callable(fn), f"{target} is not callable"
    since = version_tuple(entry.get("since", "2.6"))
    assert since <= TORCH_VERSION, f"{target}: since {entry['since']} is newer than {TORCH_VERSION}"
    resolve(source)  # the CUDA API the rule matches exists too
    form = entry.get("args", "any")
    if form == "any":
        return
    shapes = _forms()
    assert form in shapes, f"{source}: unknown args form {form!r}"
    original = resolve(source)
    checked = 0
    for positional, keywords in shapes[form]:
        if bind(original, Call(source, positional, keywords, False, source, source)) not in (None, _NO_SIGNATURE):
            continue  # the CUDA call itself does not take these: no program has it
        why = bind(fn, Call(target, positional, keywords, False, target, source))
        if why is _NO_SIGNATURE:
            continue
        assert why is None, f"{source} -> {target} with args = {form!r}: {why}"
        checked += 1
    assert checked or bind(fn, Call(target, 0, (), False, target, source)) is _NO_SIGNATURE


# ------------------------------------------------------------------------------ names that are not called
def _written_names():
    """Dotted torch names in every fixed text, called or not (attributes, flags, dtypes)."""
    names = set()
    for _, text, before in example_pairs():
        try:
            given = _names_in(ast.parse(before))
            names |= _names_in(ast.parse(text)) - given
        except SyntaxError:
            continue
    return sorted(names)


def _names_in(tree: ast.AST) -> set[str]:
    bindings = torch_bindings(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = dotted(node, bindings)
            if name and not name.startswith(DEVICE_MODULE):
                found.add(name)
    return found


def test_written_names_are_collected():
    names = _written_names()
    assert "torch.accelerator.current_accelerator" in names and "torch.accelerator.synchronize" in names


@pytest.mark.parametrize("name", _written_names())
def test_every_name_in_fixed_examples_exists(name):
    resolve(name)


# ------------------------------------------------------------------------------ running what fixes write
def test_the_device_definitions_run_on_this_cpu_host():
    """The `DEVICE` variable (scripts) and `_current_device()` helper (libraries) a fix writes."""
    from neuron_lint.fixes.apply import fix_text

    expected = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    script = fix_text("import torch\n\nx = torch.ones(2).cuda()\n", "train.py").text
    assert "DEVICE = (" in script
    scope: dict = {}
    exec(compile(script, "train.py", "exec"), scope)
    assert scope["DEVICE"] == expected and scope["x"].device.type == expected.type
    library = fix_text("import torch\n\n\ndef move(x):\n    return x.cuda()\n", "lib.py").text
    assert "def _current_device() -> torch.device:" in library
    scope = {}
    exec(compile(library, "lib.py", "exec"), scope)
    assert scope["_current_device"]() == expected
    assert scope["move"](torch.ones(1)).device.type == expected.type


def test_the_fixers_own_targets_run_on_this_cpu_host():
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    with torch.autocast(device.type, enabled=True, dtype=torch.bfloat16, cache_enabled=True):
        pass
    assert list(inspect.signature(torch.amp.GradScaler).parameters)[0] == "device"
    torch.amp.GradScaler(device.type, init_scale=1024)
    assert torch.distributed.get_default_backend_for_device(device) in ("gloo", "nccl", "neuron")
    assert torch.distributed.get_default_backend_for_device(torch.device("cuda")) == "nccl"
    # `.cuda(index)` -> `.to(torch.device(type, index))`: None, as `.cuda(None)` takes it, is the current device
    assert torch.device("cuda", None) == torch.device("cuda")
    assert torch.ones(1).to(torch.device(device.type, None)).device.type == device.type
