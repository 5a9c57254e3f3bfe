"""Check many files: the cache first, then the rest serially or across processes.

The main process walks the tree, hashes each file and asks the cache; only files the cache
does not know are checked, in worker processes when there is enough work to pay for starting
them (a pre-commit run on a few files stays in one process). Workers send each batch of
results back as soon as it is done. The result is the same whatever the number of processes or
the state of the cache: findings sorted, file errors in the order the files were found.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, Iterable

from ..catalog.loading import Catalog, load_catalog
from ..model import CheckResult, FileError

if TYPE_CHECKING:
    from pathlib import Path

    from ..config.settings import Settings
    from ..io.discovery import Missing

#: Below this much source to check, starting worker processes costs more than it saves.
SERIAL_BYTES = 512 * 1024
SERIAL_FILES = 8
#: Files per message between the main process and a worker.
MAX_BATCH = 16


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: The most worker processes a run starts, whatever ``--jobs`` asks for.
MAX_WORKERS = 64
#: Open files one worker costs the main process (its pipes), and those kept for everything else.
_FDS_PER_WORKER, _FDS_KEPT = 4, 64


def worker_count(jobs: int | None, files: int) -> int:
    """Processes for ``files`` files: ``jobs`` (None or 0: one per CPU), at most :data:`MAX_WORKERS`
    and no more than the open-file limit leaves room for."""
    wanted = jobs if jobs and jobs > 0 else available_cpus()
    limit = MAX_WORKERS
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, max(1, (soft - _FDS_KEPT) // _FDS_PER_WORKER))
    except (ImportError, OSError, ValueError):
        pass
    return max(1, min(wanted, limit, files))


def _die_with_parent(parent: int) -> None:
    """Make this worker end when the main process does (even by SIGKILL, e.g. a CI timeout)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal as _signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(_signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError, ValueError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def _signature(st: os.stat_result) -> tuple[int, int]:
    return (st.st_size, st.st_mtime_ns)


# The worker's state, set once per process (inherited on fork, sent once on spawn).
_STATE: dict = {}


def _init_worker(settings, catalog, cache, work=None, parent: int | None = None) -> None:
    if parent is not None:
        _die_with_parent(parent)
    _STATE.update(settings=settings, catalog=catalog, cache=cache, work=work)


def _check_one(item: tuple) -> tuple[int, CheckResult]:
    """Check one file and remember the result under its content key (when the file did not change).

    With a ``work`` function (``fix``), run that instead: ``work(path, settings, catalog)``, uncached.
    """
    from ..config.per_file import settings_for
    from .pipeline import check_file

    work = _STATE.get("work")
    if work is not None:
        return item[0], work(item[1], settings_for(_STATE["settings"], item[1]), _STATE["catalog"])

    from . import project_facts
    from .pipeline import display_path, file_context, read_file

    order, path, key, sig, _size = item[:5]
    data = item[5] if len(item) > 5 else None  # read by the cache probe (serial runs)
    cache = _STATE["cache"]
    settings = settings_for(_STATE["settings"], path)  # the file's own configuration
    if cache is not None and data is None and key is not None:
        data = read_file(path, settings)  # once: the key and the findings describe these bytes
    if cache is not None and isinstance(data, bytes):
        key = cache.key(data, display_path(path), settings, file_context(path))
    # Whether an import is the project's own package depends on the folders around the file, not
    # only on its bytes: the entry keeps those answers, and a later run re-checks them.
    with project_facts.recorded_lookups() as looked_up:
        result = check_file(path, settings, _STATE["catalog"], data)
    if cache is not None and key is not None and isinstance(data, bytes):
        try:
            unchanged = _signature(os.stat(path)) == sig
        except OSError:
            unchanged = False
        if unchanged:  # a manifest is read again by its checker: only while the file stays as it was
            cache.put(key, result, project_facts.settled(looked_up))
    return order, result


def _still_valid(lookups) -> bool:
    """Do the file-system answers a cached result relied on still hold?"""
    if not lookups:
        return True
    from .project_facts import is_local_package, project_fingerprint

    return all(is_local_package(*asked[:2]) == asked[2] if len(asked) == 3 else project_fingerprint(asked[0]) == asked[1]
               for asked in lookups)


def _check_batch(items: list) -> list[tuple[int, CheckResult]]:
    return [_check_one(item) for item in items]


def _pool_context():
    import multiprocessing as mp

    # fork: workers inherit the loaded catalog and imports, so they start in milliseconds.
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return mp.get_context()


def run(
    paths: Iterable[str],
    settings,
    catalog: Catalog,
    jobs: int | None = None,
    cache=None,
    progress=None,
    known: dict[str, CheckResult] | None = None,
) -> CheckResult:
    """Check every file under ``paths``. ``jobs``: processes (None or 0: one per CPU).

    ``progress``: ``start(total_files, total_bytes) -> advance(files, nbytes)`` (see
    :mod:`neuron_lint.cli.progress`), or None. ``known``: results already found for some files,
    by the path they are reported under (``check --fix``: what the fix's last analysis found).
    """
    from ..config.per_file import settings_for
    from ..io.discovery import Missing, Skipped, iter_python_files

    if known:
        from .pipeline import display_path
    from .project_facts import forget_projects

    forget_projects()  # the projects read as a whole are looked at again, once, in this run

    results: dict[int, CheckResult] = {}
    pending: list[tuple] = []  # (order, path, cache key, stat signature, size)
    pending_bytes = 0
    display = None
    for order, item in enumerate(iter_python_files(list(paths), settings)):
        if isinstance(item, Missing):
            results[order] = CheckResult(errors=[FileError(item.path, item.reason)])
            continue
        if isinstance(item, Skipped):
            results[order] = CheckResult(warnings=[FileError(item.path, item.reason)])
            continue
        path = str(item)
        found = known.get(display_path(path)) if known else None
        if found is not None:
            results[order] = found
            continue
        key = sig = data = None
        try:
            st = os.stat(path)
            size = st.st_size
            if cache is not None and stat.S_ISREG(st.st_mode) and size <= settings.max_file_bytes:
                if display is None:
                    from .pipeline import display_path as display
                    from .pipeline import file_context, read_file
                data = read_file(path, settings)  # regular files only, bounded: never a pipe or /dev/zero
                if isinstance(data, bytes):
                    key = cache.key(data, display(path), settings_for(settings, path), file_context(path))
                    sig = _signature(st)
                    hit = cache.get(key)
                    if hit is not None and not _still_valid(hit[1]):
                        hit = None
                    if hit is not None:
                        results[order] = hit[0]
                        continue
        except OSError:  # check_file reports it
            size = 0
        pending.append((order, path, key, sig, size, data))
        pending_bytes += size

    advance = progress(len(results) + len(pending), pending_bytes) if progress is not None else _no_progress
    advance(len(results))  # cached: no time left to spend on them
    workers = worker_count(jobs, len(pending))
    if workers <= 1 or pending_bytes < SERIAL_BYTES or len(pending) < SERIAL_FILES:
        _init_worker(settings, catalog, cache)
        for item in pending:
            order, result = _check_one(item)
            results[order] = result
            advance(1, item[4])
    else:
        _run_pool(pending, workers, settings, catalog, cache, results, advance)

    total = CheckResult()
    for order in sorted(results):
        total.extend(results[order])
    total.findings.sort(key=lambda f: f.sort_key)
    return total


def _no_progress(n: int, nbytes: int = 0) -> None:
    return None


def run_work(items: list[tuple[int, str, int]], settings, catalog: Catalog, work, jobs: int | None = None,
             lost=None, before_fork=None) -> dict:
    """``work(path, settings, catalog)`` for each ``(order, path, size)``, serially or across processes
    exactly as :func:`run` checks files; returns ``{order: result}``. ``lost(path)`` is the result for a
    file whose worker died. ``before_fork()``: called once before worker processes start (what it
    imports, every worker inherits instead of importing it again)."""
    pending = [(order, path, None, None, size) for order, path, size in items]
    results: dict = {}
    workers = worker_count(jobs, len(pending))
    if workers <= 1 or sum(i[4] for i in pending) < SERIAL_BYTES or len(pending) < SERIAL_FILES:
        _init_worker(settings, catalog, None, work)
        try:
            for item in pending:
                order, result = _check_one(item)
                results[order] = result
        finally:
            _STATE["work"] = None
        return results
    if before_fork is not None:
        before_fork()
    _run_pool(pending, workers, settings, catalog, None, results, work=work, lost=lost)
    return results


def _run_pool(pending, workers, settings, catalog, cache, results, advance=_no_progress, work=None, lost=None) -> None:
    # Largest files first, so no worker is left with a big file at the end. A worker reads each
    # file itself (sending the probe's bytes would cost more than reading them again).
    pending = sorted((item[:5] for item in pending), key=lambda item: -item[4])
    batch = max(1, min(MAX_BATCH, len(pending) // (workers * 8)))
    batches = [pending[i:i + batch] for i in range(0, len(pending), batch)]
    # Build the index before forking so every worker inherits it.
    from ..catalog.index import build_index
    from ..config.per_file import base_of

    build_index(catalog, base_of(settings).enabled_codes(catalog))
    initargs = (settings, catalog, cache, work, os.getpid())
    try:
        if _pool_pass(batches, workers, initargs, results, advance):
            return
    except OSError:  # no processes to be had (process or open-file limits): check here instead
        _init_worker(settings, catalog, cache, work)
        try:
            for item in pending:
                if item[0] not in results:
                    order, result = _check_one(item)
                    results[order] = result
                    advance(1, item[4])
        finally:
            _STATE["work"] = None
        return
    # A worker died (killed for memory, or a crash in Python itself), which would leave a plain
    # multiprocessing pool waiting forever. Check what is left one file per process, to name the file.
    for item in pending:
        if item[0] not in results and not _pool_pass([[item]], 1, initargs, results, advance):
            from .pipeline import display_path

            if lost is not None:
                results[item[0]] = lost(item[1])
            else:
                reason = "the process checking it died (out of memory, or a crash in Python itself); not checked"
                results[item[0]] = CheckResult(errors=[FileError(display_path(item[1]), reason)])
            advance(1, item[4])


def _pool_pass(batches, workers, initargs, results, advance) -> bool:
    """Check ``batches`` in worker processes. False when a worker died before every batch was done."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    sizes = {item[0]: item[4] for batch in batches for item in batch}
    executor = ProcessPoolExecutor(workers, mp_context=_pool_context(), initializer=_init_worker, initargs=initargs)
    futures = [executor.submit(_check_batch, b) for b in batches]
    try:
        for future in as_completed(futures):
            done = future.result()
            for order, result in done:
                results[order] = result
            advance(len(done), sum(sizes.get(order, 0) for order, _ in done))
        return True
    except BrokenProcessPool:
        for future in futures:  # keep what finished before the break
            if future.done() and not future.cancelled() and future.exception() is None:
                for order, result in future.result():
                    if order not in results:
                        results[order] = result
                        advance(1, sizes.get(order, 0))
        return False
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def iter_files(paths: Iterable[str], settings: Settings) -> Iterable[Path | Missing]:
    """The files ``check_paths`` would check under ``paths``, in order (or :class:`Missing` ones)."""
    from ..io.discovery import iter_python_files

    return iter_python_files(list(paths), settings)


def check_paths(
    paths: Iterable[str] = (".",),
    settings: Settings | None = None,
    catalog: Catalog | None = None,
    *,
    jobs: int | None = None,
    cache=None,
    progress=None,
    known: dict[str, CheckResult] | None = None,
) -> CheckResult:
    """Check every file under ``paths``; unreadable files are reported, not raised.

    ``settings``: one :class:`Settings` for every file, or a
    :class:`neuron_lint.config.per_file.SettingsTree` that gives each file its nearest configuration
    (``SettingsTree(config.from_command_line(paths))``, as the command line does).

    ``jobs``: worker processes (None: one per CPU; small inputs stay in one process).
    ``cache``: a :class:`neuron_lint.engine.cache.Cache`, or None to check every file afresh.
    ``progress``: ``start(total_files, total_bytes) -> advance(files, nbytes)``, for a progress bar
    (:mod:`neuron_lint.cli.progress`).
    ``known``: results already found, by display path (see :func:`run`); those files are not read.
    The result is the same for every ``jobs`` and cache state.
    """
    from ..config.settings import Settings

    settings = settings or Settings()
    catalog = catalog or load_catalog()
    return run(paths, settings, catalog, jobs=jobs, cache=cache, progress=progress, known=known)
