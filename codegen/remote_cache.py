"""The remote level of tirc's caches: a Redis server that many machines
share (CI runners, training nodes, serving replicas), behind each
machine's local disk cache (cache_store.py).

Switched on by `TIRC_REMOTE_CACHE=redis://HOST:PORT/DB` (or `rediss://`
for TLS, `unix:///PATH`; `tirc compile --remote-cache URL` sets it for one
command) with a secret in `TIRC_REMOTE_CACHE_KEY` (or a file named by
`TIRC_REMOTE_CACHE_KEY_FILE`). Never from a dump: a dump is untrusted input
and may not make tirc reach the network.

What a shared cache holds runs: compiled code, shared objects and GPU
binaries. Redis keeps no record of who wrote a value, so each value is
signed, HMAC-SHA256 under the fleet's secret over its kind, key and bytes
(an entry moved to another key fails too), and a value whose signature does
not verify is deleted and built again, never loaded. Without a secret the
remote cache stays off (one warning). A verified value is still checked as
a local entry is (format, hashes, exports) by the cache that reads it.

Failure is never fatal: a server that is down, slower than the timeout
(TIRC_REMOTE_CACHE_TIMEOUT seconds, default 2) or full costs one warning on
stderr, and the compile goes on with the local cache; the server is tried
again after RETRY_AFTER_S. Entries expire after TTL_S unless written again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sys
import threading
import time
from urllib.parse import urlsplit, urlunsplit

from ir_text import TircError, printable

URL_VARIABLE = "TIRC_REMOTE_CACHE"
SECRET_VARIABLE = "TIRC_REMOTE_CACHE_KEY"
SECRET_FILE_VARIABLE = "TIRC_REMOTE_CACHE_KEY_FILE"
TIMEOUT_VARIABLE = "TIRC_REMOTE_CACHE_TIMEOUT"
SCHEMES = ("redis", "rediss", "unix")
DEFAULT_TIMEOUT_S = 2.0
# After a failure the server is left alone this long: a compile of a large
# model makes hundreds of cache requests, and each would wait for the timeout.
RETRY_AFTER_S = 30.0
# Entries not written again for 30 days expire, so the cache of a fleet
# whose programs change does not grow without bound.
TTL_S = 30 * 24 * 3600
# Larger values are not shared (a Redis string holds at most 512 MiB; a
# kernel library of a whole model is a few MiB).
MAX_VALUE_BYTES = 64 * 1024 * 1024
# A value is MAGIC, the signature's 64 hex digits, a newline, then the bytes.
MAGIC = b"tirc-remote 1\n"
_SIGNATURE_HEX = 64


def signature(secret: bytes, kind: str, key: str, payload: bytes) -> bytes:
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    mac.update(kind.encode() + b"\0" + key.encode() + b"\0")
    mac.update(payload)
    return mac.hexdigest().encode()


def seal(secret: bytes, kind: str, key: str, payload: bytes) -> bytes:
    return MAGIC + signature(secret, kind, key, payload) + b"\n" + payload


def unseal(secret: bytes, kind: str, key: str, value: bytes) -> tuple[bytes | None, str | None]:
    """(payload, None) for a value signed under `secret` for this kind and
    key; else (None, what is wrong with it)."""
    head = len(MAGIC) + _SIGNATURE_HEX + 1
    if not value.startswith(MAGIC) or len(value) < head or value[head - 1 : head] != b"\n":
        return None, "not a tirc remote entry"
    payload = value[head:]
    if not hmac.compare_digest(value[len(MAGIC) : head - 1], signature(secret, kind, key, payload)):
        return None, "its signature does not verify (another fleet's secret, or forged)"
    return payload, None


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def check_url(url: str, origin: str = URL_VARIABLE) -> str:
    """`url` if it names a Redis server tirc can use; else a TircError."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not (parts.hostname or parts.path):
        raise TircError(
            f"{origin}: expected redis://HOST:PORT/DB, rediss://HOST:PORT/DB or unix:///PATH,"
            f" got '{printable(redacted(url))}'"
        )
    try:
        parts.port  # noqa: B018 - raises on a port that is no number
    except ValueError:
        raise TircError(f"{origin}: the port of '{printable(redacted(url))}' is not a number") from None
    return url


def warn(message: str) -> None:
    print(printable(f"tirc: warning: {message}"), file=sys.stderr)


