"""Whether a module is run (a script) or imported (a library module): where a fix may put a device.

A library module must not probe the device when it is imported (on CUDA that initialises the
driver, perhaps before a fork), so it gets a small function instead of a module-level variable.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re

from .project_scan import per_file_version, project_memo, source_index, source_reader


def is_str(node, *values) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (not values or node.value in values)


_TEST_DIRS = {"tests", "test", "testing"}
#: Test modules, and the modules of test helpers a package ships beside its code (transformers'
#: ``testing_utils.py`` with ``require_torch_gpu``; ``_test_*.py`` modules that a suite runs by hand).
_TEST_FILES = ("test_*.py", "*_test.py", "_test_*.py", "conftest.py", "testing_utils.py", "*_testing_utils.py")
_TEST_FILE = re.compile("|".join(fnmatch.translate(p) for p in _TEST_FILES))  # asked for every file of a project


def is_test_path(path: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, ``testing_utils.py`` and the like, or a file
    under a ``tests``/``test``/``testing`` folder of the project."""
    parts = _project_parts(path)
    if parts and _TEST_FILE.match(os.path.normcase(parts[-1])):
        return True
    return any(p in _TEST_DIRS for p in parts[:-1])


def non_test(parts: tuple[str, ...], name: str) -> bool:
    """For :func:`.project_scan.python_files`: is the file (its folder's parts, its name) no test?"""
    return not is_test_path(os.path.join(*parts, name))


def _project_parts(path: str) -> list[str]:
    """The parts of ``path`` inside the project: not the folders it was checked out in."""
    path = path or ""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            rel = ".."
        path = rel if not rel.startswith("..") else os.path.join(*(re.split(r"[\\/]+", path)[-3:]))
    return re.split(r"[\\/]+", path)


_TESTS_WORD = re.compile(r"(^|[_\-.])tests?($|[_\-.])", re.IGNORECASE)


def named_test_without_tests(ctx) -> bool:
    """A module named as a test (``test_*.py``, ``*_test.py``) outside any folder named for tests
    (``tests``, ElegantRL's ``unit_tests`` of check scripts) that defines no
    test, imports no test framework and runs as a script (``if __name__ == "__main__":``): a script named
    for what it tries (Wonder3D's inference script ``test_mvdiffusion_seq.py``, read set 63), where a
    CUDA check decides what runs, not which tests."""
    if "_nrn_named_test_script" not in ctx.__dict__:  # once per module: test_gate asks at every site
        ctx.__dict__["_nrn_named_test_script"] = _named_test_script(ctx)
    return ctx.__dict__["_nrn_named_test_script"]


def _named_test_script(ctx) -> bool:
    parts = _project_parts(getattr(ctx, "path", ""))
    if not any(fnmatch.fnmatch(parts[-1], p) for p in ("test_*.py", "*_test.py")) or any(
            _TESTS_WORD.search(p) for p in parts[:-1]) or not any(is_main_guard(s) for s in ctx.tree.body):
        return False
    for n in ctx.walk(ctx.tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test") or isinstance(
                n, ast.ClassDef) and n.name.startswith("Test"):
            return False
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                name.split(".")[0] in ("pytest", "unittest", "nose", "hypothesis")
                for name in [getattr(n, "module", None) or "", *(a.name for a in n.names)]):
            return False
    return True


def is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":``"""
    test = getattr(stmt, "test", None)
    return (isinstance(stmt, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1 and is_str(test.comparators[0], "__main__"))


def is_script(tree: ast.Module, path: str, test_file: bool) -> bool:
    """Is this module run rather than imported?

    Yes when it has a ``__main__`` guard, or does work at module level: a bare call
    (``main()``, ``torch.manual_seed(0)``), a loop or ``with``, or an assignment that moves
    something to the device (``model = Net().cuda()``). A module of a subpackage is imported
    whatever it does (see :func:`package_depth`), and so is one that another module of the project
    imports (lit-llama's ``generate.py``, imported by its ``finetune/*.py``).
    """
    if package_depth(path, test_file) >= 2:
        return False
    return _runs_work(tree) and not imported_by_the_project(path)


def _runs_work(tree: ast.Module) -> bool:
    """A ``__main__`` guard, or work at module level (see :func:`is_script`)."""
    for stmt in tree.body:
        if is_main_guard(stmt) or isinstance(stmt, (ast.For, ast.While, ast.With)):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return True
        if isinstance(stmt, ast.If) and any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in stmt.body):
            return True  # `if torch.cuda.is_available(): torch.cuda.synchronize()` runs at import too
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "to")
            for n in ast.walk(stmt.value)
        ):
            return True
    return False


