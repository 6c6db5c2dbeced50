"""A live explorer on a free loopback port, and a small JSON client for it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from meshtopo.explore import ExplorerServer, make_server, serve_in_thread


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


class Client:
    """Talks HTTP/1.1 to one server; each call opens its own connection."""

    def __init__(self, server: ExplorerServer) -> None:
        self.host, self.port = server.server_address[0], server.server_address[1]

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        connection = http.client.HTTPConnection(str(self.host), int(self.port), timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            raw = response.read()
            kind = response.getheader("Content-Type", "")
            value: Any = json.loads(raw) if raw and kind.startswith("application/json") else raw
            return Reply(response.status, value, dict(response.getheaders()))
        finally:
            connection.close()

    def post(self, path: str, body: Any) -> Reply:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.request("POST", path, data, {"Content-Type": "application/json"})

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def groups(self, **body: Any) -> dict[str, Any]:
        """POST /api/groups and insist on a 200."""
        reply = self.post("/api/groups", body)
        assert reply.status == 200, reply.body
        return reply.body


@pytest.fixture(scope="package")
def server() -> Iterator[ExplorerServer]:
    explorer = make_server(port=0)
    serve_in_thread(explorer)
    yield explorer
    explorer.shutdown()
    explorer.server_close()


@pytest.fixture(scope="package")
def client(server: ExplorerServer) -> Client:
    return Client(server)
