"""The page in headless Chromium: dial, watch the grid's groups and colours, load a dump.

Needs Debian's Chromium at /usr/bin/chromium (skipped with that reason when absent). Screenshots
and the measured interaction timings go to test-artifacts/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meshtopo.explore import ExplorerServer

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
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# Okabe-Ito then Tol muted, as in static/app.js.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium"
    ),
]


def rgb(hex_colour: str) -> str:
    value = int(hex_colour[1:], 16)
    return f"rgb({value >> 16}, {(value >> 8) & 255}, {value & 255})"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, timeout=60_000
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, server: ExplorerServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda m: errors.append(m.text) if _unexpected(m) else None)
    opened.goto(server.url)
    opened.wait_for_function("document.body.dataset.state === 'ready'")
    yield opened
    context.close()
    assert errors == []


def _unexpected(message: Any) -> bool:
    """Console errors other than the browser's note on a 4xx answer the page asked for."""
    expected = "Failed to load resource: the server responded with a status of 4"
    return message.type == "error" and not message.text.startswith(expected)


def renders(page: Any) -> int:
    return int(page.evaluate("Number(document.body.dataset.renders || 0)"))


def after(page: Any, action: Any) -> None:
    """Run ``action`` and wait until the page has shown the answer (or error) to its latest
    request."""
    before = renders(page)
    action()
    page.wait_for_function(
        f"Number(document.body.dataset.renders) > {before} && "
        "document.body.dataset.answered === String(explorer.state.seq)"
    )


def cells(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#grid .cell",
        "cells => cells.map(c => ({...c.dataset, bg: getComputedStyle(c).backgroundColor,"
        " mismatch: c.classList.contains('mismatch')}))",
    )


def groups_of(page: Any) -> list[int]:
    return [int(c["group"]) for c in cells(page)]


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_default_dial_draws_cross_replica_groups(page: Any) -> None:
    assert page.text_content("#mode-name") == "kCrossReplica"
    found = cells(page)
    assert [int(c["group"]) for c in found] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [int(c["device"]) for c in found] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert [c["bg"] for c in found] == [rgb(PALETTE[g]) for g in [0, 1, 2, 3, 0, 1, 2, 3]]
    assert [c["mismatch"] for c in found] == [False] + [True] * 6 + [False]
    assert page.text_content("#f-dcompact") == "[4,2]<=[8]"
    assert page.get_attribute("#grid", "data-render") == "dom"
    legend = page.text_content("#legend")
    assert "g0 {0,1}" in legend and "flattened id ≠ device id (6 cells)" in legend
    shot(page, "explore-default.png")


def test_mode_fields_change_the_mode_and_the_groups(page: Any) -> None:
    after(page, lambda: page.fill("#groups", "{{0,1},{2,3}}"))
    after(page, lambda: page.check("#channel"))
    assert page.text_content("#mode-name") == "kCrossPartition"
    assert page.text_content("#mode-badge") == "mode: kCrossPartition"
    assert groups_of(page) == [0, 0, 2, 2, 1, 1, 3, 3]
    after(page, lambda: page.click("text=false"))
    assert page.text_content("#mode-name") == "kCrossReplicaAndPartition"
    # Replica ids 2 and 3 do not exist with two replicas.
    assert "out of range" in page.text_content("#findings")
    assert set(groups_of(page)) == {-1}
    after(page, lambda: page.click("label:has(input[name=ugdi][value=true])"))
    assert page.text_content("#mode-name") == "kFlattenedID"
    after(page, lambda: page.fill("#groups", "{{0,1,2,3},{4,5,6,7}}"))
    # Flattened ids 0..3 are replica 0's four partitions: devices 0,2,4,6 by default placement.
    assert groups_of(page) == [0, 0, 0, 0, 1, 1, 1, 1]
    after(page, lambda: page.select_option("#assignment", "row_major"))
    assert [c["mismatch"] for c in cells(page)] == [False] * 8
    shot(page, "explore-flattened.png")


def test_opcode_rule_and_invalid_mode(page: Any) -> None:
    after(page, lambda: page.check("#channel"))
    after(page, lambda: page.select_option("#opcode", "all-reduce"))
    assert page.text_content("#mode-name") == "kCrossReplicaAndPartition"
    assert page.text_content("#mode-why") == (
        "all-reduce holds use_global_device_ids as a plain bool (absent reads as false); "
        "the two fields alone give kCrossPartition"
    )
    after(page, lambda: page.select_option("#opcode", ""))
    after(page, lambda: page.uncheck("#channel"))
    after(page, lambda: page.click("label:has(input[name=ugdi][value=true])"))
    assert page.text_content("#mode-name") == "no mode"
    assert "Invalid combination of has_channel_id and use_global_device_ids" in page.text_content(
        "#findings"
    )
    assert set(groups_of(page)) == {-1}
    shot(page, "explore-invalid-mode.png")


