"""A real uvicorn server on 127.0.0.1 (free port) around the embedded model, one per test module."""

from __future__ import annotations

import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("openai")


@pytest.fixture(scope="module")
def server():
    """The server object itself (its pool is inspected by the cancellation test)."""
    from strictgen.serve import ServerLimits, build_server

    server = build_server("default", slots=2, n_ctx=2048, limits=ServerLimits(max_tokens=512, max_body_bytes=200_000))
    yield server
    server.pool.close()


@pytest.fixture(scope="module")
def base_url(server):
    import uvicorn

    from strictgen.serve import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    uv = uvicorn.Server(uvicorn.Config(create_app(server), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    for _ in range(600):
        if uv.started:
            break
        time.sleep(0.05)
    assert uv.started, "the server did not start"
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def client(base_url):
    from openai import OpenAI

    return OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0, timeout=120)
