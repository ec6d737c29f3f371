"""The OpenAI-compatible server (`strictgen serve`): FastAPI app, model pool, dialect adapters.

    from strictgen.serve import build_server, create_app
    app = create_app(build_server("default", slots=2))
"""

from .app import Server, ServerLimits, build_server, create_app
from .auth import ApiKeys, load_keys
from .ops import ServeOptions

__all__ = ["ApiKeys", "ServeOptions", "Server", "ServerLimits", "build_server", "create_app", "load_keys"]
