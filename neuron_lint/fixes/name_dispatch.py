"""Does the project map device *names* to devices itself, knowing CUDA's and other accelerators' but
not Neuron's, and taking any other name for the CPU? mace's ``torch_tools.init_device(device_str)``:
``"cuda" in device_str`` -> CUDA, ``== "mps"``, ``== "xpu"``, else ``torch.device("cpu")``. A
``"neuron"`` chosen by a fix and handed to such a function is taken for the CPU there while the rest
of the code moves to ``neuron`` (its ``MACECalculator`` moved the model with ``.to(device)`` and kept
the batches on the CPU: read set 87). A module that calls such a function, or imports at its top a
module of its project that does, keeps its CUDA device strings.

So does a module that reaches a check taking only the device names it lists or tests, without
``"neuron"``: an ``assert device in ["cpu", "cuda"]`` (LLaMA2-Accessory's ``default_tensor_type``) or
an ``if``/``elif`` chain over the names that raises for any other (FastChat-style ``load_model``;
read sets 102 and 103). Their names are common, so they count only where the module, or a module it
imports at its top, imports or defines them.
"""

from __future__ import annotations

import ast
import os
import re

from .module_kind import import_candidates, imported_modules, non_test, top_import_files
from .project_scan import (
    MAX_BYTES,
    per_file_version,
    project_root,
    source_index,
    source_reader,
)

#: Device names that, compared with a function's parameter beside CUDA's, make it a dispatcher.
_OTHER_ACCELERATORS = frozenset({"mps", "xpu", "hpu", "npu", "mlu", "xla", "tpu", "cpu"})


#: A comparison with another accelerator's name, as text (most files have none: no parse for them).
_COMPARED_NAME = re.compile(rb"""(?:==|!=)\s*["'](?:mps|xpu|hpu|npu|mlu|xla|tpu)["']|"""
                            rb"""["'](?:mps|xpu|hpu|npu|mlu|xla|tpu)["']\s*(?:==|!=|in\b)|"""
                            rb"""startswith\(\s*["'](?:mps|xpu|hpu|npu|mlu|xla|tpu)""")
#: A name tested against CUDA's name, as text (with ``raise``: a dispatcher that refuses other names).
_COMPARED_CUDA = re.compile(rb"""\b(?:el)?if\s+\w+\s*==\s*["']cuda["']""")
#: What every match of :data:`_COMPARED_NAME` holds: looked for first, four times as fast.
_QUOTED_NAME = re.compile(rb"""["'](?:mps|xpu|hpu|npu|mlu|xla|tpu)""")


#: A dict keyed by CUDA's device name, as text (a table looked up by a device's type).
_CUDA_KEY = re.compile(rb"""["']cuda["']\s*:""")

#: A membership test in a literal list of device names, as text (``device in ["cpu", "cuda"]``).
_LISTED_NAMES = re.compile(rb"""\bin\s*[\[({]\s*["'](?:cpu|cuda|mps|xpu)["']\s*,""")


def project_dispatchers(root: str) -> tuple[tuple[str, str, int, str], ...]:
    """``(name, file, line, kind)`` of the project's device-name dispatchers: functions (kind
    ``"function"``, see the module docs) and tables looked up by a device's type that have no
    ``"neuron"`` entry (kind ``"table"``: LightGlue's ``pruning_keypoint_thresholds = {"cpu": -1,
    "mps": -1, "cuda": 1024, ...}`` read as ``[device.type]``; read set 87), and functions or classes
    that accept only the device names they list, without ``"neuron"`` (kind ``"allowlist"``, see
    :func:`_allow_lists`)."""
    return tuple(d for found in source_index(root, "device_dispatchers") for d in found)


