"""Triton's compiled kernels through the remote cache
(codegen/triton_shared_cache.py), with a real Redis server: a group of
files one machine's Triton cache wrote is fetched into another machine's,
byte for byte; a host module (launcher) too; a group whose file names
would leave the kernel's directory is dropped before anything is written.
(On the GPU, bench/remote_cache.py --device cuda measures the effect.)"""

from __future__ import annotations

import json

import pytest

from codegen import remote_cache, triton_shared_cache

SECRET = "fleet-secret-for-tests"
KEY = "0123456789abcdef" * 4
METADATA = "kernel.json"


@pytest.fixture
def shared(redis_server, monkeypatch):
    monkeypatch.setenv("TIRC_REMOTE_CACHE", redis_server.url)
    monkeypatch.setenv("TIRC_REMOTE_CACHE_KEY", SECRET)
    return triton_shared_cache._manager_class(), redis_server


def _on(machine, monkeypatch, tmp_path, cls):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / machine))
    return cls(KEY)


def test_a_group_compiled_on_one_machine_is_fetched_by_another(shared, tmp_path, monkeypatch):
    cls, server = shared
    a = _on("a", monkeypatch, tmp_path, cls)
    files = {"kernel.cubin": bytes(range(256)) * 3, "kernel.ptx": b"// ptx", METADATA: b'{"name": "k"}'}
    group = {name: a.put(data, name, binary=True) for name, data in files.items()}
    a.put_group(METADATA, group)
    assert any(k.startswith(b"tirc:triton:") for k in server.client().keys("*"))

    b = _on("b", monkeypatch, tmp_path, cls)
    fetched = b.get_group(METADATA)
    assert fetched is not None and set(fetched) == set(files)
    for name, path in fetched.items():
        assert str(tmp_path / "b") in path
        with open(path, "rb") as f:
            assert f.read() == files[name]
    # Machine c without the remote cache finds nothing: the test above can fail.
    monkeypatch.setenv("TIRC_REMOTE_CACHE", "")
    assert _on("c", monkeypatch, tmp_path, cls).get_group(METADATA) is None


def test_a_host_module_is_shared(shared, tmp_path, monkeypatch):
    cls, _ = shared
    name = "__triton_launcher" + triton_shared_cache._HOST_MODULE
    _on("a", monkeypatch, tmp_path, cls).put(b"\x7fELF module", name, binary=True)
    path = _on("b", monkeypatch, tmp_path, cls).get_file(name)
    assert path is not None and str(tmp_path / "b") in path
    with open(path, "rb") as f:
        assert f.read() == b"\x7fELF module"


@pytest.mark.parametrize("name", ["../escape.cubin", "/etc/evil", "__grp__kernel.json", "..", "a\\b"])
def test_a_group_naming_a_path_is_dropped(shared, tmp_path, monkeypatch, capfd, name):
    cls, server = shared
    b = _on("b", monkeypatch, tmp_path, cls)
    key = b._remote_key(METADATA)
    files = {METADATA: b"{}", name: b"payload"}
    value = triton_shared_cache._encode(files)
    server.client().set(f"tirc:triton:{key}", remote_cache.seal(SECRET.encode(), "triton", key, value))
    assert b.get_group(METADATA) is None
    assert "dropped a corrupt remote cache entry" in capfd.readouterr().err
    assert server.client().get(f"tirc:triton:{key}") is None
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not any("payload" in p.read_text(errors="replace") for p in written)


def test_a_group_without_its_metadata_is_dropped(shared, tmp_path, monkeypatch, capfd):
    cls, server = shared
    b = _on("b", monkeypatch, tmp_path, cls)
    key = b._remote_key(METADATA)
    value = json.dumps({"format": 1, "files": {}}).encode()
    server.client().set(f"tirc:triton:{key}", remote_cache.seal(SECRET.encode(), "triton", key, value))
    assert b.get_group(METADATA) is None
    assert "lacks its metadata file" in capfd.readouterr().err
