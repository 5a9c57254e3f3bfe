"""When to check a document, on which thread, and which result may be published.

Edits come faster than checks: a change starts a short timer (the debounce) and each further
change restarts it, so a burst of typing is checked once, with its last text. Opening and saving
check at once. The engine runs on one worker thread (the event loop keeps reading messages
meanwhile), one job at a time.

Every request for a unit bumps its *generation*. A job remembers the generation it was started
for; when it is done, its result is published only if no newer request came in the meantime (nor
a close), and a job still waiting for the worker when a newer one is requested does not run at
all. So the newest text always wins, and a stale result is never published over a newer one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .analysis import Analysis, Engine
from .documents import DocumentStore

logger = logging.getLogger(__name__)

#: Seconds to wait after a change before checking (each further change restarts the wait).
DEBOUNCE_SECONDS = 0.15


class Scheduler:
    def __init__(self, engine: Engine, store: DocumentStore, publish: Callable[[Analysis], None],
                 debounce: float = DEBOUNCE_SECONDS) -> None:
        self.engine = engine
        self.store = store
        self.publish = publish
        self.debounce = debounce
        self.latest: dict[str, Analysis] = {}  # the newest published result per unit
        self.planned: dict[str, Analysis] = {}  # the newest result with fixes planned, per unit
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neuron-lint-engine")
        self._generation: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        self.closed = False  # after shutdown: no more work

    # ------------------------------------------------------------- requests (event loop thread)
    def check_soon(self, key: str) -> None:
        """Check after the debounce (a change)."""
        self._request(key, self.debounce)

    def check_now(self, key: str) -> None:
        """Check as soon as the worker is free (open, save, new settings)."""
        self._request(key, 0.0)

    def forget(self, key: str) -> None:
        """The unit was closed: drop its pending work and its result."""
        self._generation[key] = self._generation.get(key, 0) + 1
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self.latest.pop(key, None)
        self.planned.pop(key, None)

    def _request(self, key: str, delay: float) -> None:
        if self.closed:
            return
        generation = self._generation[key] = self._generation.get(key, 0) + 1
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        if delay <= 0:
            self._start(key, generation)
        else:
            self._timers[key] = loop.call_later(delay, self._start, key, generation)

    def _start(self, key: str, generation: int) -> None:
        self._timers.pop(key, None)
        task = asyncio.ensure_future(self._run(key, generation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _current(self, key: str, generation: int) -> bool:
        return self._generation.get(key) == generation

    async def _run(self, key: str, generation: int) -> None:
        unit = self.store.unit(key)
        if unit is None or self.closed or not self._current(key, generation):
            return
        try:
            result = await self.in_engine(self._analyze_if_current, unit, key, generation)
        except Exception:
            logger.exception("checking %s failed", key)
            return
        if result is None or self.closed or not self._current(key, generation):
            return  # a newer change (or a close, or shutdown) came in while this one was checked
        self.latest[key] = result
        self.publish(result)

    def _analyze_if_current(self, unit, key: str, generation: int) -> Analysis | None:
        """On the worker: skip a job that a newer request made stale while it waited."""
        if not self._current(key, generation):
            return None
        return self.engine.analyze(unit)

    # ------------------------------------------------------------- the worker
    async def in_engine(self, work: Callable, *args):
        """Run ``work(*args)`` on the engine's thread and wait for it."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, work, *args)

    async def analysis(self, key: str, with_fixes: bool = False) -> Analysis | None:
        """A result for the unit's current text: the published one if it is still current (with
        the fixes planned, if asked: computed once per text, for code actions)."""
        unit = self.store.unit(key)
        if unit is None or self.closed:
            return None
        cache = self.planned if with_fixes else self.latest
        cached = cache.get(key)
        if cached is not None and cached.unit.revision == unit.revision:
            return cached
        result = await self.in_engine(self.engine.analyze, unit, with_fixes)
        if with_fixes and self.store.unit_key_for(key) is not None:
            self.planned[key] = result
        return result

    def drop_results(self) -> None:
        """Forget every result (the settings changed)."""
        self.latest.clear()
        self.planned.clear()

    def close(self) -> None:
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
