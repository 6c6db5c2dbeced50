"""A live explorer on a free loopback port, a small JSON client for it, and a headless Chromium
with a page whose console is watched (for the browser tests)."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from meshtopo.cli import main
from meshtopo.explore import ExplorerServer, InitialDump, make_server, serve_in_thread

from ._jax_dump import write_permuted_dump


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


CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for every browser test a worker runs (a launch costs about a
    CPU-second); each test file has its own context and page in it (``tab``)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, timeout=60_000
        )
        yield launched
        launched.close()


WIDTH, HEIGHT = 1400, 900


class Page:
    """One browser page on the explorer, with the console watched."""

    def __init__(self, browser: Any, server: ExplorerServer) -> None:
        self.server = server
        self.context = browser.new_context(
            viewport={"width": WIDTH, "height": HEIGHT}, bypass_csp=True
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", self._console)

    def _console(self, message: Any) -> None:
        """Every console error counts, a failed load included: the page's refusals come in
        the body of a 200, so a refused dial leaves the console clean."""
        if message.type == "error":
            self.errors.append(message.text)

    def open(self, fragment: str = "") -> Any:
        self.page.goto("about:blank")
        self.page.goto(self.server.url + fragment)
        self.page.wait_for_function("['ready', 'error'].includes(document.body.dataset.state)")
        return self.page

    def reset(self) -> None:
        """Make the page as a new one is for the next test: blank, its window ``WIDTH`` x
        ``HEIGHT``, the pointer at the corner (where a new page has it, so no cell of the
        next document is hovered) and no console error recorded."""
        self.page.goto("about:blank")
        self.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        self.page.mouse.move(0, 0)
        self.errors.clear()


@pytest.fixture(scope="module")
def shared_page(browser: Any, server: ExplorerServer) -> Iterator[Page]:
    """One context and page for a test file's ``tab`` tests: each test loads the explorer
    afresh (``Page.open``), so it starts from the page's own state whatever ran before."""
    opened = Page(browser, server)
    yield opened
    opened.context.close()


@pytest.fixture
def tab(shared_page: Page) -> Iterator[Page]:
    """The file's page, reset for this test; no console error may appear while it runs (the
    page is left for a blank one before the check, so a late error counts too)."""
    shared_page.reset()
    yield shared_page
    shared_page.page.goto("about:blank")
    assert shared_page.errors == []


@pytest.fixture
def own_tab(browser: Any, server: ExplorerServer) -> Iterator[Page]:
    """A page in a context of its own, for a test that changes what a context keeps (its
    clock) or counts what a new page starts without (entries of its history); no console
    error may appear while it runs."""
    opened = Page(browser, server)
    yield opened
    opened.context.close()
    assert opened.errors == []


# The mesh a user dumped: devices [[3,0,6,1],[7,2,5,4]] as data x model, psum over model.
USER_MESH_ORDER = (3, 0, 6, 1, 7, 2, 5, 4)


@pytest.fixture(scope="package")
def permuted_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``--xla_dump_to`` directory (a child JAX process, as the inspect tests make
    them): the after-optimizations file of a shard_map psum on a 2 x 4 mesh of devices
    ``USER_MESH_ORDER``, with its ``compile_options.textproto`` beside it."""
    pytest.importorskip("jax")
    from hlo.dumps._xla_dump import write_dump

    directory = tmp_path_factory.mktemp("permuted_dump")
    files = write_dump(directory, [["psum", "psum", "y", list(USER_MESH_ORDER)]])
    [path] = [directory / name for name in files["psum"] if "all-reduce" in (directory / name).read_text()]
    return path


@pytest.fixture
def named_permuted_dump(server: ExplorerServer, permuted_dump: Path) -> Iterator[Path]:
    """The server holding ``permuted_dump`` by name, as ``meshtopo explore FILE`` starts it;
    gives the ``compile_options.textproto`` XLA wrote beside it."""
    options = permuted_dump.parent / permuted_dump.name.split(".cpu_")[0] / "compile_options.textproto"
    server.initial_dump = InitialDump(permuted_dump.name, permuted_dump.read_text(), str(permuted_dump))
    try:
        yield options
    finally:
        server.initial_dump = None


ROOT = Path(__file__).resolve().parents[2]


def cli_json(command: str, path: Path, *options: str) -> dict[str, Any]:
    """``meshtopo COMMAND --json ... PATH`` run by the command line's ``main`` (in this
    interpreter), its answer decoded; it must exit 0."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as done:
        main([command, "--json", *options, str(path)])
    assert done.value.code == 0, (command, options)
    value: dict[str, Any] = json.loads(printed.getvalue())
    return value


@pytest.fixture(scope="package")
def dump_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The permuted-mesh JAX dump of ``_jax_dump``, made once for the package."""
    pytest.importorskip("jax")
    return write_permuted_dump(tmp_path_factory.mktemp("jax_dump"))


@pytest.fixture(scope="package")
def cli(dump_file: Path) -> dict[str, Any]:
    """What the CLI says of the dump: each collective's device groups, each device's cliques."""
    inspected = cli_json("inspect", dump_file)
    ordered = cli_json("order", dump_file, "--devices", ",".join(map(str, range(8))))
    return {
        "groups": {c["name"]: sorted(c["device_groups"]) for c in inspected["collectives"]},
        "table": inspected["device_assignment"],
        "lanes": {int(d): [(a["name"], a["clique"]) for a in arrivals]
                  for d, arrivals in ordered["schedules"].items()},
    }
