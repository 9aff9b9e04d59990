"""Triton kernels built in worker processes, many at a time.

Triton compiles a kernel when it is first launched, in the launching
process, one kernel after another: for a whole CNN, most of a cold compile
on a GPU machine (docs/design-notes.md, "Compile time"). A `BuildPool`
hands each build to one of several worker processes instead. A worker
loads the module that defines the kernel and compiles it for the launch's
argument types and meta-parameters (`JITFunction.warmup`), which stores
the binary and its launcher in Triton's on-disk cache; the compile's own
launch of the same kernel then finds it there. A build is only ever an
early start: a job that fails, or a worker that dies, leaves the kernel to
be compiled at its launch as before, where its error, if any, surfaces.

Workers are plain subprocesses (`python -c ...` running build_worker.py),
not multiprocessing's: a spawned multiprocessing worker imports the user's
`__main__` script again. A worker says when it is ready, and only then
takes jobs from the queue. Jobs travel as JSON lines on the worker's stdin,
the module's text only the first time a worker sees it; identical jobs are
built once per pool. The pool starts its workers when asked (`start`), so
that their start-up overlaps the stages before the first build, and only
for a program large enough to gain from them.

A process that waits for a job still queued builds queued jobs itself
meanwhile, so a pool is never slower than building in the process: each
worker imports torch and Triton first, seconds of start-up (more where
torch's modules have no cached bytecode, as on the GPU machine measured in
docs/design-notes.md, "Compile time"), during which the compile goes on.

TIRC_COMPILE_WORKERS sets the number of workers (0: build in the compiling
process); by default one per core but one, at most DEFAULT_WORKERS (more
workers starting at once slow the compiling process down more than their
builds gain), and none on the CPU, where Triton kernels run through the
interpreter and build nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from .triton_runtime import interpreted

MAX_WORKERS = 32
DEFAULT_WORKERS = 8
# Programs smaller than this (captured ops) start no workers (`start`).
MIN_OPS = 300
# The worker's program; the project root is put on its path.
WORKER = "from codegen.build_worker import main; main()"
_ROOT = str(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True)
class BuildJob:
    """One kernel to compile: `kernel` of the module whose text is `source`,
    for a launch with `args` (each positional argument: a tensor's torch
    dtype name, such as "float32", or the value itself: an int, or None),
    on `grid`, with keyword arguments `meta` (constexprs and options)."""

    source: str
    kernel: str
    args: tuple
    grid: tuple[int, ...]
    meta: tuple[tuple[str, object], ...]

    def request(self, with_source: bool) -> str:
        """The job as a worker reads it: one JSON line."""
        return json.dumps(self.message(with_source)) + "\n"

    def message(self, with_source: bool) -> dict:
        message = {
            "key": source_key(self.source),
            "kernel": self.kernel,
            "args": list(self.args),
            "grid": list(self.grid),
            "meta": dict(self.meta),
        }
        if with_source:
            message["source"] = self.source
        return message


def tensor_arg(dtype: str) -> str:
    """A job's argument for a tensor of IR dtype `dtype`: torch's name for it."""
    from ir_text import to_torch

    return str(to_torch(dtype)).removeprefix("torch.")


def source_key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:32]


def workers_wanted(device: str) -> int:
    """The pool's size for a compile on `device` (the module docstring)."""
    raw = os.environ.get("TIRC_COMPILE_WORKERS")
    if raw is not None and raw.strip().isdigit():
        return min(int(raw), MAX_WORKERS)
    if device == "cpu" or interpreted():
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(0, min(cores - 1, DEFAULT_WORKERS))


class BuildPool:
    """Worker processes that compile `BuildJob`s (the module docstring)."""

    def __init__(self, workers: int, command: list[str] | None = None):
        self.size = workers
        self._command = command or [sys.executable, "-c", WORKER]
        self._queue: queue.Queue = queue.Queue()
        self._jobs: dict[BuildJob, Future] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._live = 0
        self._closed = False
        self._modules: dict[str, object] = {}  # the modules of jobs built in this process

    def start(self, ops: int) -> None:
        """Start the workers (once) for a program of `ops` operations: each
        imports torch and Triton while the compile goes on. A program of
        fewer than MIN_OPS compiles before they would be up, and builds its
        kernels in this process."""
        with self._lock:
            if self._threads or self.size == 0 or ops < MIN_OPS:
                return
            path = os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))
            env = dict(os.environ, PYTHONPATH=path)
            self._live = self.size
            for _ in range(self.size):
                thread = threading.Thread(target=self._serve, args=(env,), daemon=True)
                thread.start()
                self._threads.append(thread)

    @property
    def started(self) -> bool:
        return bool(self._threads)

    def submit(self, jobs) -> None:
        """Queue the jobs not queued before."""
        if self.size == 0:
            return
        with self._lock:
            for job in jobs:
                if job in self._jobs:
                    continue
                self._jobs[job] = Future()
                if self._closed or (self._threads and self._live == 0):  # no worker will take it
                    self._jobs[job].set_result(False)
                else:
                    self._queue.put(job)

    def wait(self, jobs) -> dict[BuildJob, bool]:
        """Whether each job built, once every one has ended (a job never
        submitted counts as not built). While a job is still queued, this
        process builds queued jobs itself rather than wait: workers that are
        still starting up never hold a compile back."""
        with self._lock:
            futures = {job: self._jobs.get(job) for job in jobs}
        for future in futures.values():
            while future is not None and not future.done():
                try:
                    queued = self._queue.get_nowait()
                except queue.Empty:
                    future.result()
                    break
                if queued is None:  # closing: leave the stop to a worker
                    self._queue.put(None)
                    future.result()
                    break
                self._jobs[queued].set_result(self._build_here(queued))
        return {job: future is not None and future.result() for job, future in futures.items()}

    def finished(self, job: BuildJob) -> bool:
        """Whether the job has ended (built or not), without waiting."""
        future = self._jobs.get(job)
        return future is not None and future.done()

    def _build_here(self, job: BuildJob) -> bool:
        from .build_worker import build

        try:
            build(job.message(True), self._modules)
        except Exception:  # noqa: BLE001 - as in a worker: the launch compiles it again
            return False
        return True

    def close(self) -> None:
        """Stop the workers once the queued jobs are done; returns at once.
        A job submitted later is not built (its launch compiles it)."""
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._queue.put(None)
            self._threads = []

    def _serve(self, env: dict) -> None:
        """One worker's thread: start it, then feed it jobs until `close`.
        A worker that cannot start or dies fails its job and the thread
        ends; the others take the rest, and when none is left every queued
        job ends unbuilt."""
        try:
            process = subprocess.Popen(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                text=True,
            )
        except OSError:
            self._worker_lost()
            return
        seen: set[str] = set()
        try:
            if not process.stdout.readline():  # ready: torch and Triton imported
                self._worker_lost()
                return
            while True:
                job = self._queue.get()
                if job is None:
                    return
                key = source_key(job.source)
                reply = ""
                try:
                    process.stdin.write(job.request(key not in seen))
                    process.stdin.flush()
                    seen.add(key)
                    reply = process.stdout.readline()
                    built = bool(reply) and json.loads(reply).get("ok") is True
                except (OSError, ValueError):
                    built = False
                self._jobs[job].set_result(built)
                if not reply:
                    self._worker_lost()
                    return
        finally:
            try:
                process.stdin.close()
            except OSError:
                pass

    def _worker_lost(self) -> None:
        with self._lock:
            self._live -= 1
            if self._live > 0:
                return
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    return
                if job is not None and not self._jobs[job].done():
                    self._jobs[job].set_result(False)