def package_depth(path: str, test_file: bool) -> int:
    """How deep in packages the module is: 0 outside one, 1 in a top-level package whose
    ``__init__.py`` holds no code (none in the folder above either: detectron2's ``tools/``,
    diffusers' ``scripts/``, whose modules are still run as scripts), 2 in a subpackage or in a
    top-level package whose ``__init__.py`` imports or defines something (an importable library:
    denoising_diffusion_pytorch, whose modules end in a ``__main__`` demo), or a package under ``src/``
    (that layout is for installed packages: diffwave's ``predict``). ``__main__.py`` and
    test modules count 0. A module at depth 2 is imported by its package, so it is a library
    module whatever it does at module level (a registration loop: diffusers'
    ``pipelines/pipeline_utils.py``) and even with a ``__main__`` guard (detectron2's
    ``utils/collect_env.py``, imported by ``detectron2.engine``)."""
    path = path or ""
    name = os.path.basename(path)
    if not name.endswith(".py") or name == "__main__.py" or test_file:
        return 0
    try:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            # a folder of a package without an __init__.py of its own is a namespace subpackage,
            # imported as one (`lavis.datasets.data_utils`, `fastchat.train.llama2_flash_attn_monkey_patch`)
            parent = os.path.join(os.path.dirname(folder), "__init__.py")
            return 2 if os.path.isfile(parent) and _has_code(parent) else 0
        if os.path.isfile(os.path.join(os.path.dirname(folder), "__init__.py")):
            return 2
        if os.path.basename(os.path.dirname(folder)) == "src":
            return 2  # a package of a `src/` layout is installed and imported (diffwave's `inference.py`)
        return 2 if _has_code(os.path.join(folder, "__init__.py")) else 1
    except (OSError, ValueError):
        return 0


@per_file_version(missing=True)
def _has_code(init: str) -> bool:
    """Does this ``__init__.py`` hold a statement other than a docstring (an unreadable or broken
    one counts as code: nothing says the package is only a folder of scripts)?"""
    try:
        with open(init, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return True
    return any(not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in tree.body)


FORKERS = frozenset({"multiprocessing.Process", "multiprocessing.Pool", "torch.multiprocessing.Process",
                      "torch.multiprocessing.Pool", "os.fork"})


#: A call of ``Process(``/``Pool(``/``fork(``, or an import of one of them under another name: the
#: text a forking module holds (``ProcessGroup`` and ``MaxPool2d`` are not).
_FORK_HINT = re.compile(r"(?:Process|Pool|fork)\s*\(|^[ \t]*(?:from|import)[ \t][^\n]*(?:Process|Pool|fork)\b", re.MULTILINE)
_POOL_METHODS = frozenset({"map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async", "apply",
                           "apply_async"})


def forks_workers(ctx) -> bool:
    """Does the module fork worker processes that use CUDA: ``multiprocessing.Process``/``Pool`` (the
    standard library's or torch's, whose default start method forks on Linux) or ``os.fork``, with
    no ``set_start_method``/``get_context`` naming ``"spawn"`` or ``"forkserver"``, and work for them
    that names CUDA (or that cannot be found in the module)? A device probed at import starts the
    CUDA driver in the parent, and such a worker then fails (semantic-segmentation-pytorch's
    ``eval_multipro.py``: "Cannot re-initialize CUDA in forked subprocess"); workers that only load
    files (stable-dreamfusion's video loader) do not mind. Asked once per module (kept on ``ctx``)."""
    found = ctx.__dict__.get("_nrn_forks")
    if found is None:
        found = False
        text = ctx.text
        if ("Process" in text or "Pool" in text or "fork" in text) and _FORK_HINT.search(text):
            calls = [n for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)]
            spawns = any(getattr(n.func, "attr", getattr(n.func, "id", "")) in ("set_start_method", "get_context")
                         and n.args and is_str(n.args[0], "spawn", "forkserver") for n in calls)
            forks = [n for n in calls if ctx.qualname(n.func) in FORKERS]
            if forks and not spawns:
                work = [k.value for n in forks for k in n.keywords if k.arg == "target"]
                work += [n.args[0] for n in calls if isinstance(n.func, ast.Attribute) and n.func.attr in _POOL_METHODS
                         and n.args and "Pool" in ctx.text]
                found = (not work or any(ctx.qualname(n.func) == "os.fork" for n in forks)
                         or any(_names_cuda(ctx, w) for w in work))
        ctx.__dict__["_nrn_forks"] = found
    return found


