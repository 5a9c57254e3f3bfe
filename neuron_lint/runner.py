"""Check many files: the cache first, then the rest serially or across processes.

The main process walks the tree, hashes each file and asks the cache; only files the cache
does not know are checked, in worker processes when there is enough work to pay for starting
them (a pre-commit run on a few files stays in one process). Workers send each batch of
results back as soon as it is done. The result is the same whatever the number of processes or
the state of the cache: findings sorted, file errors in the order the files were found.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable

from .catalog import Catalog
from .model import CheckResult, FileError

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


def _signature(st: os.stat_result) -> tuple[int, int]:
    return (st.st_size, st.st_mtime_ns)


# The worker's state, set once per process (inherited on fork, sent once on spawn).
_STATE: dict = {}


def _init_worker(settings, catalog, cache, work=None) -> None:
    _STATE.update(settings=settings, catalog=catalog, cache=cache, work=work)


def _check_one(item: tuple) -> tuple[int, CheckResult]:
    """Check one file and remember the result under its content key (when the file did not change).

    With a ``work`` function (``fix``), run that instead: ``work(path, settings, catalog)``, uncached.
    """
    from .api import check_file

    work = _STATE.get("work")
    if work is not None:
        return item[0], work(item[1], _STATE["settings"], _STATE["catalog"])

    from . import analyzer

    order, path, key, sig, _size = item
    # Whether an import is the project's own package depends on the folders around the file, not
    # only on its bytes: the entry keeps those answers, and a later run re-checks them.
    with analyzer.recorded_lookups() as looked_up:
        result = check_file(path, _STATE["settings"], _STATE["catalog"])
    cache = _STATE["cache"]
    if cache is not None and key is not None:
        try:
            unchanged = _signature(os.stat(path)) == sig
        except OSError:
            unchanged = False
        if unchanged:  # else the key describes other bytes than the ones just checked
            cache.put(key, result, looked_up)
    return order, result


def _still_valid(lookups) -> bool:
    """Do the file-system answers a cached result relied on still hold?"""
    if not lookups:
        return True
    from .analyzer import is_local_package

    return all(is_local_package(path, top) == answer for path, top, answer in lookups)


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
) -> CheckResult:
    """Check every file under ``paths``. ``jobs``: processes (None or 0: one per CPU).

    ``progress``: ``start(total) -> advance(n)`` (see :mod:`neuron_lint.progress`), or None.
    """
    from .discovery import Missing, iter_python_files

    results: dict[int, CheckResult] = {}
    pending: list[tuple] = []  # (order, path, cache key, stat signature, size)
    pending_bytes = 0
    display = None
    for order, item in enumerate(iter_python_files(list(paths), settings)):
        if isinstance(item, Missing):
            results[order] = CheckResult(errors=[FileError(item.path, item.reason)])
            continue
        path = str(item)
        key = sig = None
        try:
            st = os.stat(path)
            size = st.st_size
            if cache is not None and size <= settings.max_file_bytes:
                with open(path, "rb") as fh:
                    data = fh.read()
                if display is None:
                    from .api import display_path as display
                key = cache.key(data, display(path))
                sig = _signature(st)
                hit = cache.get(key)
                if hit is not None and not _still_valid(hit[1]):
                    hit = None
                if hit is not None:
                    hit = hit[0]
                    results[order] = hit
                    continue
        except OSError:  # check_file reports it
            size = 0
        pending.append((order, path, key, sig, size))
        pending_bytes += size

    advance = progress(len(results) + len(pending)) if progress is not None else _no_progress
    advance(len(results))
    workers = jobs if jobs and jobs > 0 else available_cpus()
    workers = min(workers, len(pending))
    if workers <= 1 or pending_bytes < SERIAL_BYTES or len(pending) < SERIAL_FILES:
        _init_worker(settings, catalog, cache)
        for item in pending:
            order, result = _check_one(item)
            results[order] = result
            advance(1)
    else:
        _run_pool(pending, workers, settings, catalog, cache, results, advance)

    total = CheckResult()
    for order in sorted(results):
        total.extend(results[order])
    total.findings.sort(key=lambda f: f.sort_key)
    return total


def _no_progress(n: int) -> None:
    return None


def run_work(items: list[tuple[int, str, int]], settings, catalog: Catalog, work, jobs: int | None = None,
             lost=None) -> dict:
    """``work(path, settings, catalog)`` for each ``(order, path, size)``, serially or across processes
    exactly as :func:`run` checks files; returns ``{order: result}``. ``lost(path)`` is the result for a
    file whose worker died."""
    pending = [(order, path, None, None, size) for order, path, size in items]
    results: dict = {}
    workers = min(jobs if jobs and jobs > 0 else available_cpus(), len(pending))
    if workers <= 1 or sum(i[4] for i in pending) < SERIAL_BYTES or len(pending) < SERIAL_FILES:
        _init_worker(settings, catalog, None, work)
        try:
            for item in pending:
                order, result = _check_one(item)
                results[order] = result
        finally:
            _STATE["work"] = None
        return results
    _run_pool(pending, workers, settings, catalog, None, results, work=work, lost=lost)
    return results


def _run_pool(pending, workers, settings, catalog, cache, results, advance=_no_progress, work=None, lost=None) -> None:
    # Largest files first, so no worker is left with a big file at the end.
    pending = sorted(pending, key=lambda item: -item[4])
    batch = max(1, min(MAX_BATCH, len(pending) // (workers * 8)))
    batches = [pending[i:i + batch] for i in range(0, len(pending), batch)]
    # Build the index before forking so every worker inherits it.
    from .index import build_index

    build_index(catalog, settings.enabled_codes(catalog))
    initargs = (settings, catalog, cache, work)
    if _pool_pass(batches, workers, initargs, results, advance):
        return
    # A worker died (killed for memory, or a crash in Python itself), which would leave a plain
    # multiprocessing pool waiting forever. Check what is left one file per process, to name the file.
    for item in pending:
        if item[0] not in results and not _pool_pass([[item]], 1, initargs, results, advance):
            from .api import display_path

            if lost is not None:
                results[item[0]] = lost(item[1])
            else:
                reason = "the process checking it died (out of memory, or a crash in Python itself); not checked"
                results[item[0]] = CheckResult(errors=[FileError(display_path(item[1]), reason)])
            advance(1)


def _pool_pass(batches, workers, initargs, results, advance) -> bool:
    """Check ``batches`` in worker processes. False when a worker died before every batch was done."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    executor = ProcessPoolExecutor(workers, mp_context=_pool_context(), initializer=_init_worker, initargs=initargs)
    futures = [executor.submit(_check_batch, b) for b in batches]
    try:
        for future in as_completed(futures):
            done = future.result()
            for order, result in done:
                results[order] = result
            advance(len(done))
        return True
    except BrokenProcessPool:
        for future in futures:  # keep what finished before the break
            if future.done() and not future.cancelled() and future.exception() is None:
                for order, result in future.result():
                    if order not in results:
                        results[order] = result
                        advance(1)
        return False
    finally:
        executor.shutdown(wait=True, cancel_futures=True)

