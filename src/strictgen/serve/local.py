"""A server on a free 127.0.0.1 port, in a background thread: for scripts that drive the real HTTP
stack (the openai client, httpx) against a server they start and stop themselves."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from .app import Server, create_app


@contextmanager
def local_server(server: Server, *, start_timeout: float = 30.0) -> Iterator[str]:
    """Serve `server` on 127.0.0.1 (a free port) while the block runs; yields the base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    uv = uvicorn.Server(uvicorn.Config(create_app(server), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, name="strictgen-local-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not uv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server on 127.0.0.1:{port} did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(timeout=30)
