"""The remote cache (codegen/remote_cache.py, cache_store.py) with a real
Redis server: machines (processes with local caches of their own) share
compiled code, C++ objects and timed choices through it; a server that is
down, killed mid-compile or full costs speed, never a compile; a corrupt or
forged entry is dropped and built again; concurrent writers agree."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tirc
from codegen import cache_store, remote_cache
from codegen.timed_records import timed_record

ROOT = Path(__file__).resolve().parents[2]
SECRET = "fleet-secret-for-tests"

# One machine's compile: compiled code, a run against eager, the code's hash.
MACHINE = """
import hashlib, torch, tirc
def program(x, w):
    return torch.nn.functional.gelu(x @ w.t()) * torch.sigmoid(x).sum(-1, keepdim=True)
torch.manual_seed(0)
x, w = torch.randn(37, 129), torch.randn(65, 129)
compiled = tirc.compile(program, [x, w])
torch.testing.assert_close(compiled(x, w), program(x, w), rtol=1e-4, atol=1e-4)
print(hashlib.sha256(compiled.code.encode()).hexdigest())
"""


def _no_compiler(tmp_path: Path) -> str:
    """A CXX that answers g++'s identity questions but builds nothing: a
    machine with it can only load objects it fetched."""
    script = tmp_path / "no-g++"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--version*|*--help=target*) exec g++ "$@";; esac\n'
        "echo 'this machine may not compile' >&2\nexit 1\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _machine(tmp_path: Path, name: str, url: str, secret: str = SECRET, **env) -> subprocess.Popen:
    environment = dict(
        os.environ,
        TIRC_CACHE_DIR=str(tmp_path / name),
        TIRC_REMOTE_CACHE=url,
        TIRC_REMOTE_CACHE_KEY=secret,
        PYTHONPATH=str(ROOT),
        **env,
    )
    return subprocess.Popen(
        [sys.executable, "-c", MACHINE],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out.strip(), err


def _keys(server) -> list[str]:
    return sorted(k.decode() for k in server.client().keys("tirc:*"))


def program(x, w):
    return torch.nn.functional.gelu(x @ w.t()) * torch.sigmoid(x).sum(-1, keepdim=True)


def _compile_on(machine: Path, monkeypatch, url: str, cxx: str | None = None) -> str:
    """A compile in this process as machine `machine` (its local cache
    directory) would run it: checked against eager; its code."""
    monkeypatch.setenv("TIRC_CACHE_DIR", str(machine))
    monkeypatch.setenv("TIRC_REMOTE_CACHE", url)
    monkeypatch.setenv("TIRC_REMOTE_CACHE_KEY", SECRET)
    if cxx is None:
        monkeypatch.delenv("CXX", raising=False)
    else:
        monkeypatch.setenv("CXX", cxx)
    torch.manual_seed(0)
    x, w = torch.randn(37, 129), torch.randn(65, 129)
    compiled = tirc.compile(program, [x, w])
    torch.testing.assert_close(compiled(x, w), program(x, w), rtol=1e-4, atol=1e-4)
    return compiled.code


def test_a_second_machine_builds_nothing(redis_server, tmp_path):
    first, err = _finish(_machine(tmp_path, "a", redis_server.url))
    assert "warning" not in err
    kinds = {k.split(":")[1] for k in _keys(redis_server)}
    assert {"code", "cpp"} <= kinds
    # Machine b cannot run g++: its compile succeeds only from the remote cache.
    second, err = _finish(_machine(tmp_path, "b", redis_server.url, CXX=_no_compiler(tmp_path)))
    assert second == first, "byte-identical code"
    assert "warning" not in err
    assert list((tmp_path / "b" / "cpp").rglob("*.so")), "the object was fetched into b's local cache"
    # Without the remote cache the same machine fails: the check above can fail.
    bare = _machine(tmp_path, "c", "", CXX=_no_compiler(tmp_path))
    bare.communicate(timeout=300)
    assert bare.returncode != 0


def test_another_secret_is_another_fleet(redis_server, tmp_path):
    _finish(_machine(tmp_path, "a", redis_server.url))
    process = _machine(tmp_path, "b", redis_server.url, secret="someone-else", CXX=_no_compiler(tmp_path))
    _, err = process.communicate(timeout=300)
    assert process.returncode != 0
    assert "its signature does not verify" in err


@pytest.mark.parametrize("damage", ["flip", "garbage", "resealed"])
def test_a_corrupt_remote_entry_is_dropped_and_rebuilt(redis_server, tmp_path, monkeypatch, capfd, damage):
    first = _compile_on(tmp_path / "a", monkeypatch, redis_server.url)
    client = redis_server.client()
    for name in client.keys("tirc:*"):
        value = client.get(name)
        if damage == "flip":
            value = value[:-1] + bytes([value[-1] ^ 1])
        elif damage == "garbage":
            value = b"\x00\xff not an entry"
        else:  # signed correctly, but the payload inside is damaged
            _, kind, key = name.decode().split(":")
            payload, problem = remote_cache.unseal(SECRET.encode(), kind, key, value)
            assert problem is None
            value = remote_cache.seal(SECRET.encode(), kind, key, payload[:-3] + b"xyz")
        client.set(name, value)
    capfd.readouterr()
    assert _compile_on(tmp_path / "b", monkeypatch, redis_server.url) == first
    assert "dropped a corrupt" in capfd.readouterr().err
    # The rebuilt entries replaced the bad ones: a third machine reads them cleanly.
    third = _compile_on(tmp_path / "c", monkeypatch, redis_server.url, cxx=_no_compiler(tmp_path))
    assert third == first
    assert "warning" not in capfd.readouterr().err


def test_concurrent_writers_of_one_key(redis_server, tmp_path):
    machines = [_machine(tmp_path, name, redis_server.url) for name in "ab"]
    codes = {_finish(m)[0] for m in machines}
    assert len(codes) == 1
    last, err = _finish(_machine(tmp_path, "c", redis_server.url, CXX=_no_compiler(tmp_path)))
    assert {last} == codes and "warning" not in err


def test_a_server_that_is_down_costs_one_warning(redis_server, tmp_path, monkeypatch, capfd):
    redis_server.kill()
    _compile_on(tmp_path / "a", monkeypatch, redis_server.url)
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "remote cache" in ln]
    assert len(lines) == 1, lines
    assert lines[0].startswith("tirc: warning: remote cache redis://127.0.0.1:")
    assert "compiling with the local cache only" in lines[0]
    assert list((tmp_path / "a" / "code").rglob("*.json")), "the local cache still works"


def test_the_server_killed_mid_compile(redis_server, tmp_path, monkeypatch):
    """The server dies between the compile's first remote read and its writes."""
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "local"))
    monkeypatch.setenv("TIRC_REMOTE_CACHE", redis_server.url)
    monkeypatch.setenv("TIRC_REMOTE_CACHE_KEY", SECRET)
    original = cache_store.Levels.put

    def put_after_the_kill(self, kind, key, value):
        redis_server.kill()
        return original(self, kind, key, value)

    monkeypatch.setattr(cache_store.Levels, "put", put_after_the_kill)

    def program(x):
        return torch.tanh(x).cumsum(0) * 3

    x = torch.randn(129, 37)
    compiled = tirc.compile(program, [x])
    torch.testing.assert_close(compiled(x), program(x))
    assert list((tmp_path / "local" / "code").rglob("*.json"))


