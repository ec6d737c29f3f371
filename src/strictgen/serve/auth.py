"""API keys: `Authorization: Bearer KEY` on every model route, as OpenAI, llama.cpp's server and
Ollama clients send it.

Keys come from `--api-key` (repeatable), `--api-key-file` (one per line, `#` comments) and the
environment variable STRICTGEN_API_KEY, all together. They are compared in constant time (salted SHA-256
digests of equal length, every key compared) and never logged or echoed back.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path

from strictgen.errors import StrictgenError

ENV_VAR = "STRICTGEN_API_KEY"
OPEN_PATHS = frozenset({"/health", "/metrics"})  # liveness probes and scrapers need no key


class ApiKeys:
    """The accepted keys (empty: the server is open)."""

    def __init__(self, keys: list[str] | tuple[str, ...] = ()):
        self._salt = secrets.token_bytes(16)  # digests of this process only
        self._digests = tuple(self._digest(k) for k in dict.fromkeys(keys) if k)

    def _digest(self, key: str) -> bytes:
        return hashlib.sha256(self._salt + key.encode("utf-8", "surrogatepass")).digest()

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def __repr__(self) -> str:  # never the keys themselves
        return f"ApiKeys({len(self._digests)} key(s))"

    def needed(self, path: str) -> bool:
        return bool(self._digests) and path not in OPEN_PATHS

    def allows(self, authorization: str | None) -> bool:
        """Whether an `Authorization` header value carries one of the keys."""
        if not self._digests or not authorization:
            return False
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        got = self._digest(token.strip())
        ok = False
        for d in self._digests:  # no early exit: the time does not tell which key, or whether any, matched
            ok |= hmac.compare_digest(got, d)
        return ok


def load_keys(keys: list[str] | None = None, key_file: str | None = None, environ: dict | None = None) -> ApiKeys:
    """The keys of the flags, the key file and the environment, together."""
    found = [k.strip() for k in keys or () if k.strip()]
    if key_file:
        try:
            text = Path(key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise StrictgenError(f"cannot read the API key file {key_file}: {exc.strerror}") from exc
        found += [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if not found:
            raise StrictgenError(f"the API key file {key_file} holds no key")
    env = (environ if environ is not None else os.environ).get(ENV_VAR, "").strip()
    if env:
        found.append(env)
    return ApiKeys(found)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def exposure_warning(host: str, keys: ApiKeys) -> str | None:
    """The start-up warning for a server reachable from other machines without a key (else None)."""
    if keys or is_loopback(host):
        return None
    return (
        f"warning: serving on {host} without an API key: anyone who can reach this port can use the model; "
        f"pass --api-key, --api-key-file or set {ENV_VAR}"
    )