def _names_cuda(ctx, work) -> bool:
    """Does the module's function ``work`` names (or a worker it cannot find) touch CUDA?"""
    fn = next((d for d in ctx.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
               and isinstance(work, ast.Name) and d.name == work.id), None)
    if fn is None:
        return True
    return any((isinstance(n, ast.Attribute) and n.attr == "cuda")
               or (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"))
               for n in ctx.walk(fn))


def child_visible_devices(ctx) -> int:
    """The line where the module gives the processes it starts their ``CUDA_VISIBLE_DEVICES``
    (audiocraft's FAD metric: ``env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)`` for TensorFlow
    subprocesses, one per GPU it counted), or 0. Its own ``os.environ`` does not count."""
    if "CUDA_VISIBLE_DEVICES" not in ctx.text:
        return 0
    for n in ctx.walk(ctx.tree):
        if (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
                and isinstance(n.slice, ast.Constant) and n.slice.value == "CUDA_VISIBLE_DEVICES"):
            return n.lineno
    return 0


_TARGETS = re.compile(rb"^[ \t-]*(?:target|_target_|class_path)[ \t]*:[ \t]*['\"]?([A-Za-z_][\w.]+)", re.MULTILINE)
# `from src.helper import (` names its module too: the names in brackets may go on below
_IMPORTS = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+|\.+)[ \t]+import[ \t]+\(?[ \t]*([\w, \t]*)|import[ \t]+([\w., \t]+))",
                      re.MULTILINE)


def imported_by_the_project(path: str) -> bool:
    """Does another module of the project around ``path`` import it by its name: a module of its
    own folder, any module when it sits at the project's root (``import generate``, ``from generate
    import ...``, ``from . import generate``), or any by its dotted path from the root (a YAML config's
    ``target:`` too)? In a
    monorepo of examples another folder's ``train.py`` is another module."""
    from .project_scan import project_root

    name = os.path.basename(path or "")
    root = project_root(path) if name.endswith(".py") else None
    if root is None:
        return False
    here = os.path.dirname(os.path.abspath(path))
    dotted = os.path.relpath(os.path.abspath(path)[:-3], root).replace(os.sep, ".")
    for importer, module in _imported_names(root).get(name[:-3], ()):
        if os.path.abspath(importer) == os.path.abspath(path):
            continue
        if here in (root, os.path.dirname(importer)) or module == dotted or module.endswith("." + dotted):
            return True
        if dotted.endswith("." + module) and os.path.abspath(path)[:-3] in _search_stems(importer, root, module):
            return True  # RWKV-v4neo/chat.py's `from src.model_run import ...`: the script's folder is on sys.path
    return False


def search_bases(module_path: str, root: str) -> list[str]:
    """The folders an absolute import in ``module_path`` may resolve from: the module's own folder
    (a script's, on ``sys.path`` when it runs) and each folder above it up to the project's root."""
    bases, folder = [], os.path.dirname(os.path.abspath(module_path))
    while True:
        bases.append(folder)
        if folder == root or os.path.dirname(folder) == folder or not folder.startswith(root):
            return bases
        folder = os.path.dirname(folder)


