"""The on-disk compile cache for C++ kernels.

Keyed by the sha256 of source, compiler identity and flags; guarded by a
filelock so concurrent processes compiling the same source build it once;
the shared object is written to a temporary name and renamed into place, so
no process ever loads a half-written file. A large source is compiled as
several translation units at once, one per core, and linked (_units).

The cache directory is not trusted: beside each object lies its record
(KEY.json: format, key, sha256 of the object), written after the object, and
an object is loaded only when its bytes match the record; one that does not,
does not load, or lacks a kernel of its source is dropped with a one-line
warning and built again. Temporary files a killed build left behind are
swept when building into their directory.

With a remote cache (remote_cache.py), an object another machine built is
fetched instead of built, and one built here is published: keyed as
locally, by the source, the compiler's identity and flags, and what
`-march=native` means on this machine (`native_target`: the processor's
model and instruction-set extensions, the architecture and the C
library), so no machine loads an object built for another instruction set
or ABI. A fetched object is
checked against the header it came with, placed as a local build is, and
then checked as every cached object is.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from filelock import FileLock

from ir_text import TircError

from .cache_heal import (
    cache_dir,
    cache_error,
    decode_json,
    drop_entry,
    read_json,
    sha256_hex,
    shape_problem,
    sweep_stale_temps,
    write_atomic,
)
from .remote_cache import remote

CXX_FLAGS = (
    "-O3",
    "-pipe",
    "-march=native",
    "-fopenmp",
    "-shared",
    "-fPIC",
    "-std=c++17",
    "-fno-math-errno",
    # Floating-point operations raise no traps the kernels observe: without
    # this, g++ 12 keeps a float comparison that selects between two values
    # (tirc_expf's NaN pass-through, `x != x ? x : r`) as a branch, and a
    # loop with a branch is not vectorized. Every pointwise loop calling exp
    # (sigmoid, SiLU, softmax's exps) ran scalar, many times slower
    # (measured: docs/design-notes.md, "C++ kernels"). Values are
    # unchanged: it drops no rounding step and assumes no finite math.
    "-fno-trapping-math",
    # Signed integers wrap around, as in PyTorch: an int32 sum past its
    # maximum is undefined in C++, and g++ folded one to INT32_MAX. It costs
    # no measurable time (measured: docs/design-notes.md, "C++ kernels").
    "-fwrapv",
    # No fused multiply-add across statements: results must round where the IR says.
    "-ffp-contract=off",
    # g++ 12.2's basic-block (SLP) vectorizer drops the conversions of a
    # double -> float -> double round trip in a constant-count loop's
    # epilogue (elements 40-45 of 47 kept 0.1 unrounded): wrong code. The
    # loop vectorizer, which the kernels' `omp simd` loops use, is unaffected.
    "-fno-tree-slp-vectorize",
    # Kernels throw nothing and use no C++ library: no unwind tables, and
    # the link leaves out libstdc++ (LIBS), which shortens every build
    # (measured: docs/design-notes.md, "C++ kernels").
    "-fno-exceptions",
    "-nodefaultlibs",
)
# What -nodefaultlibs leaves out and kernels may need: libm's scalar math
# (the prelude's declarations), libc, and libgcc's helpers (_Float16
# conversions). They go after the sources and objects.
LIBS = ("-lm", "-lc", "-lgcc")


@functools.lru_cache(maxsize=None)
def vector_math_flags() -> tuple[str, ...]:
    """glibc's libmvec (2.35 or newer on x86-64 has every function the
    prelude declares) gives vectorized exp, log, erf, tanh...; elsewhere the
    scalar libm functions are called."""
    libc, version = platform.libc_ver()
    try:
        new_enough = tuple(int(p) for p in version.split(".")[:2]) >= (2, 35)
    except ValueError:
        new_enough = False
    if platform.machine() in ("x86_64", "AMD64") and libc == "glibc" and new_enough:
        return ("-DTIRC_LIBMVEC", "-lmvec")
    return ()


@functools.lru_cache(maxsize=None)
def linker_flags() -> tuple[str, ...]:
    """The gold linker where it is installed: it links a kernel library
    faster than the default bfd (measured: docs/design-notes.md, "C++
    kernels")."""
    return ("-fuse-ld=gold",) if shutil.which("ld.gold") else ()


def flags() -> tuple[str, ...]:
    return CXX_FLAGS + vector_math_flags() + linker_flags() + LIBS


def command(cxx: str, args: list[str]) -> list[str]:
    """The compiler's command line around `args` (sources or objects, `-c`,
    `-o`): flags first, the libraries after the inputs that need them."""
    return [cxx, *CXX_FLAGS, *linker_flags(), *args, *vector_math_flags(), *LIBS]


def compiler() -> str:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or "c++"


@functools.lru_cache(maxsize=None)
def compiler_identity(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise TircError(f"no working C++ compiler ('{cxx}'); install g++ or set CXX") from None
    return out.splitlines()[0] if out else cxx


@functools.lru_cache(maxsize=None)
def native_target(cxx: str) -> str:
    """What `-march=native` builds for here, as a hash: the processor's
    model and instruction-set extensions as the kernel reports them (the
    compiler, whose identity the key holds too, maps them to its target
    options), the machine and its C library. Where /proc/cpuinfo is not
    there, the compiler's resolved target options (a g++ run, 0.1 s)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            first = f.read().split("\n\n", 1)[0]
        wanted = ("vendor_id", "cpu family", "model", "model name", "flags", "Features", "CPU part")
        cpu = "\n".join(ln for ln in first.splitlines() if ln.split(":", 1)[0].strip() in wanted)
    except OSError:
        cpu = ""
    if not cpu:
        try:
            cpu = subprocess.run(
                [cxx, "-march=native", "-Q", "--help=target"], capture_output=True, text=True, check=True
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            cpu = "unknown"
    identity = f"{platform.machine()} {platform.libc_ver()} {cpu}"
    return hashlib.sha256(identity.encode()).hexdigest()[:32]


def start_build(source: str) -> None:
    """Start building `source` now: g++ is spawned before this returns and a
    background thread only waits for it, links its units and moves the
    object into place, so Python goes on meanwhile. (A thread that also did
    the preparation would wait for the GIL at every step while the caller
    runs Python, which was slower: measured, docs/design-notes.md, "C++
    kernels".) A later build_shared_object of the same source waits for
    this one; a failure here, or a bad entry in the way, is left for it to
    report or heal."""
    cxx = compiler()
    target = _target(source, cxx)
    if target.exists() or _BUILDS.claim(target) is not None:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if _fetch_under_lock(target):
            _BUILDS.release(target)
            return
        sweep_stale_temps(target.parent)
        work = Path(tempfile.mkdtemp(dir=target.parent, suffix=".tmp"))
        build = _Build(cxx, source, work)
    except Exception:  # noqa: BLE001 - the foreground build reports it
        _BUILDS.release(target)
        return

    def finish():
        try:
            _finish(build, target)
        except Exception:  # noqa: BLE001 - reported by the foreground build
            pass
        finally:
            shutil.rmtree(work, ignore_errors=True)
            _BUILDS.release(target)

    # Not a daemon: a process that exits without loading the code (`tirc
    # compile`) waits for the build and moves it into place, instead of
    # leaving its half-built work directory in the cache.
    threading.Thread(target=finish, name="tirc-prebuild").start()


class _Builds:
    """The builds running in this process, by target: a second thread asking
    for the same object waits for the first instead of compiling again. (The
    file lock excludes other processes only: within one process filelock is
    re-entrant.) Process-wide by nature, like the file system it guards."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[Path, threading.Event] = {}

    def claim(self, target: Path) -> threading.Event | None:
        """None when the caller now owns the build; else the event to wait on."""
        with self._lock:
            if target in self._running:
                return self._running[target]
            self._running[target] = threading.Event()
            return None

    def release(self, target: Path) -> None:
        with self._lock:
            self._running.pop(target).set()


_BUILDS = _Builds()

# The layout of an entry (object and record); in the key, so that entries of
# an older layout are never read as this one's.
ENTRY_FORMAT = 1
_RECORD_FIELDS = {"format": int, "key": str, "sha256": str}


def _target(source: str, cxx: str) -> Path:
    """Where the object built from `source` lives: keyed by source, compiler and flags."""
    parts = [source, compiler_identity(cxx), native_target(cxx), *flags(), f"entry format {ENTRY_FORMAT}"]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    return cache_dir() / "cpp" / key[:2] / f"{key}.so"


def _record(target: Path) -> Path:
    """The record beside an object: its format, key and sha256."""
    return target.with_suffix(".json")


def _lock(target: Path) -> FileLock:
    return FileLock(str(target.with_suffix(".lock")))


def entry_problem(target: Path) -> str | None:
    """What is wrong with the cached object `target` (which exists), or None
    when its record is whole and its bytes are the ones the record names."""
    try:
        record = read_json(_record(target))
    except FileNotFoundError:
        return "its record is missing"
    except (OSError, ValueError) as err:
        return f"its record is unreadable: {err}"
    problem = shape_problem(record, _RECORD_FIELDS, ENTRY_FORMAT)
    if problem is not None:
        return f"its record is malformed: {problem}"
    if record["key"] != target.stem:
        return "its record is another entry's"
    try:
        digest = sha256_hex(target.read_bytes())
    except OSError as err:
        return f"unreadable: {err.strerror}"
    return None if digest == record["sha256"] else "its bytes do not match their sha256"


def _usable(target: Path) -> bool:
    return target.exists() and entry_problem(target) is None


def _place(built: Path, target: Path) -> bytes:
    """Move a built object into the cache, then write its record (so a
    reader that sees the record sees the object it describes); the
    object's bytes."""
    data = built.read_bytes()
    os.replace(built, target)
    record = {"format": ENTRY_FORMAT, "key": target.stem, "sha256": sha256_hex(data)}
    write_atomic(_record(target), json.dumps(record, sort_keys=True))
    return data


# Remote entries: the record's JSON on one line, then the object's bytes.
REMOTE_KIND = "cpp"


def _publish(target: Path, data: bytes) -> None:
    """Share an object built here through the remote cache, if one is configured."""
    store = remote()
    if store is not None:
        record = {"format": ENTRY_FORMAT, "key": target.stem, "sha256": sha256_hex(data)}
        store.put(REMOTE_KIND, target.stem, json.dumps(record, sort_keys=True).encode() + b"\n" + data)


def _fetch(target: Path) -> bool:
    """Place the object another machine built for `target` (the caller holds
    its lock); False when there is none or it is bad (dropped remotely)."""
    store = remote()
    if store is None:
        return False
    value = store.get(REMOTE_KIND, target.stem)
    if value is None:
        return False
    head, _, data = value.partition(b"\n")
    try:
        record = decode_json(head)
    except ValueError as err:
        store.drop(REMOTE_KIND, target.stem, f"its record is unreadable: {err}")
        return False
    problem = shape_problem(record, _RECORD_FIELDS, ENTRY_FORMAT)
    if problem is None and record["key"] != target.stem:
        problem = "its record is another entry's"
    if problem is None and sha256_hex(data) != record["sha256"]:
        problem = "its bytes do not match their sha256"
    if problem is not None:
        store.drop(REMOTE_KIND, target.stem, problem)
        return False
    with tempfile.NamedTemporaryFile("wb", dir=target.parent, suffix=".tmp", delete=False) as tmp:
        tmp.write(data)
    try:
        _place(Path(tmp.name), target)
    except OSError:
        Path(tmp.name).unlink(missing_ok=True)
        raise
    return True


def _fetch_under_lock(target: Path) -> bool:
    if remote() is None:
        return False
    with _lock(target):
        return _usable(target) or _fetch(target)


def build_shared_object(source: str) -> Path:
    """The path of a shared object built from `source`, compiling it if not
    cached; a bad cached one is dropped (one warning) and built again."""
    cxx = compiler()
    target = _target(source, cxx)
    if _usable(target):
        return target
    running = _BUILDS.claim(target)
    if running is not None:
        running.wait()
        if _usable(target):
            return target
        return build_shared_object(source)  # that build failed: fail here too, with its message
    try:
        _build_under_lock(cxx, source, target)
    finally:
        _BUILDS.release(target)
    return target


def _build_under_lock(cxx: str, source: str, target: Path) -> None:
    """Build `target` unless another process has meanwhile: under the file
    lock, so a bad entry is judged (and dropped) only when nobody is placing it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _lock(target):
            if target.exists():
                problem = entry_problem(target)
                if problem is None:
                    return
                drop_entry(problem, target, _record(target))
            sweep_stale_temps(target.parent)
            if _fetch(target):
                return
            work = Path(tempfile.mkdtemp(dir=target.parent, suffix=".tmp"))
            try:
                build = _Build(cxx, source, work)
                build.wait()
                _publish(target, _place(build.so, target))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except OSError as err:
        raise cache_error(target, f"cannot write to it ({err.strerror or err})") from None


def discard(target: Path, reason: str) -> None:
    """Drop a cached object that passed its check but is bad all the same
    (it does not load, or lacks a kernel): under the build's lock, so that an
    object another process is placing is not removed."""
    with _lock(target):
        store = remote()
        if store is not None:
            store.delete(REMOTE_KIND, target.stem)  # else the rebuild would fetch it again
        drop_entry(reason, target, _record(target))


def load_library(source: str):
    """The ctypes library of the kernels in `source`, compiled or from the
    cache. A cached object that does not load or lacks one of the source's
    functions is dropped and built again, once; it still being bad is a
    TircError that blames the cache."""
    names = exported_functions(source)
    path = build_shared_object(source)
    library, problem = _open(path, names)
    if problem is None:
        return library
    discard(path, problem)
    path = build_shared_object(source)
    # The dynamic loader hands back the library it already loaded from a
    # path it has seen: load the rebuilt object through a name of its own.
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp") as alias:
        shutil.copyfile(path, alias.name)
        library, problem = _open(Path(alias.name), names)
    if problem is not None:
        raise cache_error(path, f"a rebuilt entry still {problem}")
    return library


def _open(path: Path, names: list[str]):
    """(library, None), or (None, what is wrong with the object at `path`)."""
    try:
        library = ctypes.CDLL(str(path))
    except OSError as err:
        return None, f"does not load: {err}"
    missing = [name for name in names if not hasattr(library, name)]
    if missing:
        return None, f"lacks the function {missing[0]}"
    return library, None


# The functions a source exports to Python: its `extern "C"` definitions,
# each on one line as cpp.py writes them (not the prelude's `extern "C" {`).
_EXPORTED = re.compile(r'^extern "C" [^{(]*?\b(\w+)\(', re.MULTILINE)


def exported_functions(source: str) -> list[str]:
    return _EXPORTED.findall(source)


# Where a source may be cut into translation units: the line cpp.py puts
# before each kernel. Each unit is the text before the first break (the
# prelude) and a run of kernels; the whole source, a comment at each break,
# is one valid unit too.
UNIT_BREAK = "// tirc: unit\n"
# The least kernel text (characters) per unit: g++ parses the prelude again
# in each unit and the units' link is a step of its own, so a unit pays
# only with enough kernel code (measured: docs/design-notes.md, "C++
# kernels").
MIN_UNIT_CHARS = 4000


def _jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _units(source: str, jobs: int) -> list[str]:
    """The translation units to build `source` as: at most `jobs`, each with
    at least MIN_UNIT_CHARS of kernels, as runs of consecutive kernels of
    about equal length; the whole source when there is one."""
    head, *parts = source.split(UNIT_BREAK)
    ends = list(itertools.accumulate(map(len, parts)))  # where each kernel's text ends
    total = ends[-1] if ends else 0
    count = min(jobs, len(parts), total // MIN_UNIT_CHARS)
    if count < 2:
        return [source]
    bounds = [0]
    for k in range(1, count):
        # The cut nearest k/count of the text that leaves a kernel for each later unit.
        candidates = range(bounds[-1], len(parts) - (count - k))
        bounds.append(1 + min(candidates, key=lambda i: abs(ends[i] * count - total * k)))
    bounds.append(len(parts))
    return [head + UNIT_BREAK + UNIT_BREAK.join(parts[a:b]) for a, b in zip(bounds, bounds[1:])]


class _Build:
    """g++ building `source` into `work`/kernels.so: every unit compiling
    at once from the start; wait() links them (with several) and raises
    g++'s first error line if any step failed."""

    def __init__(self, cxx: str, source: str, work: Path):
        self.cxx, self.work = cxx, work
        units = _units(source, _jobs())
        self.objects = [] if len(units) == 1 else [work / f"unit{k}.o" for k in range(len(units))]
        self.processes = []
        for k, unit in enumerate(units):
            src = work / f"unit{k}.cpp"
            src.write_text(unit)
            out = (
                ["-c", str(src), "-o", str(self.objects[k])]
                if self.objects
                else [str(src), "-o", str(self.so)]
            )
            self.processes.append(_run(command(self.cxx, out)))

    @property
    def so(self) -> Path:
        return self.work / "kernels.so"

    def wait(self) -> None:
        for process in self.processes:
            _check(process)
        if self.objects:
            _check(_run(command(self.cxx, [*map(str, self.objects), "-o", str(self.so)])))


def _run(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _check(process: subprocess.Popen) -> None:
    _, stderr = process.communicate()
    if process.returncode != 0:
        lines = stderr.strip().splitlines() or ["(no output)"]
        # g++'s diagnostic line ("FILE:LINE:COL: error: ..."); the file's
        # path may itself hold the word.
        first = next((ln for ln in lines if ": error:" in ln), None)
        first = first or next((ln for ln in lines if "error" in ln), lines[0])
        raise RuntimeError(f"C++ compilation of generated kernels failed: {first.strip()}")


def _finish(build: _Build, target: Path) -> None:
    """Wait for g++ and move its object into place: atomically, so a
    concurrent reader sees a whole object or none, and under the file lock,
    so that a foreground build of another process never sees it half done."""
    build.wait()
    with _lock(target):
        if not _usable(target):
            _publish(target, _place(build.so, target))