def test_malformed_groups_show_the_parse_error(page: Any) -> None:
    after(page, lambda: page.fill("#groups", "{{0,1"))
    error = page.text_content("#input-error")
    assert (
        error == "HloParseError: 1:6: expected ',' but found the end of the text in replica groups"
    )
    assert page.is_visible("#input-error")
    after(page, lambda: page.fill("#groups", "{{0,1}}"))
    assert not page.is_visible("#input-error")


def test_named_mesh_and_over_axes(page: Any) -> None:
    after(page, lambda: page.click("label:has(input[name=gridkind][value=mesh])"))
    after(page, lambda: page.check("#channel"))
    after(page, lambda: page.click("label:has(input[name=ugdi][value=true])"))
    after(page, lambda: page.click("label:has(input[name=groupsrc][value=over])"))
    after(page, lambda: page.check("#over-axes input[value=x]"))
    assert page.text_content("#f-written") == "[4,2]<=[2,4]T(1,0)"
    assert groups_of(page) == [0, 1, 2, 3, 0, 1, 2, 3]
    after(page, lambda: page.select_option("#mesh-order", "reversed"))
    assert [int(c["device"]) for c in cells(page)] == list(range(8))
    assert groups_of(page) == [3, 2, 1, 0, 3, 2, 1, 0]
    after(page, lambda: page.uncheck("#over-axes input[value=x]"))
    after(page, lambda: page.check("#over-axes input[value=y]"))
    assert groups_of(page) == [1, 1, 1, 1, 0, 0, 0, 0]
    shot(page, "explore-mesh.png")


def test_step_through_highlights_one_device_group_at_a_time(page: Any) -> None:
    page.click("#step-next")
    assert page.get_attribute("#grid", "data-step") == "0"
    active = page.eval_on_selector_all(
        "#grid .cell.active", "cs => cs.map(c => Number(c.dataset.device))"
    )
    assert active == [0, 1]
    assert "partition 0" in page.text_content("#step-text")
    page.click("#step-next")
    active = page.eval_on_selector_all(
        "#grid .cell.active", "cs => cs.map(c => Number(c.dataset.device))"
    )
    assert active == [2, 3]
    assert "written group #0 {0,1} as replica ids, in partition 1" in page.text_content(
        "#step-text"
    )
    page.click("#step-play")
    page.wait_for_function("document.getElementById('grid').dataset.step === '3'", timeout=10_000)
    assert page.text_content("#step-play") == "▶ play"  # stopped at the last step
    page.click("#step-clear")
    assert page.get_attribute("#grid", "data-step") == "-1"


def test_four_modes_side_by_side(page: Any) -> None:
    columns = page.eval_on_selector_all(
        "#modes .mode-col",
        "cs => cs.map(c => [c.dataset.mode, JSON.parse(c.dataset.groups), c.classList.contains('current')])",
    )
    assert columns == [
        ["kCrossReplica", [0, 1, 2, 3, 0, 1, 2, 3], True],
        ["kCrossPartition", [0, 0, -1, -1, 1, 1, -1, -1], False],
        ["kCrossReplicaAndPartition", [0] * 8, False],
        ["kFlattenedID", [0, 0, -1, -1, -1, -1, -1, -1], False],
    ]
    after(page, lambda: page.click("#modes .mode-col[data-mode=kFlattenedID]"))
    assert page.text_content("#mode-name") == "kFlattenedID"
    assert page.is_checked("#channel")
    assert page.is_checked("input[name=ugdi][value=true]")
    assert groups_of(page) == [0, 0, -1, -1, -1, -1, -1, -1]
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#grid", "data-step") == "0"


