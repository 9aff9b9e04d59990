"""The remote cache across machines: cold compile against a second
machine's compile that reads what the first one shared, and compiles while
the Redis server is killed at random points.

    python bench/remote_cache.py [--device cpu|cuda] [--models resnet50,transformer12]
                                 [--chaos N] [--redis-server PATH] [--write bench/RESULTS.md]

A "machine" is a fresh process with a fresh local cache directory
(TIRC_CACHE_DIR, and TRITON_CACHE_DIR on cuda); all of them share one Redis
server that this script starts on a free port (Debian's redis-server, or
the binary --redis-server names). Per model:

- machine A compiles cold (empty local cache, empty Redis);
- machine B compiles with an empty local cache and A's Redis;
- machine A compiles again, warm from its own local cache (for reference).

Each compile is timed in its process: `tirc.compile` and the first call
(which loads the kernels, and on cuda compiles or fetches the Triton
binaries), then checked against eager. Reported: the times, B's speedup
over A's cold compile, whether the output code is byte-identical, and how
many choices each machine timed (autotuning runs: Triton launch configs
on cuda, matmul libraries on cpu).

--chaos N: N compiles of small programs (seeded random shapes, each
machine a fresh local cache) while a thread kills the server with SIGKILL
at random moments and restarts it after a random pause; every compile must
succeed and match eager.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SECRET = "bench-fleet-secret"
MODELS = ("resnet50", "transformer12")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A redis-server on a free port of this host, in a temporary directory."""

    def __init__(self, binary: str, directory: Path):
        self.binary, self.directory, self.port = binary, directory, _free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.process = subprocess.Popen(
            argv + ["--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def used_bytes(self) -> int:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            s.sendall(b"INFO memory\r\n")
            text = s.recv(65536).decode(errors="replace")
        for line in text.splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":")[1])
        return -1


# --- one machine's compile (run as a subprocess: --worker) ---


def _model(name: str, device: str):
    import torch

    import model_zoo

    torch.manual_seed(0)
    if name == "resnet50":
        spec = next(s for s in model_zoo.suite() if s.name == "resnet50")
        model = spec.build()
        shape = spec.shapes["cuda" if device == "cuda" else "cpu"][0]
        inputs = [torch.randn(*shape)]
    elif name == "transformer12":
        blocks = [model_zoo.GPTBlock(768, 12) for _ in range(12)]
        model = torch.nn.Sequential(*blocks).eval()
        inputs = [torch.randn(16, 256, 768) if device == "cuda" else torch.randn(2, 64, 768)]
    else:
        raise SystemExit(f"unknown model {name}")
    return model.to(device), [x.to(device) for x in inputs]


def _counting_timed_records(counts: dict) -> None:
    """Count the choices this process times (a remote hit times none)."""
    from codegen import timed_records

    original = timed_records.timed_record

    def counting(kind, parts, measure, valid):
        def measured():
            counts[kind] = counts.get(kind, 0) + 1
            return measure()

        return original(kind, parts, measured, valid)

    timed_records.timed_record = counting
    import codegen.cpp_extern_select
    import codegen.triton_tune

    codegen.triton_tune.timed_record = counting
    codegen.cpp_extern_select.timed_record = counting


