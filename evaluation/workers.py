"""Episodes on several threads, one writer: what `ledgermem run --workers N` runs on.

A run's time goes to waiting for the model (a hosted model takes seconds
a call); everything else (deciding, folding, appending to DuckDB) takes
milliseconds. So the workers share one lock, the writer lock, and hold it
for everything except the model call itself: a worker releases it when it
sends a request and takes it back when the response is in. The ledger and
the projection store (one DuckDB connection each, one writer per file) are
therefore only ever used by one thread at a time, every append and its
projection commit happen under the same lock, and a stream's events come
out exactly as with one worker: each stream is driven by one thread in its
own order, and a stream's prompts depend on that stream's events only.
Only the global `seq` (and so the hash chain) interleaves the streams
differently.

The first failure stops the other workers at their next turn or probe
(each of which is committed whole or not at all), and is raised once they
have stopped, so an interrupted run resumes from its ledger as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

from ledgermem.memory.backends import Backend, Completion, Message, identity

Progress = Callable[[str, int], None]
Job = Callable[[Progress], None]  # one stream's work, given the progress callback to tick


class _Stopped(Exception):
    """Raised inside a worker at its next step once another worker has failed."""


class Unlocked:
    """A backend whose calls run with the writer lock released, so other workers can write meanwhile."""

    def __init__(self, inner: Backend, lock: threading.Lock) -> None:
        self.inner, self._lock = inner, lock
        self.name, self.model = inner.name, inner.model

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        self._lock.release()
        try:
            return self.inner.complete(messages, purpose=purpose)
        finally:
            self._lock.acquire()

    def identity(self, purpose: str) -> tuple[str, str]:
        return identity(self.inner, purpose)


class WorkerPool:
    """Runs jobs on `workers` threads that share one writer lock."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        self.workers = workers
        self.lock = threading.Lock()
        self._stop = threading.Event()

    def unlocked(self, backend: Backend) -> Backend:
        return Unlocked(backend, self.lock)

    def run(self, jobs: Sequence[Job], tick: Progress) -> None:
        """Run every job (in the order given, `workers` at a time); the first failure is raised after all stop."""
        lock, stop = self.lock, self._stop
        failures: list[BaseException] = []  # in the order they happened (appended under the lock)

        def ticking(what: str, n: int) -> None:
            tick(what, n)
            if stop.is_set():
                raise _Stopped

        def one(job: Job) -> None:
            with lock:
                if stop.is_set():
                    return
                try:
                    job(ticking)
                except _Stopped:
                    return
                except BaseException as exc:
                    stop.set()
                    failures.append(exc)

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ledgermem-worker") as pool:
            futures = [pool.submit(one, job) for job in jobs]
            try:
                wait(futures)
            except BaseException:  # Ctrl-C in the main thread: let the workers finish their current step
                stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        if failures:
            raise failures[0]