def test_large_grids_draw_on_canvas_and_answer_quickly(page: Any) -> None:
    timings: list[dict[str, Any]] = []

    def measure(action: Any) -> None:
        after(page, action)
        page.wait_for_function(
            "document.body.dataset.timing !== undefined && "
            "JSON.parse(document.body.dataset.timing).seq === explorer.state.seq"
        )
        timings.append(json.loads(page.evaluate("document.body.dataset.timing")))

    after(page, lambda: page.fill("#replicas", "64"))
    measure(lambda: page.fill("#partitions", "64"))
    assert page.get_attribute("#grid", "data-render") == "canvas"
    assert page.is_visible("#grid-canvas")
    measure(lambda: page.fill("#groups", "[64,64]<=[64,64]T(1,0)"))
    measure(lambda: page.check("#channel"))
    measure(lambda: page.click("label:has(input[name=ugdi][value=true])"))
    groups = page.evaluate("explorer.cellGroups()")
    assert len(groups) == 4096 and groups[:3] == [0, 1, 2] and groups[64] == 0
    measure(lambda: page.fill("#groups", "[1024,4]<=[4096]"))
    measure(lambda: page.select_option("#assignment", "row_major"))
    shot(page, "explore-4096.png")
    after(page, lambda: page.fill("#replicas", "256"))
    measure(lambda: page.fill("#partitions", "256"))
    measure(lambda: page.fill("#groups", "[256,256]<=[65536]"))
    groups = page.evaluate("explorer.cellGroups()")
    assert len(groups) == 65536 and groups[-1] == 255
    page.click("#step-next")  # the page still answers after drawing 65,536 cells
    assert page.get_attribute("#grid", "data-step") == "0"
    shot(page, "explore-65536.png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "explore-timings.json").write_text(json.dumps(timings, indent=1))
    # Timings are reported, not asserted.
    assert all(t["total"] > 0 for t in timings)


def test_load_a_dump_and_open_its_collectives(page: Any) -> None:
    page.click("#tab-dump")
    page.click("#dump-example")
    page.wait_for_function("document.body.dataset.dump === 'ready'")
    names = page.eval_on_selector_all("#collectives li", "ls => ls.map(l => l.dataset.name)")
    assert names == [
        "grads",
        "tp",
        "tp_flat",
        "dp_flat",
        "gathered",
        "ars",
        "ard",
        "shifted",
        "bad",
        "out",
    ]
    assert page.text_content("#dump-module").startswith(
        "example_dp2_tp4: 2 replicas × 4 partitions, 10 collectives"
    )
    flagged = page.eval_on_selector_all(
        "#collectives li.flagged", "ls => ls.map(l => [l.dataset.name, l.dataset.findings])"
    )
    assert flagged == [["tp", "1"], ["bad", "1"]]
    after(page, lambda: page.click("#collectives li[data-name=dp_flat]"))
    assert page.text_content("#mode-name") == "kFlattenedID"
    assert page.text_content("#origin") == "from the dump: dp_flat · all-reduce · line 14"
    assert page.input_value("#groups") == "[4,2]<=[2,4]T(1,0)"
    assert groups_of(page) == [0, 1, 2, 3, 0, 1, 2, 3]
    after(page, lambda: page.click("#collectives li[data-name=shifted]"))
    assert page.text_content("#mode-name") == "kCrossPartition"
    # Pairs {0,1},{1,2},{2,3},{3,0} in each replica: every device is a source and a target.
    assert page.eval_on_selector_all("#grid .cell.overlap", "cs => cs.length") == 8
    page.click("#step-next")
    assert "pair #0 {0,1} as partition ids, in replica 0" in page.text_content("#step-text")
    after(page, lambda: page.click("#collectives li[data-name=tp]"))
    findings = page.text_content("#findings")
    assert "In kCrossReplicaAndPartition mode, replica groups should contain 2 replicas" in findings
    assert "out of range" in findings
    shot(page, "explore-dump.png")


def test_a_malformed_dump_shows_the_parse_error(page: Any) -> None:
    page.click("#tab-dump")
    page.fill(
        "#dump-text",
        "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
        "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}\n}\n",
    )
    page.click("#dump-load")
    page.wait_for_function("document.body.dataset.dump === 'error'")
    assert page.text_content("#dump-error").startswith("HloParseError: ")


def test_a_dump_named_on_the_command_line_opens_at_start(
    browser: Any, server: ExplorerServer
) -> None:
    text = (
        Path(__file__).resolve().parents[2] / "src/meshtopo/explore/static/example.hlo"
    ).read_text()
    server.initial_dump = ("example.hlo", text)
    context = browser.new_context(bypass_csp=True)
    try:
        opened = context.new_page()
        opened.set_default_timeout(15_000)
        opened.goto(server.url)
        opened.wait_for_function("document.body.dataset.dump === 'ready'")
        assert opened.is_visible("#panel-dump")
        assert opened.input_value("#dump-text") == text
    finally:
        server.initial_dump = None
        context.close()


def test_custom_assignment_and_custom_mesh_order(page: Any) -> None:
    page.fill("#partitions", "2")
    after(page, lambda: page.fill("#groups", "{{0,1},{2,3}}"))
    after(page, lambda: page.check("#channel"))
    after(page, lambda: page.click("label:has(input[name=ugdi][value=true])"))
    after(page, lambda: page.select_option("#assignment", "custom"))
    assert page.is_visible("#assignment-table")
    assert page.text_content("#input-error").startswith("BadRequest: field 'device_assignment'")
    after(page, lambda: page.fill("#assignment-table", "3 2\n1 0"))
    assert [int(c["device"]) for c in cells(page)] == [3, 2, 1, 0]
    assert groups_of(page) == [0, 0, 1, 1]
    after(page, lambda: page.select_option("#assignment", "default"))
    after(page, lambda: page.click("label:has(input[name=gridkind][value=mesh])"))
    after(page, lambda: page.select_option("#mesh-order", "custom"))
    after(page, lambda: page.fill("#mesh-perm", "0 2 4 6 1 3 5 7"))
    after(page, lambda: page.click("label:has(input[name=groupsrc][value=over])"))
    after(page, lambda: page.check("#over-axes input[value=y]"))
    # Positions hold devices 0 2 4 6 / 1 3 5 7: the groups over y are every other id.
    assert page.text_content("#f-written") == "[2,4]<=[4,2]T(1,0)"
    assert groups_of(page) == [0, 1, 0, 1, 0, 1, 0, 1]
