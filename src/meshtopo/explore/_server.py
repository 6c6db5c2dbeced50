"""The explorer's HTTP server: the JSON API plus the page's static files, on loopback.

Built on the standard library's ``ThreadingHTTPServer``. Request bodies are capped
(``max_body`` bytes, 64 MiB by default: real dumps run to tens of megabytes, and JSON adds
about a byte a line) and read only after ``Content-Length`` is checked; grids
are capped at ``device_limit`` devices (65,536 by default). Static files are served only from
the fixed list in the package's ``static/`` folder, so no request path reaches the file system.
Every bad request is answered with a 4xx JSON error; an unexpected failure is a 500 whose body
says so without a traceback. A POST that carries ``X-Meshtopo-Refusal: body`` (the page's own
requests) gets its refusal as a 200 whose ``error`` names the status it stands for, so that a
browser does not log each refused dial as a failed load.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, ClassVar

import meshtopo as mt

from ._api import info_response
from ._groups import groups_response
from ._hlo import hlo_response, module_response
from ._order import order_response
from ._schema import RequestError, decode_body, text_request

DEFAULT_PORT = 8737
DEFAULT_MAX_BODY = 64 << 20
DEFAULT_DEVICE_LIMIT = 65_536
# The request header asking for refusals in the body of a 200 (``error.status`` keeps the 4xx).
REFUSAL_HEADER = "X-Meshtopo-Refusal"

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".hlo": "text/plain; charset=utf-8",
}
_log = logging.getLogger("meshtopo.explore")


def _static_files() -> dict[str, tuple[bytes, str]]:
    """Every file in the package's ``static/`` folder, by URL path, read once at start-up."""
    files: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("meshtopo.explore").joinpath("static")
    for entry in folder.iterdir():
        name = entry.name
        suffix = name[name.rfind(".") :] if "." in name else ""
        if entry.is_file() and suffix in _CONTENT_TYPES:
            files["/" + name] = (entry.read_bytes(), _CONTENT_TYPES[suffix])
    if "/index.html" in files:
        files["/"] = files["/index.html"]
    return files


@dataclass(frozen=True)
class InitialDump:
    """The dump named on the command line: a name for the page, its text, and the file it was
    read from (None for text alone), which ``mt.hlo.load`` reads again for the module."""

    name: str
    text: str
    path: str | None = None


class ExplorerServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` that knows its limits and its static files."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        max_body: int = DEFAULT_MAX_BODY,
        device_limit: int = DEFAULT_DEVICE_LIMIT,
    ) -> None:
        self.max_body = max_body
        self.device_limit = device_limit
        self.static = _static_files()
        self.initial_dump: InitialDump | None = None
        self.loopback_only = address[0] in ("127.0.0.1", "localhost", "::1")
        super().__init__(address, ExplorerHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that reset its connection (a browser closing a kept-alive one, or a tab)
        is logged at debug level; anything else is reported as the standard library does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            _log.debug("%s closed the connection", client_address)
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        """``http://host:port/`` for the bound address (IPv6 hosts in brackets)."""
        host, port = self.server_address[0], self.server_address[1]
        host = str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


class ExplorerHandler(BaseHTTPRequestHandler):
    """Routes ``GET`` to static files and ``/api/info``, ``POST`` to the API endpoints."""

    server: ExplorerServer
    server_version = "meshtopo-explore"
    protocol_version = "HTTP/1.1"
    _POST_ROUTES: ClassVar[dict[str, str]] = {
        "/api/groups": "groups", "/api/hlo": "hlo", "/api/order": "order"}

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet by default; requests go to the ``meshtopo.explore`` logger at debug level."""
        _log.debug("%s %s", self.address_string(), format % args)

    def _host_allowed(self) -> bool:
        """Whether the ``Host`` header names this server by a loopback name (or any name when
        it listens beyond loopback): a page from another site that resolves its own name to
        127.0.0.1 (DNS rebinding) is refused."""
        if not self.server.loopback_only:
            return True
        host = self.headers.get("Host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in {"127.0.0.1", "localhost", "[::1]", "::1"}

    def _refuse_host(self) -> None:
        self._send_error(
            RequestError(
                403, "this server answers only to 127.0.0.1 or localhost", kind="Forbidden"
            )
        )

    def do_HEAD(self) -> None:
        """Answer as ``GET`` would, headers only."""
        self.do_GET()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals as JSON: a method without a ``do_`` handler
        (its 501) is a 405 naming the methods taken, a malformed request line keeps its
        status."""
        self.close_connection = True
        if code == 501:
            method = str(self.command)[:20]
            error = RequestError(
                405,
                f"method {method!r} is not allowed; this server takes GET, HEAD and POST",
                kind="MethodNotAllowed",
            )
        else:
            text = message or self.responses.get(code, ("error",))[0]
            error = RequestError(code, str(text)[:200], kind="BadRequest")
        self._send_error(error)

    def do_GET(self) -> None:
        """Serve a static file, ``/api/info``, or a 404."""
        path = self.path.split("?", 1)[0]
        if not self._host_allowed():
            self._refuse_host()
            return
        if path == "/api/info":
            self._send_json(200, info_response(self.server.device_limit, self.server.max_body))
            return
        if path == "/api/dump":
            self._send_json(200, self._dump())
            return
        if path in self._POST_ROUTES:
            self._send_error(RequestError(405, f"{path} takes POST", kind="MethodNotAllowed"))
            return
        found = self.server.static.get(path)
        if found is None:
            self._send_error(
                RequestError(404, f"no such page or endpoint: {path[:200]}", kind="NotFound")
            )
            return
        body, content_type = found
        headers = {
            "Content-Type": content_type,
            "Cache-Control": "no-cache",
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
        }
        self._send(200, body, headers)

    def do_POST(self) -> None:
        """Read a capped JSON body and answer it from the matching endpoint. A refusal is its
        4xx, or a 200 with the status in ``error.status`` when the request asks for refusals
        in the body (``X-Meshtopo-Refusal: body``); a failure of the explorer stays a 500."""
        path = self.path.split("?", 1)[0]
        try:
            status, answer = 200, self._post_answer(path)
        except RequestError as error:
            status, answer = error.status, error.to_json()
            if status < 500 and self.headers.get(REFUSAL_HEADER, "").strip().lower() == "body":
                status = 200
                answer["error"]["status"] = error.status
        except ConnectionError:  # the client went away while sending
            self.close_connection = True
            return
        self._send_json(status, answer)

    def _post_answer(self, path: str) -> dict[str, Any]:
        """The answer to a POST at ``path``; every refusal is a ``RequestError``."""
        route = self._POST_ROUTES.get(path)
        try:
            body = self._read_body()
            if not self._host_allowed():
                raise RequestError(
                    403, "this server answers only to 127.0.0.1 or localhost", kind="Forbidden"
                )
            if route is None:
                kind = "MethodNotAllowed" if path == "/api/info" else "NotFound"
                status = 405 if path == "/api/info" else 404
                raise RequestError(status, f"no endpoint takes POST at {path[:200]}", kind=kind)
            return self._answer(route, self._request(route, body))
        except mt.HloParseError as error:
            raise RequestError(
                400, str(error), kind="HloParseError", line=error.line, column=error.column
            ) from None
        except mt.LimitError as error:
            raise RequestError(413, str(error), kind="LimitError") from None
        except mt.MeshtopoError as error:
            raise RequestError(400, str(error), kind=type(error).__name__) from None
        except (RequestError, ConnectionError):
            raise
        except Exception:
            _log.exception("unexpected failure answering %s", path)
            raise RequestError(
                500,
                "the explorer failed on this request; this is a bug in meshtopo",
                kind="InternalServerError",
            ) from None

    def _dump(self) -> dict[str, Any]:
        """The dump named on the command line: ``{"name", "text", "result", "error"}``, where
        ``result`` is the ``/api/hlo`` answer for the module ``mt.hlo.load`` reads from its
        file (so with the device assignment XLA dumped beside it); all null when no dump was
        named."""
        dump = self.server.initial_dump
        if dump is None:
            return {"name": None, "text": None, "result": None, "error": None}
        name, text = dump.name, dump.text
        try:
            module = mt.hlo.load(dump.path) if dump.path is not None else mt.hlo.parse_module(text)
            result = module_response(module)
        except mt.MeshtopoError as error:
            failure: dict[str, Any] = {"kind": type(error).__name__, "message": str(error)}
            if isinstance(error, mt.HloParseError):
                failure.update(line=error.line, column=error.column)
            return {"name": name, "text": text, "result": None, "error": failure}
        return {"name": name, "text": text, "result": result, "error": None}

    def _request(self, route: str, body: bytes) -> dict[str, Any]:
        """The request in ``body``: JSON, or for ``/api/order`` sent as ``text/plain`` the
        module text itself with the other fields in the query string (``text_request``)."""
        media = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if route != "order" or media != "text/plain":
            return decode_body(body)
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        return text_request(body, query)

    def _answer(self, route: str, request: dict[str, Any]) -> dict[str, Any]:
        if route == "groups":
            return groups_response(request, self.server.device_limit)
        if route == "order":
            return order_response(request, self.server.max_body, self.server.device_limit)
        return hlo_response(request, self.server.max_body, self.server.device_limit)

    def _read_body(self) -> bytes:
        raw_length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise RequestError(
                411, "send the body with a Content-Length, not chunked", kind="LengthRequired"
            )
        # 1*DIGIT (RFC 9110) around optional white space: int() alone would also take "+5",
        # "1_0" or other Unicode digits.
        text = "0" if raw_length is None else raw_length.strip(" \t")
        if not (0 < len(text) <= 18 and text.isascii() and text.isdigit()):
            self.close_connection = True
            raise RequestError(400, f"bad Content-Length {str(raw_length)[:40]!r}")
        length = int(text)
        if length > self.server.max_body:
            self.close_connection = True
            self._discard(length)
            raise RequestError(
                413,
                f"request body is {length} bytes, more than the limit of {self.server.max_body} "
                f"bytes; start the explorer with --max-body BYTES to take larger dumps",
                kind="BodyTooLarge",
            )
        return self.rfile.read(length)

    def _discard(self, length: int) -> None:
        """Read and drop a refused body of moderate size, so that the client, still sending,
        gets the 413 instead of a broken connection; bodies past 16 x the cap are not read."""
        if length > 16 * self.server.max_body:
            return
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 16))
            if not chunk:
                return
            remaining -= len(chunk)

    def _send_json(self, status: int, value: dict[str, Any]) -> None:
        body = json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Cache-Control": "no-store"}
        self._send(status, body, headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        """Write one response; a client that went away (the page dropped a stale request) is
        not an error, the connection is just closed."""
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            if self.close_connection:
                self.send_header("Connection", "close")
            if status == 405:
                self.send_header("Allow", "GET, HEAD, POST")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except ConnectionError:
            self.close_connection = True

    def _send_error(self, error: RequestError) -> None:
        self._send_json(error.status, error.to_json())


def make_server(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    max_body: int = DEFAULT_MAX_BODY,
    device_limit: int = DEFAULT_DEVICE_LIMIT,
) -> ExplorerServer:
    """A bound (not yet serving) explorer; ``port=0`` picks a free port. Loopback by default."""
    if max_body < 1 or device_limit < 1:
        raise mt.InvalidArgumentError(
            f"max_body and device_limit must be positive, got {max_body} and {device_limit}"
        )
    return ExplorerServer((host, port), max_body=max_body, device_limit=device_limit)


def serve_in_thread(server: ExplorerServer) -> threading.Thread:
    """Start ``server.serve_forever`` on a daemon thread (for tests and embedding)."""
    thread = threading.Thread(target=server.serve_forever, name="meshtopo-explore", daemon=True)
    thread.start()
    return thread