def worker(name: str, device: str) -> dict:
    import torch

    import tirc

    counts: dict = {}
    _counting_timed_records(counts)
    model, inputs = _model(name, device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        start = time.perf_counter()
        compiled = tirc.compile(model, inputs, backend="triton" if device == "cuda" else "cpp")
        compiled_s = time.perf_counter() - start
        got = compiled(*inputs)
        sync()
        total_s = time.perf_counter() - start
        want = model(*inputs)
    got = got[0] if isinstance(got, tuple) else got
    error = float(((got - want).abs().max() / want.abs().max().clamp(min=1e-6)).item())
    return {
        "compile_s": compiled_s,
        "total_s": total_s,
        "code_sha256": hashlib.sha256(compiled.code.encode()).hexdigest(),
        "rel_error": error,
        "timed": counts,
    }


def _machine(name: str, device: str, env: dict) -> dict:
    result = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--device", device],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        raise SystemExit(f"{name}: machine failed:\n{result.stderr[-3000:]}")
    row = json.loads(result.stdout.strip().splitlines()[-1])
    row["warnings"] = [ln for ln in result.stderr.splitlines() if ln.startswith("tirc: warning")]
    return row


def _environment(root: Path, machine: str, url: str) -> dict:
    env = dict(os.environ, TIRC_REMOTE_CACHE=url, TIRC_REMOTE_CACHE_KEY=SECRET, PYTHONPATH=str(ROOT))
    env["TIRC_CACHE_DIR"] = str(root / machine / "tirc")
    env["TRITON_CACHE_DIR"] = str(root / machine / "triton")
    return env


def fleet(models: list[str], device: str, server: Server, root: Path) -> list[dict]:
    rows = []
    for name in models:
        base = root / name
        cold = _machine(name, device, _environment(base, "a", server.url))
        second = _machine(name, device, _environment(base, "b", server.url))
        warm = _machine(name, device, _environment(base, "a", server.url))
        row = {
            "model": name,
            "cold_s": cold["total_s"],
            "second_machine_s": second["total_s"],
            "warm_local_s": warm["total_s"],
            "speedup": cold["total_s"] / second["total_s"],
            "identical_code": cold["code_sha256"] == second["code_sha256"] == warm["code_sha256"],
            "timed_cold": cold["timed"],
            "timed_second": second["timed"],
            "rel_error": max(cold["rel_error"], second["rel_error"]),
            "warnings": cold["warnings"] + second["warnings"],
            "redis_bytes": server.used_bytes(),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# --- chaos: the server killed at random points ---

CHAOS_PROGRAM = """
import random, sys, torch, tirc
seed = int(sys.argv[1])
rng = random.Random(seed)
rows, cols = rng.choice([3, 37, 129]), rng.choice([5, 64, 1000])
def program(x, w):
    h = torch.nn.functional.gelu(x * w) + x.mean(-1, keepdim=True)
    return torch.softmax(h, -1) * rng_scale
rng_scale = rng.choice([0.5, 2.0, 3.0])
torch.manual_seed(seed)
x, w = torch.randn(rows, cols), torch.randn(cols)
compiled = tirc.compile(program, [x, w])
torch.testing.assert_close(compiled(x, w), program(x, w))
print("ok")
"""


def chaos(count: int, server: Server, root: Path, seed: int = 0) -> dict:
    rng = random.Random(seed)
    stop = threading.Event()
    kills = []

    def killer():
        while not stop.is_set():
            if stop.wait(rng.uniform(0.5, 6.0)):
                break
            server.kill()
            kills.append(time.monotonic())
            stop.wait(rng.uniform(0.0, 3.0))
            server.start()

    thread = threading.Thread(target=killer)
    thread.start()
    failures = []
    try:
        for k in range(count):
            env = _environment(root / "chaos", f"m{k}", server.url)
            result = subprocess.run(
                [sys.executable, "-c", CHAOS_PROGRAM, str(k % 12)],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if result.returncode != 0 or result.stdout.strip() != "ok":
                failures.append((k, result.stderr[-2000:]))
            print(
                f"chaos compile {k + 1}/{count}: {'ok' if result.returncode == 0 else 'FAILED'}", flush=True
            )
    finally:
        stop.set()
        thread.join()
    return {"compiles": count, "kills": len(kills), "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--chaos", type=int, default=0, metavar="N")
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    parser.add_argument("--out", metavar="FILE", help="write the rows as JSON here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.device)))
        return
    if not args.redis_server:
        raise SystemExit("no redis-server: install it (apt-get install redis-server) or pass --redis-server")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = Server(args.redis_server, root / "redis")
        server.directory.mkdir()
        server.start()
        try:
            models = [m for m in args.models.split(",") if m]
            results = {"fleet": fleet(models, args.device, server, root)}
            if args.chaos:
                results["chaos"] = chaos(args.chaos, server, root)
                print(json.dumps({k: v for k, v in results["chaos"].items() if k != "failures"}))
                for k, err in results["chaos"]["failures"]:
                    print(f"chaos compile {k} failed:\n{err}", file=sys.stderr)
        finally:
            server.kill()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
