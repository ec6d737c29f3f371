"""A real uvicorn server for a test: 127.0.0.1 on a free port, in a daemon thread."""

from __future__ import annotations

import socket
import threading
import time


def start(app):
    """(uvicorn server, thread, base URL) once the server listens."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    for _ in range(600):
        if uv.started:
            break
        time.sleep(0.05)
    assert uv.started, "the server did not start"
    return uv, thread, f"http://127.0.0.1:{port}"


def stop(uv, thread) -> None:
    uv.should_exit = True
    thread.join(timeout=30)
