"""A build worker's main loop (build_pool.py): once torch and Triton are
imported, say {"ready": true}; then read a job per line on stdin, compile
the kernel, answer one line: {"ok": true} or {"ok": false, "error": "..."}.

The job's module is loaded as the compiling process loads it
(loader.py), so that the kernel's source, and with it Triton's cache key,
is the same. Its output goes to stderr: stdout carries the answers alone.
Under Triton's interpreter nothing compiles; a job then checks that its
kernel loads.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what Triton or a kernel module prints must not reach the answers
    import torch  # noqa: F401 - before the first job: the start-up overlaps the compile

    from . import triton_shared_cache

    triton_shared_cache.install()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    modules: dict[str, object] = {}
    for line in sys.stdin:
        try:
            build(json.loads(line), modules)
            answer = {"ok": True}
        except Exception as err:  # noqa: BLE001 - any failure leaves the build to the launch
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}"[:1000]}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def build(job: dict, modules: dict) -> None:
    """Compile one job's kernel into Triton's cache (its launcher too)."""
    import torch

    from .loader import load_output_code
    from .triton_runtime import interpreted

    key = job["key"]
    if key not in modules:
        modules[key] = load_output_code(job["source"], "build")
    kernel = getattr(modules[key], job["kernel"])
    if interpreted():
        return
    args = [getattr(torch, a) if isinstance(a, str) else a for a in job["args"]]
    compiled = kernel.warmup(*args, grid=tuple(job["grid"]), **job["meta"])
    _build_launcher(compiled)


def _build_launcher(compiled) -> None:
    """The host module that launches the kernel, built (and cached by
    Triton) here rather than at the first launch, where this Triton
    exposes it."""
    try:
        from triton.runtime import driver

        driver.active.launcher_cls(compiled.src, compiled.metadata)
    except Exception:  # noqa: BLE001 - an internal API: without it, the launch builds it
        pass


if __name__ == "__main__":
    main()
