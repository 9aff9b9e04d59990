"""The Foundation issue's acceptance run, as a new user would do it, through the CLI.

    python tests/acceptance/foundation.py [EXAMPLE.py[:ENTRY] ...]   (make acceptance)

For each example and backend: compile with --dump-after=all --check; `tirc fmt
--check` on every dump; re-feed every dump and compare all later files byte
for byte; `tirc replay` every dump; compile again under another
PYTHONHASHSEED and compare every file; a truncated dump must give one
FILE:LINE:COL error with exit code 2. Prints one row per run; exits 1 on any
failure. Not part of `make test` (about a minute per example and backend).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from tirc.dumps import comparable_files  # noqa: E402

DEFAULT = ["relu.py", "gelu_bias.py", "swish.py", "hardtanh.py", "gelu_tanh_fn.py:gelu_tanh"]
STAGES = ["01-capture", "02-lower", "03-schedule", "04-fusion", "05-memplan"]
LOCATED = re.compile(r"^\S+:\d+:\d+: error: .+$")


def tirc(*args, seed="0"):
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-m", "tirc", *args], capture_output=True, text=True, env=env)


def files(directory: Path) -> dict[str, bytes]:
    """Every file's bytes; the manifest's without its timings, which differ between any two runs."""
    return comparable_files(directory)


def check(example: str, backend: str) -> tuple[str, list[str]]:
    path, _, entry = example.partition(":")
    source = str(ROOT / "examples" / path)
    entry_args = ["--entry", entry] if entry else []
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a = tmp / "a"
        base = [source, *entry_args, "--backend", backend, "--dump-after=all"]
        r = tirc("compile", *base, "--dump-dir", str(a), "--check")
        if r.returncode != 0:
            return f"{example} {backend}", [f"compile --check exited {r.returncode}: {r.stderr.strip()}"]
        first = files(a)
        dumps = [str(a / f"{s}.tir") for s in STAGES]
        r = tirc("fmt", "--check", *dumps)
        if r.returncode != 0:
            problems.append(f"fmt --check: {r.stderr.strip()}")
        for k, stage in enumerate(STAGES):
            b = tmp / f"b{k}"
            r = tirc("compile", dumps[k], "--dump-after=all", "--dump-dir", str(b))
            if r.returncode != 0:
                problems.append(f"re-feed {stage}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            again = files(b)
            for name in [f"{s}.tir" for s in STAGES[k + 1 :]] + ["output_code.py"]:
                if again.get(name) != first.get(name):
                    problems.append(f"re-feed {stage}: {name} differs")
            r = tirc("replay", dumps[k])
            if r.returncode != 0:
                problems.append(f"replay {stage}: exit {r.returncode}: {r.stderr.strip()}")
        c = tmp / "c"
        r = tirc("compile", *base, "--dump-dir", str(c), seed="4242")
        if r.returncode != 0 or files(c) != first:
            problems.append("another PYTHONHASHSEED gives different files")
        broken = tmp / "broken.tir"
        text = (a / "03-schedule.tir").read_text()
        broken.write_text(text[: len(text) // 2])
        r = tirc("verify", str(broken))
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or not LOCATED.match(lines[0]) or "Traceback" in r.stderr:
            problems.append(f"truncated dump: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    return f"{example} {backend}", problems


def main(argv: list[str]) -> int:
    examples = argv or DEFAULT
    jobs = [(e, b) for e in examples for b in ("cpp", "triton")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: check(*job), jobs))
    failed = 0
    for name, problems in results:
        print(f"{'ok  ' if not problems else 'FAIL'} {name}")
        for p in problems:
            print(f"       {p}")
        failed += bool(problems)
    print(f"{len(results) - failed}/{len(results)} example x backend runs pass every check")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
