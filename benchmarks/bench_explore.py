"""Speed of the explorer page against its own API, timed side by side in one run.

Goal (figure / anchor, best of several interleaved samples after a warm-up; reported, never
asserted): a 256 x 256 named mesh (65,536 devices, groups over one axis, JAX's defaults)
dialed and drawn in headless Chromium -- the page's request, its JSON, the views, the legend,
the four-mode thumbnails and the next animation frame -- within 2x of the same
``POST /api/groups`` answered to a Python client (request, answer, ``json.loads``).

Needs Debian's Chromium at /usr/bin/chromium and Playwright; without them the module says so
and returns.
"""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
from typing import Any

from benchmarks._timing import Comparison, comparison_table, console, measure_all, summary
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


def _post(host: str, port: int, body: bytes) -> Any:
    """One ``POST /api/groups`` on a fresh connection, its answer decoded."""
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request("POST", "/api/groups", body, {"Content-Type": "application/json"})
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def main() -> None:
    """Time the page and the API on the same dial and print the comparison."""
    if not CHROMIUM.exists():
        console.print(f"[yellow]skipped: no Chromium at {CHROMIUM}[/yellow]")
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        console.print("[yellow]skipped: Playwright is not installed[/yellow]")
        return
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {load} at the start[/dim]")
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
                body = page.evaluate("JSON.stringify(explorer.state.request)").encode()
                devices = page.evaluate("explorer.state.result.grid.devices")
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
    rows = [
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
    console.print(comparison_table("explorer page vs its API (ratio = page / API)", rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()
