"""A fake control endpoint of a running pipeline (etl.runtime.control) for the CLI tests of tap and top."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(respond: Callable[[str], tuple[int, bytes]]) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 (a free port) answering each GET with `respond(path)`: (status, body)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            code, body = respond(self.path)
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
