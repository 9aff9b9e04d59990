"""A real Redis server for the remote-cache tests: Debian's `redis-server`
(make test installs it), started on a free port in a temporary directory,
without persistence, and killed when the test ends. A fake server is no
substitute: the tests are about a real one failing, filling up and being
written concurrently."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RedisServer:
    port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *extra: str) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not installed: `make test` installs it (apt-get install redis-server)"
            )
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.directory), *extra]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)


@pytest.fixture
def redis_server(tmp_path_factory):
    server = RedisServer(_free_port(), tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.kill()
