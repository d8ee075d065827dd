"""The server extension's worker process: calls into `.worker`, the load clock, restarts.

One ``ProcessPoolExecutor`` of one (spawned) process holds every open session.  A load is timed
from the moment the worker *starts* it, not from when it was queued: the worker writes the
ticket of the load it runs and when it began into shared memory (`WorkerPool.run_timed` reads
them), so worker start-up and waiting behind another load never count against a file.  A load
past its time kills the worker; every call that was queued or running then raises `Restarted`
(the store runs it again in the fresh worker, see ``store.TraceStore``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

log = logging.getLogger(__name__)
#: how often (s) a waiting load looks at the worker's clock
POLL_S = 0.1


class SessionGone(KeyError):
    """The session was closed, evicted or lost with its worker."""


class Restarted(Exception):
    """The worker was restarted (for another load) while this call was queued or running."""


class LoadTimeout(Exception):
    """This load ran in the worker for longer than its time; the worker was restarted."""


class _WorkerCall:
    """A picklable reference to a function of `.worker`, resolved in the worker process."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> Any:
        from . import worker

        return getattr(worker, self.name)(*args)


class WorkerPool:
    """The worker process, started on first use and again after a restart."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")  # not fork: the server process has threads
        self._pool: ProcessPoolExecutor | None = None
        #: bumped by every restart: a call that began in an older generation was cut off by it
        self.generation = 0
        # the load the worker runs (its ticket, 0 for none) and when it began (time.monotonic,
        # one clock for every process of the machine); written by the worker, read here
        self._running = self._ctx.Value("q", 0, lock=False)
        self._began = self._ctx.Value("d", 0.0, lock=False)
        self._tickets = itertools.count(1)

    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=self._ctx,
                                             initializer=_WorkerCall("init"),
                                             initargs=(self._running, self._began))
            self._pool.submit(_WorkerCall("warm"))  # import pandas & co. before the first request
        return self._pool

    async def run(self, name: str, *args: Any) -> Any:
        """``worker.<name>(*args)`` in the worker process (the server process never imports the
        worker module: it pulls in pandas and the widget)."""
        generation = self.generation
        future = self.pool().submit(_WorkerCall(name), *args)
        try:
            return await asyncio.wrap_future(future)
        except KeyError as exc:  # the worker does not hold that session (restarted, closed)
            raise SessionGone(str(exc.args[0]) if exc.args else "no such session") from None
        except BrokenProcessPool:
            if generation != self.generation:
                raise Restarted from None
            self._pool = None
            self.generation += 1
            raise
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if generation != self.generation and future.cancelled() and not (task and task.cancelling()):
                raise Restarted from None  # cancelled by the restart's shutdown, not by our caller
            raise

    async def run_timed(self, timeout: float, name: str, *args: Any) -> Any:
        """`run` a load (``worker.<name>(*args, ticket)``); raises `LoadTimeout` once it has run
        in the worker for ``timeout`` s (time spent queued does not count) after restarting the
        worker, `Restarted` when another load's timeout restarted it first."""
        ticket = next(self._tickets)
        call = asyncio.ensure_future(self.run(name, *args, ticket))
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=POLL_S)
                if done:
                    return call.result()
                if self._running.value == ticket and time.monotonic() - self._began.value > timeout:
                    self.restart()
                    raise LoadTimeout
        finally:
            if not call.done():
                call.cancel()
            call.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved

    def restart(self) -> None:
        """Kill the worker and forget it: the next call starts a fresh one."""
        pool, self._pool = self._pool, None
        self.generation += 1
        self._running.value = 0
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
