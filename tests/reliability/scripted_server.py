"""A real HTTP server on 127.0.0.1 (a free port) that answers chat.completions from a script.

Used by the retry and eval tests instead of a mock: the `openai` client talks to it over TCP.
`responder(request_json, n)` returns (content, finish_reason) for the n-th request (0-based)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedServer:
    def __init__(self, responder):
        self.responder = responder
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                with outer._lock:
                    n = len(outer.requests)
                    outer.requests.append(body)
                content, finish = outer.responder(body, n)
                payload = {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish, "logprobs": None}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
        return False


def script(*answers):
    """A responder that gives `answers` in turn: each a content string or (content, finish_reason)."""

    def responder(body, n):
        a = answers[min(n, len(answers) - 1)]
        return a if isinstance(a, tuple) else (a, "stop")

    return responder