def import_bases(module_path: str, root: str, level: int) -> list[str]:
    """The folders an import in ``module_path`` resolves its module from: for ``from <level dots>...``
    the module's package folder, ``level - 1`` folders up; for an absolute import (level 0), the
    folders of :func:`search_bases` (RWKV's `from src.model import GPT`, run from its own folder)."""
    if not level:
        return search_bases(module_path, root)
    base = os.path.dirname(os.path.abspath(module_path))
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return [base]


def module_files(base: str, parts: list[str]) -> tuple[str, str]:
    """The two files module ``parts`` (``["synthesizer", "utils"]``) may be under ``base``."""
    stem = os.path.join(base, *parts)
    return stem + ".py", os.path.join(stem, "__init__.py")


def import_candidates(path: str, module: str, level: int) -> list[str]:
    """The files ``from <level dots><module> import ...`` in ``path`` may read (:func:`import_bases`:
    relative to its folder, or for an absolute import from the folders up to the project's root)."""
    from .project_scan import project_root

    root = project_root(path)
    if not level and not root:
        return []
    parts = module.split(".") if module else []
    return [p for base in import_bases(path, root, level) for p in module_files(base, parts) if os.path.isfile(p)]


def top_import_files(ctx):
    """``(file, module as written)`` of each project file the module imports at its top level
    (:func:`import_candidates` of every ``import`` and ``from ... import`` in its body)."""
    if not ctx.path:
        return
    for module, level in imported_modules(ctx.tree.body):
        for path in import_candidates(ctx.path, module, level):
            yield path, "." * level + module


def imported_modules(body: list[ast.stmt]) -> list[tuple[str, int]]:
    """``(module, level)`` of each ``import`` and ``from ... import`` among the statements ``body``."""
    return [m for s in body for m in ([(s.module or "", s.level)] if isinstance(s, ast.ImportFrom) else
                                      [(a.name, 0) for a in s.names] if isinstance(s, ast.Import) else [])]


def _search_stems(importer: str, root: str, module: str) -> list[str]:
    return [os.path.join(base, *module.split(".")) for base in search_bases(importer, root)]