@source_reader("device_dispatchers", non_test)
def _dispatchers_in(path: str, data: bytes, tree: ast.Module | None = None) -> list[tuple[str, str, int, str]]:
    """The dispatchers one source file defines (most files have none: no parse for them, nor when
    its ``tree`` is given)."""
    if b"cuda" not in data:
        return []
    functions = (_QUOTED_NAME.search(data) and _COMPARED_NAME.search(data)) or (
        b"raise" in data and _COMPARED_CUDA.search(data))
    tables = b".type]" in data and _CUDA_KEY.search(data)
    listed = _LISTED_NAMES.search(data)
    if not (functions or tables or listed):
        return []
    try:
        tree = tree or ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    if functions:
        found += [(node.name, path, node.lineno, kind) for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (kind := _dispatches(node))]
    if tables:
        found += [(name, path, line, "table") for name, line in _device_tables(tree)]
    if listed:
        found += [(name, path, line, "allowlist") for name, line in _allow_lists(tree)]
    return found


def _allow_lists(tree: ast.Module) -> list[tuple[str, int]]:
    """``(name, line)`` of the functions, or the classes by their ``__init__``, that check a parameter
    against a literal list of device names holding ``"cuda"`` and not ``"neuron"``, and fail otherwise
    (``assert device is None or device in ["cpu", "cuda"]``, or ``if device not in (...): raise``):
    LLaMA2-Accessory's ``default_tensor_type(dtype, device)``, read set 102, where a rewritten
    ``"cuda"`` made every model load on Trainium fail the assertion."""
    out = []
    for owner, fn in _functions(tree):
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        if any(_listed_check(n, params) for n in _own_nodes(fn)):
            out.append((owner or fn.name, fn.lineno))
    return out


def _functions(tree: ast.Module):
    """``(class name for an ``__init__``, else None; function)`` of every function of ``tree``."""
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while stack:
        node, cls = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield (cls if child.name == "__init__" else None), child
                stack.append((child, None))
            else:
                stack.append((child, child.name if isinstance(child, ast.ClassDef) else None))


def _own_nodes(fn: ast.AST):
    """The statements of ``fn``'s body and below, less its nested functions' and classes' (walked once each)."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.Assert, ast.If)) or not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.expr)):
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))


def _listed_check(node: ast.AST, params: set[str]) -> bool:
    """Is ``node`` an ``assert`` of a parameter's membership in a device-name list, or an ``if`` on
    its absence from one that raises?"""
    if isinstance(node, ast.Assert):
        tests = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
        wanted = ast.In
    elif isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise):
        tests, wanted = [node.test], ast.NotIn
    else:
        return False
    for test in tests:
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], wanted)
                and isinstance(test.left, ast.Name) and test.left.id in params
                and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set))):
            names = [e.value for e in test.comparators[0].elts if isinstance(e, ast.Constant)]
            if ("cuda" in names and "neuron" not in names and len(names) == len(test.comparators[0].elts)
                    and all(isinstance(v, str) and v in _OTHER_ACCELERATORS | {"cuda"} for v in names)):
                return True
    return False


def _device_tables(tree: ast.Module) -> list[tuple[str, int]]:
    """``(name, line)`` of the dicts assigned to a name, keyed by ``"cuda"`` and ``"cpu"`` among
    strings and without ``"neuron"``, that the module subscripts with a ``<device>.type``."""
    looked_up = {_subscripted_name(n.value) for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                 and isinstance(n.slice, ast.Attribute) and n.slice.attr == "type"}
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict)):
            continue
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        names = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", None) for t in targets]
        keys = {k.value for k in n.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        if {"cuda", "cpu"} <= keys and "neuron" not in keys:
            out += [(name, n.lineno) for name in names if name and name in looked_up]
    return out


def _subscripted_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _dispatches(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """Does ``fn`` compare its first parameter with ``"cuda"`` and another accelerator's name, never
    with ``"neuron"``, and fall back to ``torch.device("cpu")`` (``"function"``), or take only the
    names it tests (``"refuses"``, :func:`_raises_otherwise`)? ``""`` when neither."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    if not params:
        return ""
    name = params[0].arg
    names: set[str] = set()
    falls_back = False
    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            left, right = n.left, n.comparators[0]
            if isinstance(n.ops[0], (ast.Eq, ast.NotEq)):
                pair = (left, right) if _is_param(left, name) else (right, left) if _is_param(right, name) else None
                if pair and isinstance(pair[1], ast.Constant) and isinstance(pair[1].value, str):
                    names.add(pair[1].value)
            elif (isinstance(n.ops[0], ast.In) and _is_param(right, name) and isinstance(left, ast.Constant)
                  and isinstance(left.value, str)):
                names.add(left.value)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "startswith" and _is_param(n.func.value, name) and n.args and isinstance(
                    n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
                names.add(n.args[0].value)
            elif n.func.attr == "device" and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == "cpu":
                falls_back = True
    if "cuda" in names and "neuron" not in names and falls_back and names & (_OTHER_ACCELERATORS - {"cpu"}):
        return "function"
    return "refuses" if _raises_otherwise(fn, {p.arg for p in (*params, *fn.args.kwonlyargs)}) else ""


def _raises_otherwise(fn: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]) -> bool:
    """Does ``fn`` test one of its parameters against device names in an ``if``/``elif`` chain, one
    arm ``== "cuda"`` and none ``== "neuron"``, whose last ``else`` only raises (FastChat-style
    ``load_model(model_path, device)``: ``"cpu"``, ``"cuda"``, ``"mps"``, else ``ValueError(f"Invalid
    device: {device}")``, gorilla's CLI in read set 103)? One walk of ``fn``."""
    for n in ast.walk(fn):
        name = _tested_param(n, params)
        arm, names = (n, set()) if name is not None else (None, set())
        while arm is not None and _tested_param(arm, {name}) is not None:
            names.add(arm.test.comparators[0].value)
            if len(arm.orelse) == 1 and isinstance(arm.orelse[0], ast.Raise):
                if "cuda" in names and "neuron" not in names:
                    return True
                break
            arm = arm.orelse[0] if len(arm.orelse) == 1 else None
    return False


