"""Speed of the explorer page against its own API, and of its order view against the library,
timed side by side in one run.

Goals (figure / anchor, interleaved samples after a warm-up; reported, never asserted):

- ``POST /api/order`` with a 1,024-device module of 20,000 collectives with permutes
  (``bench_order.permute_module_text``, sent as the page sends a module: the text itself,
  ``text/plain``) answered to a Python client within 1.2x of the
  library's ``parse_module`` + ``analyze`` on the same text (best and paired median).
- a 256 x 256 named mesh (65,536 devices, groups over one axis, JAX's defaults)
dialed and drawn in headless Chromium -- the page's request, its JSON, the views, the legend,
the four-mode thumbnails and the next animation frame -- within 2x of the same
``POST /api/groups`` answered to a Python client (request, answer, ``json.loads``).

The page's goal needs Debian's Chromium at /usr/bin/chromium and Playwright; without them the
module says so and skips it.
"""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
from typing import Any

import meshtopo as mt
from benchmarks._timing import (
    Comparison,
    comparison_table,
    console,
    measure_all,
    measure_paired,
    summary,
)
from benchmarks.bench_order import permute_module_text
from meshtopo.explore import make_server, serve_in_thread

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
FRAGMENT = (
    "#kind=mesh&axes=data:256,model:256&order=default&mr=1&da=mesh&ch=1&ugdi=true&over=model"
)
GOAL = 2.0

# The page's own path from dial to screen: post the dial, render the answer, wait a frame.
_DIAL_AND_DRAW = """async () => {
  await explorer.update();
  await new Promise((done) => requestAnimationFrame(() => done()));
  return document.body.dataset.state;
}"""


def _post(host: str, port: int, body: bytes, path: str = "/api/groups",
          content_type: str = "application/json") -> Any:
    """One ``POST path`` on a fresh connection, its answer decoded."""
    connection = http.client.HTTPConnection(host, port, timeout=600)
    try:
        connection.request("POST", path, body, {"Content-Type": content_type})
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def bench_order_view(rows: list[Comparison], rounds: int = 3) -> None:
    """The order view of a large module against the library's parse and analysis."""
    text = permute_module_text()
    body = text.encode()  # the module as the body (text/plain), as the page sends it
    server = make_server(port=0)
    serve_in_thread(server)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    try:
        answer = _post(host, port, body, "/api/order", "text/plain")
        assert answer.get("ok"), answer.get("error")
        paired = measure_paired(
            lambda: _post(host, port, body, "/api/order", "text/plain"),
            lambda: mt.order.analyze(mt.hlo.parse_module(text)), rounds)
    finally:
        server.shutdown()
        server.server_close()
    console.print(f"order view, {len(body) / 1e6:.0f} MB body, {answer['shown']} lanes: "
                  f"{paired.text()}")
    rows.append(Comparison("order", "POST /api/order, 1,024 devices x 20,000 collectives "
                           "with permutes", paired.first, "parse_module + analyze",
                           paired.second, 1.2, f"paired median {paired.median_ratio:.3f}"))


def main() -> None:
    """Time the order view against the library, then the page against the API on the same
    dial, and print the comparisons."""
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {load} at the start[/dim]")
    rows: list[Comparison] = []
    bench_order_view(rows)
    if not CHROMIUM.exists():
        console.print(f"[yellow]page skipped: no Chromium at {CHROMIUM}[/yellow]")
        console.print(summary(rows))
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        console.print("[yellow]page skipped: Playwright is not installed[/yellow]")
        console.print(summary(rows))
        return
    server = make_server(port=0)
    serve_in_thread(server)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                context = browser.new_context(
                    viewport={"width": 1400, "height": 900}, bypass_csp=True
                )
                page = context.new_page()
                page.set_default_timeout(120_000)
                page.goto(server.url + FRAGMENT)
                page.wait_for_function("document.body.dataset.state === 'ready'")
                body = page.evaluate("JSON.stringify(explorer.dial.request)").encode()
                devices = page.evaluate("explorer.resultView.result.grid.devices")
                answer = _post(host, port, body)
                console.print(
                    f"dial: {devices} devices, {answer['device_groups']['count']} groups, "
                    f"answer {len(json.dumps(answer)) / 1e6:.1f} MB of JSON"
                )
                timings = measure_all(
                    {
                        "api": lambda: _post(host, port, body),
                        "page": lambda: page.evaluate(_DIAL_AND_DRAW),
                    },
                    repeat=5,
                    budget=2.0,
                )
                page_split = json.loads(page.evaluate("document.body.dataset.timing"))
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    console.print(
        f"[dim]last page sample: fetch and JSON {page_split['api']:.0f} ms, drawing "
        f"{page_split['render']:.0f} ms, on screen after {page_split['total']:.0f} ms[/dim]"
    )
    rows += [
        Comparison(
            "explore",
            "256 x 256 mesh dialed and drawn in Chromium",
            timings["page"].best,
            "POST /api/groups from Python",
            timings["api"].best,
            GOAL,
            note=f"best of {timings['page'].samples}",
        )
    ]
    console.print(comparison_table("explorer vs its anchors (ratio = explorer / anchor)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()
