"""The ``torch.cuda`` functions a project's tests replace, which a fix must keep calling.

litgpt's tests patch ``torch.cuda.is_available`` and ``torch.cuda.device_count``
(``mock.patch("torch.cuda.is_available", return_value=True)``) to drive its device helpers on a
machine without a GPU; peft's patch ``torch.cuda.empty_cache``. Rewritten to ``torch.accelerator``,
the helpers no longer call what the tests replace, and those tests fail on every machine. Such a
name is left, with a note, in the functions those tests use: a function (or a class's method) whose
name the test module imports or calls (``from litgpt.utils import check_nvlink_connectivity``), or
a class it names in a config (mmengine's ``dict(type='EmptyCacheHook')``).

Tests also replace what a module calls by its dotted name (distributed_shampoo's
``@patch("distributed_shampoo.examples.parallelism.DDP")``) and check the arguments it gets
(``assert_called_once_with(model, device_ids=[2], output_device=2)``): a call of such a name is
left as it is (:func:`patched_in_module`).

The project is the nearest folder up from the file with a ``pyproject.toml``, ``setup.py`` or
``setup.cfg`` (or the repository root); its test modules (``test_*.py``, ``*_test.py``,
``conftest.py``, anything under a ``tests``/``test`` folder) are read once per process.
"""

from __future__ import annotations

import ast
import os
import re
import sys

from .project_scan import project_memo, project_root, source_index, source_reader

_BY_NAME = re.compile(r"""["']torch\.cuda\.(\w+)["']""")  # mock.patch("torch.cuda.is_available")
_BY_OBJECT = re.compile(r"""torch\.cuda\s*,\s*["'](\w+)["']""")  # monkeypatch.setattr(torch.cuda, "device_count", ...)
_PATCHING = ("patch", "setattr")


_NOTHING = (frozenset(), frozenset())
#: Modules whose functions a test calls that are not the code under test (``unittest.main()``).
_NOT_THE_PROJECT = frozenset(getattr(sys, "stdlib_module_names", ())) | {"torch", "mock", "pytest", "numpy", "np"}


def mocked_cuda(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """``torch.cuda.<name>`` of each function the tests of ``path``'s project replace, and the
    names of what those tests import or call (the code under test)."""
    if not path or not os.path.isfile(path):  # text with no place in a project
        return _NOTHING
    root = project_root(path)
    return _scan(root) if root else _NOTHING


def _used_names(text: str) -> set[str]:
    """What a test module imports by name, or calls on what it imports: ``from pkg.utils import
    count``, ``utils.count()``."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    modules: set[str] = set()  # names bound by imports: `utils` of `from pkg import utils`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(a.name for a in node.names)
            modules.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".")[0] for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CLASS_NAME.fullmatch(node.value):
            names.add(node.value)  # a class built from a config: mmengine's `dict(type='EmptyCacheHook')`
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            head = node.func.value
            while isinstance(head, ast.Attribute):
                head = head.value
            if isinstance(head, ast.Name) and head.id in modules and head.id not in _NOT_THE_PROJECT:
                names.add(node.func.attr)
    return names


#: A class name written as a string (a registry's ``type=``): two capitalised words at least.
_CLASS_NAME = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+")


def _is_test_module(folder_parts: tuple[str, ...], name: str) -> bool:
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test") for p in folder_parts))


def _scan(root: str) -> tuple[frozenset[str], frozenset[str]]:
    return _read_tests(root)[:2]


@project_memo(32)
def _read_tests(root: str) -> tuple[frozenset[str], frozenset[str], frozenset[tuple[str, str]]]:
    """The project's tests, read once: the ``torch.cuda`` functions they replace, the names the
    modules doing so use, and the ``(module, name)`` targets they patch by dotted name."""
    found: set[str] = set()
    used: set[str] = set()
    targets: set[tuple[str, str]] = set()
    for patched, names, dotted in source_index(root, "test_patches"):
        targets.update(dotted)
        if patched - found:
            found.update(patched)
            used.update(names)
    return frozenset(f"torch.cuda.{name}" for name in found), frozenset(used), frozenset(targets)


@source_reader("test_patches", _is_test_module)
def _patches_in(path: str, data: bytes) -> tuple | None:
    """What one test module replaces: ``torch.cuda`` names, the names it uses (when it replaces any),
    the targets it patches by dotted name."""
    dotted = set(_PATCHED_TARGET.findall(data.decode("utf-8", "replace"))) if b"patch(" in data else set()
    patched: set[str] = set()
    names: set[str] = set()
    if b"torch.cuda" in data and (b"patch" in data or b"setattr" in data):
        text = data.decode("utf-8", "replace")
        for line in text.splitlines():
            if "torch.cuda" in line and any(p in line for p in _PATCHING):
                patched.update(_BY_NAME.findall(line))
                patched.update(_BY_OBJECT.findall(line))
        if patched:
            names = _used_names(text)
    return (frozenset(patched), frozenset(names), frozenset(dotted)) if patched or dotted else None


#: ``patch("pkg.module.Name")`` (also over lines: ``@patch(\n    "pkg.module.Name"``)
_PATCHED_TARGET = re.compile(r"""patch\(\s*["']([\w.]+)\.(\w+)["']""")


def patched_in_module(path: str) -> frozenset[str]:
    """The names of ``path``'s module that its project's tests replace by dotted name."""
    if not path or not os.path.isfile(path):
        return frozenset()
    root = project_root(path)
    if not root:
        return frozenset()
    here = os.path.splitext(os.path.relpath(os.path.abspath(path), root))[0].replace(os.sep, ".")
    return frozenset(name for module, name in _patched_targets(root)
                     if here == module or here.endswith("." + module))


def _patched_targets(root: str) -> frozenset[tuple[str, str]]:
    return _read_tests(root)[2]


def mocked_by_tests(ctx, node: ast.AST) -> str:
    """A ``torch.cuda`` function at ``node`` that the project's tests replace, in a function those
    tests use, or a call of a name of the module they replace, ``node`` among its arguments (see
    :mod:`neuron_lint.fixes.mocked`), or ``""``."""
    call = next((p for p in (node, *ctx.ancestors(node)) if isinstance(p, (ast.Call, ast.stmt))), None)
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func is not node
            and (ctx.qualname(call.func) or "").startswith("torch.")):  # a torch name the module imported
        if "_nrn_patched" not in ctx.__dict__:  # asked once per module
            ctx.__dict__["_nrn_patched"] = patched_in_module(ctx.path)
        if call.func.id in ctx.__dict__["_nrn_patched"]:
            return call.func.id
    found = None
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr != "cuda":
            qual = ctx.qualname(n)
            if qual and qual.startswith("torch.cuda."):
                if found is None:
                    found = mocked_cuda(ctx.path)
                    if not found[0] or not _in_function_named(ctx, node, found[1]):
                        return ""
                if qual in found[0]:
                    return qual
    return ""


def _in_function_named(ctx, node: ast.AST, names: frozenset[str]) -> bool:
    """Is ``node`` in a function (or a method of a class) whose name the tests use?"""
    return any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and p.name in names
               for p in ctx.ancestors(node))