def _tested_param(node: ast.AST, params: set[str]) -> str | None:
    """The parameter ``node``, an ``if``, compares with a string (``if device == "cpu":``), or None."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq) and isinstance(node.test.left, ast.Name)
            and node.test.left.id in params):
        return None
    right = node.test.comparators[0]
    return node.test.left.id if isinstance(right, ast.Constant) and isinstance(right.value, str) else None


def _is_param(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def reached_dispatcher(ctx) -> tuple[str, str, int, str] | None:
    """The project's dispatcher (name, file, line, kind) the module calls, or that a module of its
    project it imports at its top calls, or the table a module it imports (itself, or through its
    package's ``__init__``) holds; None when there is none. Asked once per module."""
    memo = ctx.__dict__.get("_nrn_name_dispatch", False)
    if memo is not False:
        return memo
    found = None
    root = project_root(ctx.path) if ctx.path else None
    dispatchers = project_dispatchers(root) if root else ()
    if root is None or not os.path.isfile(ctx.path):
        # the module's own, where the project's index has not read it (standard input, a rule's example)
        dispatchers = (*dispatchers, *_dispatchers_in(ctx.path or "", ctx.text.encode("utf-8", "surrogatepass"), ctx.tree))
    tables = [d for d in dispatchers if d[3] == "table"]
    if tables:
        found = _importing_table(ctx, tables)
    strict = [d for d in dispatchers if d[3] in ("allowlist", "refuses")]
    if strict and found is None:
        found = _strictly_reached(ctx, strict)
    dispatchers = [d for d in dispatchers if d[3] == "function"]
    if dispatchers and found is None:
        names = {name for name, _, _, _ in dispatchers}
        called = _called(ctx.text.encode("utf-8", "surrogatepass"), frozenset(names))
        if not called:
            called = next((c for path, _ in top_import_files(ctx) for c in [_called_in(path, frozenset(names))] if c), "")
        if called:
            found = next(d for d in dispatchers if d[0] == called)
    ctx.__dict__["_nrn_name_dispatch"] = found
    return found


def _strictly_reached(ctx, strict) -> tuple[str, str, int, str] | None:
    """The check (of ``strict``: allow-lists and functions that refuse other names, whose names are
    often common, ``load_model``) the module calls where it defines or imports it at its top, or that
    a module it imports at its top calls so; None when there is none."""
    here = os.path.abspath(ctx.path)
    imported = {os.path.abspath(path) for path, _ in top_import_files(ctx)}
    called = _read_names_of(ctx.text.encode("utf-8", "surrogatepass"))
    for d in strict:
        home = os.path.abspath(d[1])
        if d[0].encode() in called and (home == here or home in imported):
            return d
    for path in sorted(imported):
        for d in strict:
            home = os.path.abspath(d[1])
            if d[0].encode() in _read_names(path)[0] and (home == path or home in _top_imports(path)):
                return d
    return None


def _read_names_of(data: bytes) -> frozenset[bytes]:
    return frozenset(m.group(1) for m in _CALL.finditer(data))


@per_file_version(missing=frozenset())
def _top_imports(path: str) -> frozenset[str]:
    """The project files the module at ``path`` imports at its top level."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(MAX_BYTES))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(os.path.abspath(c) for module, level in imported_modules(tree.body)
                     for c in import_candidates(path, module, level))


def _importing_table(ctx, tables) -> tuple[str, str, int, str] | None:
    """The table (of ``tables``) held by this module, or by a module it imports at its top, directly
    or as a package whose ``__init__`` imports it (``from lightglue import LightGlue``)."""
    held = {os.path.abspath(t[1]): t for t in tables}
    if os.path.abspath(ctx.path) in held:
        return held[os.path.abspath(ctx.path)]
    for path, _ in top_import_files(ctx):
        path = os.path.abspath(path)
        if path in held:
            return held[path]
        if os.path.basename(path) == "__init__.py":
            folder = os.path.dirname(path)
            for table_path, table in held.items():
                if os.path.dirname(table_path) == folder and os.path.splitext(os.path.basename(table_path))[0].encode() \
                        in _read_names(path)[0] | _read_names(path)[1]:
                    return table
    return None


_IMPORTED = re.compile(rb"^\s*from\s+\.([A-Za-z_]\w*)\s+import", re.MULTILINE)
_CALL = re.compile(rb"(?<!def )\b([A-Za-z_]\w*)\s*\(")


def _called(data: bytes, names: frozenset[str]) -> str:
    """The first of ``names`` (in order) the code calls (not the ``def`` of it), or ``""``."""
    calls = {m.group(1) for m in _CALL.finditer(data)} if data else set()
    return next((name for name in sorted(names) if name.encode() in calls), "")


@per_file_version(missing=(frozenset(), frozenset()))
def _read_names(path: str) -> tuple[frozenset[bytes], frozenset[bytes]]:
    """The names the module at ``path`` calls, and the sibling modules it imports (a package's
    ``__init__``: ``from .lightglue import LightGlue``), read as text."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return frozenset(), frozenset()
    return frozenset(m.group(1) for m in _CALL.finditer(data)), frozenset(m.group(1) for m in _IMPORTED.finditer(data))


def _called_in(path: str, names: frozenset[str]) -> str:
    calls = _read_names(path)[0]
    return next((name for name in sorted(names) if name.encode() in calls), "")


def dispatcher_note(ctx) -> str:
    """Why the module's CUDA device strings stay, when it reaches a dispatcher (the note), or ``""``."""
    mapped = reached_dispatcher(ctx)
    if mapped is None:
        return ""
    name, file, line, kind = mapped
    where = os.path.relpath(file, project_root(ctx.path) or os.path.dirname(file))
    if kind == "table":
        return (f"the project looks devices up by type in `{name}` ({where}:{line}), which has entries for "
                "CUDA and the CPU but none for `neuron`: the current device would raise `KeyError` there. "
                "Add an entry for it first")
    if kind == "refuses":
        return (f"the project takes only the device names it tests in `{name}` ({where}:{line}) and raises for "
                "any other, `neuron` among them: the current device's name would reach it there. Teach it the "
                "accelerator first")
    if kind == "allowlist":
        return (f"the project accepts only the device names it lists in `{name}` ({where}:{line}), and "
                "`neuron` is not among them: the current device's name would reach it and fail its check "
                "there. Add the accelerator to that list first")
    return (f"the project maps device names to devices itself in `{name}` ({where}:{line}), which knows "
            "CUDA's and other accelerators' names but not `neuron`, and takes any other name for the CPU; "
            "the current device's name would reach it and be taken for the CPU there. Teach it the "
            "accelerator first")