def test_a_full_server_costs_speed_only(redis_server, tmp_path, monkeypatch, capfd):
    """A server at its memory limit refuses writes (OOM): compiles go on."""
    client = redis_server.client()
    client.set("filler", "x" * 100_000)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")  # below what it holds: every write is refused
    _compile_on(tmp_path / "a", monkeypatch, redis_server.url)
    err = capfd.readouterr().err
    assert sum("remote cache" in ln for ln in err.splitlines()) == 1, err
    assert "maxmemory" in err


def test_no_secret_no_remote_cache(redis_server, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TIRC_REMOTE_CACHE", redis_server.url)
    monkeypatch.setenv("TIRC_REMOTE_CACHE_KEY", "")
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    x = torch.randn(37, 129)
    torch.testing.assert_close(tirc.compile(torch.relu, [x])(x), torch.relu(x))
    assert "TIRC_REMOTE_CACHE_KEY is not" in capfd.readouterr().err
    assert _keys(redis_server) == []


def test_timed_choices_are_timed_once_per_fleet(redis_server, tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_REMOTE_CACHE", redis_server.url)
    monkeypatch.setenv("TIRC_REMOTE_CACHE_KEY", SECRET)
    timings = []

    def measure():
        timings.append(1)
        return {"winner": 1, "times": [2.0, 1.0]}

    def valid(record):
        return record.get("winner") in (0, 1)

    for machine in ("a", "b"):
        monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / machine))
        assert timed_record("triton-autotune", ["kernel source", "layouts"], measure, valid)["winner"] == 1
    assert len(timings) == 1, "machine b read a's winner"
    # A winner the caller cannot use (another machine's bug, or a forgery
    # signed with the secret) is timed again, not used.
    client = redis_server.client()
    (name,) = client.keys("tirc:triton-autotune:*")
    _, kind, key = name.decode().split(":")
    bad = json.dumps({"winner": 7}).encode()
    client.set(name, remote_cache.seal(SECRET.encode(), kind, key, bad))
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "c"))
    assert timed_record("triton-autotune", ["kernel source", "layouts"], measure, valid)["winner"] == 1
    assert len(timings) == 2