@project_memo(16)
def _imported_names(root: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """The last part of every module name the project's modules (not its tests) import, and the
    names of ``from . import ...``, each with the files that import it and the dotted name written."""
    from .project_scan import project_files

    found: dict[str, list[tuple[str, str]]] = {}
    # a config naming a class by its dotted path (`target: ldm.modules.encoders.modules.FrozenCLIPEmbedder`,
    # instantiated with importlib: latent-diffusion and the projects built on it) imports its module
    for file, data in project_files(root, (".yaml", ".yml")):
        for m in _TARGETS.finditer(data):
            dotted = m.group(1).decode("ascii", "replace").rpartition(".")[0]
            if "." in dotted:
                found.setdefault(dotted.rsplit(".", 1)[-1], []).append((file, dotted))
    for imported in source_index(root, "imported_names"):
        for file, d in imported:
            found.setdefault(d.rsplit(".", 1)[-1], []).append((file, d))
    return {k: tuple(v) for k, v in found.items()}


@source_reader("imported_names", non_test)
def _imports_of(file: str, data: bytes) -> list[tuple[str, str]]:
    """``(file, dotted name)`` of each module the source imports (and the names of ``from . import``)."""
    out = []
    for m in _import_lines(data):
        module, names, plain = m.group(1), m.group(2), m.group(3)
        if module:  # `from pkg import name` names an object as often as a module: only `from . import`
            dotted = [n for n in names.replace(b" ", b"").split(b",")] if module.strip(b".") == b"" else []
            dotted.append(module)
        else:
            dotted = [p.strip().split(b" ")[0] for p in plain.split(b",")]
        for d in dotted:
            d = d.decode("ascii", "replace").strip(".")
            if d:
                out.append((file, d))
    return out


def _import_lines(data: bytes):
    """:data:`_IMPORTS`' matches, tried only where a line holds ``import`` (five times as fast)."""
    pos, tried = data.find(b"import"), -1
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        if start != tried:
            tried = start
            m = _IMPORTS.match(data, start)
            if m:
                yield m
        pos = data.find(b"import", pos + 6)


def top_imports(ctx) -> list[str]:
    """The modules the module imports unconditionally at its top level, by absolute name (``import
    tensorrt``, ``from torchrec.distributed import ...`` -> ``torchrec.distributed``); read once."""
    found = ctx.__dict__.get("_nrn_top_imports")
    if found is None:
        found = []
        for stmt in ctx.tree.body:
            if isinstance(stmt, ast.Import):
                found += [a.name for a in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
                found.append(stmt.module)
        ctx.__dict__["_nrn_top_imports"] = found
    return found


def module_level(body):
    """Every statement that runs at module level (into if/for/while/with/try blocks, not functions or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from module_level(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from module_level(handler.body)


def binds_torch(stmt: ast.stmt) -> bool:
    """A module-level statement that imports torch (``import torch``, or one under ``if``/``try``)."""
    if isinstance(stmt, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") and not a.asname for a in stmt.names)
    if isinstance(stmt, ast.If) and is_main_guard(stmt):
        return False  # runs after the module's definitions (see scope._imports_torch)
    if isinstance(stmt, (ast.If, ast.Try)):
        return any(binds_torch(s) for s in module_level(stmt.body))
    return False


def torch_imported_after(ctx, node: ast.AST) -> int:
    """The line of the module's first ``import torch`` when ``node`` runs at import above it (RWKV's
    ``RUN_DEVICE = 'cuda'`` before ``import torch``), else 0: what a fix writes there could not name torch."""
    first = next((s.lineno for s in ctx.tree.body if binds_torch(s)), 0)
    if not first or node.lineno >= first or ctx.enclosing_function(node) is not None:
        return 0
    return first


def optional_import(node: ast.Try):
    """The import in the body of a ``try`` that catches ``ImportError`` (or everything), else None."""
    names = set()
    for h in node.handlers:
        types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        names.update("*" if t is None else getattr(t, "id", getattr(t, "attr", "")) for t in types)
    if not names & {"*", "ImportError", "ModuleNotFoundError", "Exception"}:
        return None
    return next((s for s in node.body if isinstance(s, (ast.Import, ast.ImportFrom))), None)


_CUDA_EXTENSION = re.compile(r"[A-Za-z0-9_]+_cuda")
#: An import line naming a module that ends in ``_cuda``: the text such a module holds.
_CUDA_EXTENSION_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t][^\n]*?\b[A-Za-z0-9_]+_cuda\b", re.MULTILINE)


def cuda_extension_import(ctx) -> tuple[str, int] | None:
    """A compiled extension named for CUDA that the module imports anywhere, in a function too
    (Megatron's fused-kernel tests: ``import scaled_masked_softmax_cuda``; apex's ``xentropy_cuda``
    in lightning-thunder's notebook; set 57): (its name, the line), or None."""
    if "_nrn_cuda_extension" not in ctx.__dict__:  # asked for every finding: read once
        ctx.__dict__["_nrn_cuda_extension"] = None
        if "_cuda" not in ctx.text or not _CUDA_EXTENSION_IMPORT.search(ctx.text):  # (`is_cuda` is everywhere)
            return None
        found = []
        for n in ctx.walk(ctx.tree):
            names = ([a.name for a in n.names] if isinstance(n, ast.Import)
                     else [n.module] if isinstance(n, ast.ImportFrom) and not n.level and n.module else [])
            found += [(n.lineno, name) for name in names if _CUDA_EXTENSION.fullmatch(name.split(".")[0])]
        ctx.__dict__["_nrn_cuda_extension"] = (min(found)[1], min(found)[0]) if found else None
    return ctx.__dict__["_nrn_cuda_extension"]
