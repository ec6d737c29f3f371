"""A real uvicorn server on 127.0.0.1 (free port) around the embedded model, one per test module."""

from __future__ import annotations

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
    from strictgen.serve import create_app

    from .http import start, stop

    uv, thread, url = start(create_app(server))
    yield url
    stop(uv, thread)


@pytest.fixture(scope="module")
def client(base_url):
    from openai import OpenAI

    return OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0, timeout=120)


API_KEY = "sk-test-key-for-keyed-app"


@pytest.fixture(scope="module")
def keyed_base_url(server):
    """A second app over the same model pool that needs `Authorization: Bearer API_KEY`."""
    from strictgen.serve import ApiKeys, ServeOptions, Server, create_app

    from .http import start, stop

    keyed = Server(server.pool, server.model_name, server.limits, ServeOptions(api_keys=ApiKeys([API_KEY])))
    uv, thread, url = start(create_app(keyed))
    yield url
    stop(uv, thread)