class RedisStore:
    """The remote store: get, put and delete of signed byte values, each
    failure one warning (per store) and a pause of RETRY_AFTER_S, never an
    exception. `client` is a redis.Redis with the timeouts set (`_open`)."""

    def __init__(self, url: str, secret: bytes, client):
        self.url, self._secret, self._client = url, secret, client
        self._warned = False
        self._retry_at = 0.0
        self._lock = threading.Lock()

    @staticmethod
    def name(kind: str, key: str) -> str:
        return f"tirc:{kind}:{key}"

    def available(self) -> bool:
        return time.monotonic() >= self._retry_at

    def get(self, kind: str, key: str) -> bytes | None:
        if not self.available():
            return None
        try:
            value = self._client.get(self.name(kind, key))
        except Exception as err:  # noqa: BLE001 - any failure of the server or its client
            self._failed(err)
            return None
        if value is None:
            return None
        payload, problem = unseal(self._secret, kind, key, bytes(value))
        if problem is not None:
            self.drop(kind, key, problem)
            return None
        return payload

    def put(self, kind: str, key: str, payload: bytes) -> None:
        if not self.available() or len(payload) > MAX_VALUE_BYTES:
            return
        try:
            self._client.set(self.name(kind, key), seal(self._secret, kind, key, payload), ex=TTL_S)
        except Exception as err:  # noqa: BLE001 - as get: a full or lost server costs speed only
            self._failed(err)

    def delete(self, kind: str, key: str) -> None:
        if not self.available():
            return
        try:
            self._client.delete(self.name(kind, key))
        except Exception as err:  # noqa: BLE001 - as get
            self._failed(err)

    def drop(self, kind: str, key: str, reason: str) -> None:
        """Delete a bad entry, with one warning line naming it."""
        self.delete(kind, key)
        warn(f"dropped a corrupt remote cache entry {self.name(kind, key)} ({reason}); rebuilding")

    def _failed(self, err: Exception) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + RETRY_AFTER_S
            if self._warned:
                return
            self._warned = True
        reason = " ".join(str(err).split()) or type(err).__name__
        warn(f"remote cache {redacted(self.url)}: {reason}; compiling with the local cache only")


class _Remotes:
    """The remote store of each configuration seen in this process: one
    connection pool and one warning each. Process-wide by nature, as the
    server it talks to."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stores: dict[tuple, RedisStore | None] = {}

    def current(self) -> RedisStore | None:
        url = os.environ.get(URL_VARIABLE, "")
        if not url:
            return None
        config = (
            url,
            os.environ.get(SECRET_VARIABLE, ""),
            os.environ.get(SECRET_FILE_VARIABLE, ""),
            os.environ.get(TIMEOUT_VARIABLE, ""),
        )
        with self._lock:
            if config not in self._stores:
                self._stores[config] = _open(*config)
            return self._stores[config]


def _open(url: str, secret: str, secret_file: str, timeout: str) -> RedisStore | None:
    check_url(url)
    if secret_file:
        try:
            with open(secret_file, "rb") as f:
                key = f.read().strip()
        except OSError as err:
            raise TircError(f"{SECRET_FILE_VARIABLE}: cannot read {secret_file}: {err.strerror}") from None
    else:
        key = secret.encode()
    if not key:
        warn(
            f"{URL_VARIABLE} is set but {SECRET_VARIABLE} is not: a shared cache holds code that"
            " runs, so its entries are signed with a secret the fleet shares; compiling with the"
            " local cache only"
        )
        return None
    try:
        seconds = float(timeout) if timeout else DEFAULT_TIMEOUT_S
    except ValueError:
        raise TircError(f"{TIMEOUT_VARIABLE}: expected seconds, got '{printable(timeout)}'") from None
    try:
        import redis
    except ImportError:
        warn(
            f"{URL_VARIABLE} is set but the redis package is not installed (pip install redis);"
            " compiling with the local cache only"
        )
        return None
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # No retries: a server that failed once is left alone (RETRY_AFTER_S).
    client = redis.Redis.from_url(
        url, socket_timeout=seconds, socket_connect_timeout=seconds, retry=Retry(NoBackoff(), 0)
    )
    return RedisStore(url, key, client)


_REMOTES = _Remotes()


def remote() -> RedisStore | None:
    """The remote store the environment names, or None (none named, no
    secret, no redis package: the last two with one warning)."""
    return _REMOTES.current()