def test_seal_binds_kind_key_and_bytes():
    secret = b"k"
    value = remote_cache.seal(secret, "code", "abc", b"payload")
    assert remote_cache.unseal(secret, "code", "abc", value) == (b"payload", None)
    for kind, key, other in [("cpp", "abc", value), ("code", "abd", value), ("code", "abc", value + b"!")]:
        payload, problem = remote_cache.unseal(secret, kind, key, other)
        assert payload is None and problem
    assert remote_cache.unseal(b"other", "code", "abc", value)[0] is None


@pytest.mark.parametrize(
    "url, message",
    [
        ("http://example.com/", "expected redis://HOST:PORT/DB"),
        ("redis://host:port/0", "is not a number"),
        ("redis://u:hunter2@host:notaport/0", "is not a number"),
    ],
)
def test_a_bad_url_is_one_clear_error(tmp_path, url, message):
    result = subprocess.run(
        [sys.executable, "-m", "tirc", "compile", str(ROOT / "examples" / "relu.py"), "--remote-cache", url],
        env=dict(os.environ, TIRC_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert "hunter2" not in result.stderr, "passwords stay out of messages"
    assert "Traceback" not in result.stderr


def test_the_cli_flag_reaches_the_server(redis_server, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tirc",
            "compile",
            str(ROOT / "examples" / "relu.py"),
            "--remote-cache",
            redis_server.url,
            "-o",
            str(tmp_path / "out.py"),
        ],
        env=dict(
            os.environ, TIRC_CACHE_DIR=str(tmp_path / "a"), TIRC_REMOTE_CACHE_KEY=SECRET, PYTHONPATH=str(ROOT)
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert any(k.startswith("tirc:code:") for k in _keys(redis_server))


def test_a_dump_cannot_name_a_server(tmp_path):
    """Options in a dump's header are compile options: no key reaches the network."""
    dump = tmp_path / "evil.tir"
    dump.write_text(
        'tirc 0.1 stage=capture source="evil.py"\n'
        'options {backend = "cpp", remote_cache = "redis://attacker:6379/0"}\n'
        'input %x : f32[3] {device = "cpu", seed = 0, strides = [1]}\n'
        "%0 = aten.relu.default(%x) : f32[3]\n"
        "return (%0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "tirc", "compile", str(dump)],
        env=dict(os.environ, TIRC_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "remote_cache" in result.stderr and result.stderr.count("\n") == 1


def test_code_keys_carry_the_versions(monkeypatch, tmp_path):
    """Two torch versions never share an entry."""
    from tirc import code_cache

    key = code_cache._key("capture text")
    monkeypatch.setattr(
        code_cache, "_versions", lambda: "python (3, 11) torch 9.9 triton none interpreted True"
    )
    assert code_cache._key("capture text") != key
