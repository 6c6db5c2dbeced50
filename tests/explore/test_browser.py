"""The page in headless Chromium: the dial, the views and their headers, linked highlighting,
keyboard, permutes, stale panels, dumps, the URL, requests and large grids.

Needs Debian's Chromium at /usr/bin/chromium (skipped with that reason when absent). Every
test asserts on the DOM; screenshots and the measured timings go to test-artifacts/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from meshtopo.explore import InitialDump

from .conftest import CHROMIUM, HEIGHT, USER_MESH_ORDER, Page

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# Okabe-Ito then Tol muted, as in static/grid.js.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288"]
PERMUTED = "#kind=mesh&axes=data:2,model:4&order=0.2.4.6.1.3.5.7&mr=1&da=mesh&ch=1&ugdi=true&over=model"
STALE_PANELS = [
    "mode-badge",
    "banner",
    "hlo-line",
    "facts",
    "grid-head",
    "views-box",
    "details-card",
    "assignment-card",
    "steps-card",
    "modes-card",
]

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


def grid_hash(**fields: str) -> str:
    """A dial fragment for a replicas x partitions grid; values are quoted as the page does."""
    base = {"kind": "grid", "da": "default", "ch": "0", "ugdi": "absent"}
    base.update(fields)
    return "#" + "&".join(f"{k}={quote(v, safe='')}" for k, v in base.items())


@pytest.fixture
def page(tab: Page) -> Any:
    return tab.open()


def renders(page: Any) -> int:
    return int(page.evaluate("Number(document.body.dataset.renders || 0)"))


def after(page: Any, action: Any) -> None:
    """Run ``action`` and wait until the page has shown the answer (or error) to its latest
    request."""
    before = renders(page)
    action()
    page.wait_for_function(
        f"Number(document.body.dataset.renders) > {before} && "
        "document.body.dataset.pending === undefined && "
        "document.body.dataset.answered === String(explorer.dial.seq)"
    )


def cells(page: Any, view: str = "flat") -> list[dict[str, Any]]:
    return page.eval_on_selector_all(
        f".pane[data-view={view}] .cell",
        "cells => cells.map(c => ({...c.dataset, bg: getComputedStyle(c).backgroundColor,"
        " mismatch: c.classList.contains('mismatch'), overlap: c.classList.contains('overlap')}))",
    )


def groups_of(page: Any, view: str = "flat") -> list[int]:
    found = sorted(cells(page, view), key=lambda c: int(c["flat"]))
    return [int(c["group"]) for c in found]


def by_position(page: Any, view: str) -> list[list[int]]:
    """The device ids of a view, row by row as drawn."""
    found = cells(page, view)
    rows = 1 + max(int(c["row"]) for c in found)
    cols = 1 + max(int(c["col"]) for c in found)
    table = [[-1] * cols for _ in range(rows)]
    for c in found:
        table[int(c["row"])][int(c["col"])] = int(c["device"])
    return table


def heads(page: Any, view: str, kind: str) -> list[tuple[str, str]]:
    """(label, grid-column or grid-row) of a view's column or row headers."""
    place = "gridColumn" if kind == "col" else "gridRow"
    return page.eval_on_selector_all(
        f".pane[data-view={view}] .{kind}-head",
        f"hs => hs.map(h => [h.textContent, h.style.{place}])",
    )


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def no_findings(page: Any) -> bool:
    return page.text_content("#findings") == (
        "No findings: the groups pass the checks for this grid."
    )


# ---------------------------------------------------------------- 1. defaults that answer


def test_the_first_dial_answers_as_jax_writes_a_mesh(page: Any) -> None:
    assert page.text_content("#mode-name") == "kFlattenedID"
    assert no_findings(page)
    assert page.text_content("#f-hlo") == (
        "%collective = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, "
        "replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add"
    )
    # over model: each data row is one group.
    assert groups_of(page, "mesh") == [0, 0, 0, 0, 1, 1, 1, 1]
    assert page.input_value("#assignment") == "mesh"
    assert page.input_value("#mesh-replicas") == "1"
    # over data too, at once.
    after(page, lambda: page.check("#over-axes input[value=data]"))
    after(page, lambda: page.uncheck("#over-axes input[value=model]"))
    assert groups_of(page, "mesh") == [0, 1, 2, 3, 0, 1, 2, 3]
    assert no_findings(page)
    shot(page, "explore-default.png")


@pytest.mark.parametrize(
    "fragment",
    [
        "",
        grid_hash(r="2", p="4"),
        grid_hash(r="2", p="4", ch="1"),
        grid_hash(r="2", p="4", ch="1", ugdi="true"),
        grid_hash(r="4", p="1", op="collective-permute", groups="{{0,1}}"),
    ],
    ids=["mesh", "cross-replica", "cross-partition", "flattened", "permute"],
)
def test_every_example_fits_the_dial_it_is_offered_on(tab: Page, fragment: str) -> None:
    page = tab.open(fragment)
    examples = page.eval_on_selector_all("#examples button", "bs => bs.map(b => b.dataset.example)")
    assert len(examples) >= 2
    for index, text in enumerate(examples):
        after(page, lambda i=index: page.click(f"#examples button >> nth={i}"))
        assert page.input_value("#groups") == text
        assert no_findings(page), (text, page.text_content("#findings"))
        assert page.text_content("#f-count") != "none"


# ---------------------------------------------------------------- 2. the mesh as it is


def test_a_permuted_mesh_is_drawn_by_mesh_coordinates(tab: Page) -> None:
    page = tab.open(PERMUTED)
    # As the CLI draws the same mesh and order.
    drawn = subprocess.run(
        [sys.executable, "-m", "meshtopo", "groups", "--mesh", "data=2,model=4",
         "--devices", "0,2,4,6,1,3,5,7", "--over", "model"],
        capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    ).stdout.splitlines()
    rows = [[int(x) for x in line.split()] for line in drawn if line.split() and
            all(x.isdigit() for x in line.split())]
    assert rows == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert by_position(page, "mesh") == rows
    assert by_position(page, "device") == [[0, 1, 2, 3, 4, 5, 6, 7]]
    assert page.text_content("#f-dcompact") == "[2,4]<=[4,2]T(1,0)"
    assert groups_of(page, "mesh") == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [tuple(h) for h in heads(page, "mesh", "col")] == [
        ("model=0", "2 / span 1"),
        ("model=1", "3 / span 1"),
        ("model=2", "4 / span 1"),
        ("model=3", "5 / span 1"),
    ]
    assert [h[0] for h in heads(page, "mesh", "row")] == ["data=0", "data=1"]
    assert page.text_content(".pane[data-view=mesh] .corner") == "data \\ model"
    page.focus(".pane[data-view=mesh] .cell[data-device='1']")
    details = page.text_content("#details")
    assert "device 1: replica 0, partition 4, flattened id 4" in details
    assert "mesh position data=1, model=0" in details
    assert "device group g1 {1,3,5,7}: rank 0 of 4" in details
    shot(page, "explore-permuted-mesh.png")


def test_headers_nest_for_three_axes_and_name_replicas_and_partitions(tab: Page) -> None:
    page = tab.open("#kind=mesh&axes=x:2,y:2,z:4&order=default&mr=1&da=mesh&ch=1&ugdi=true&over=y")
    cols = heads(page, "mesh", "col")
    assert [tuple(c) for c in cols[:2]] == [("y=0", "2 / span 4"), ("y=1", "6 / span 4")]
    assert [label for label, _ in cols[2:]] == [f"z={i}" for i in range(4)] * 2
    assert [label for label, _ in heads(page, "mesh", "row")] == ["x=0", "x=1"]
    assert page.text_content(".pane[data-view=mesh] .corner") == "x \\ y · z"
    # Groups over y pair z-columns of the two y blocks.
    assert by_position(page, "mesh") == [list(range(8)), list(range(8, 16))]
    assert groups_of(page, "mesh")[:8] == [0, 1, 2, 3, 0, 1, 2, 3]
    page = tab.open(grid_hash(r="2", p="4"))
    assert [h[0] for h in heads(page, "flat", "col")] == ["p0", "p1", "p2", "p3"]
    assert [h[0] for h in heads(page, "flat", "row")] == ["r0", "r1"]
    assert page.text_content(".pane[data-view=flat] .corner") == "replica \\ partition"
    assert page.eval_on_selector_all(".pane", "ps => ps.map(p => p.dataset.view)") == [
        "flat",
        "device",
    ]
    # XLA's default placement DA[r][p] = p*R + r: the device view reads the table across.
    assert by_position(page, "flat") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert by_position(page, "device") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    table = page.eval_on_selector_all(
        "table.da tr", "rs => rs.map(r => [...r.children].map(c => c.textContent))"
    )
    assert table == [["r \\ p", "p0", "p1", "p2", "p3"], ["r0", "0", "2", "4", "6"],
                     ["r1", "1", "3", "5", "7"]]
    shot(page, "explore-3d-headers.png")


def test_pointing_at_a_cell_links_its_group_rank_and_table_entry(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4", ch="1", ugdi="true", groups="[4,2]<=[2,4]T(1,0)"))
    # Flattened groups {0,4},{1,5},...: device groups {0,1},{2,3},... by the default placement.
    page.hover(".pane[data-view=device] .cell[data-device='3']")
    linked = page.eval_on_selector_all(
        ".pane .cell.in",
        "cs => cs.map(c => [c.closest('.pane').dataset.view, c.dataset.device,"
        " c.dataset.shownRank])",
    )
    assert sorted(linked) == [
        ["device", "2", "0"],
        ["device", "3", "1"],
        ["flat", "2", "0"],
        ["flat", "3", "1"],
    ]
    assert page.eval_on_selector_all(".pane .cell.cur", "cs => cs.map(c => c.dataset.device)") == [
        "3",
        "3",
    ]
    assert page.eval_on_selector_all("table.da td.in", "ts => ts.map(t => t.textContent)") == [
        "2",
        "3",
    ]
    assert page.eval_on_selector_all("table.da td.cur", "ts => ts.map(t => t.textContent)") == [
        "3"
    ]
    assert page.get_attribute("table.da tr.hl", "data-replica") == "1"
    assert page.get_attribute("#details", "data-rank") == "1"
    shot(page, "explore-linked.png")


# ---------------------------------------------------------------- 3. permutes as arrows


def test_a_permute_ring_is_drawn_as_arrows_with_a_matching_legend(tab: Page) -> None:
    ring = "{{0,1},{1,2},{2,3},{3,0}}"
    page = tab.open(grid_hash(r="4", p="1", op="collective-permute", groups=ring))
    assert no_findings(page)
    for view in ("flat", "device"):
        arrows = page.eval_on_selector_all(
            f".pane[data-view={view}] svg.arrows > path",
            "ps => ps.map(p => [p.dataset.source, p.dataset.target,"
            " p.getAttribute('marker-end') !== null])",
        )
        assert arrows == [["0", "1", True], ["1", "2", True], ["2", "3", True], ["3", "0", True]]
    found = cells(page)
    assert not any(c["overlap"] or c["mismatch"] for c in found)
    legend = page.eval_on_selector_all(
        "#legend .item",
        "is => is.map(i => [i.textContent, i.querySelector('.sw') &&"
        " getComputedStyle(i.querySelector('.sw')).backgroundColor])",
    )
    assert legend == [
        ["sends and receives (4)", rgb("#56B4E9")],
        ["→ source to target, 4 device pairs", None],
    ]
    assert {c["bg"] for c in found} == {rgb("#56B4E9")}
    page.hover(".pane[data-view=flat] .cell[data-device='2']")
    assert page.eval_on_selector_all(
        ".pane[data-view=flat] svg.arrows path.in", "ps => ps.map(p => p.dataset.pair)"
    ) == ["1", "2"]
    assert "sends to 3 · receives from 1" in page.text_content("#details")
    # A chain 0->1->2: roles differ, and the legend lists each colour a cell carries.
    after(page, lambda: page.fill("#groups", "{{0,1},{1,2}}"))
    colours = {c["bg"] for c in cells(page)}
    swatches = set(page.eval_on_selector_all(
        "#legend .sw", "ss => ss.map(s => getComputedStyle(s).backgroundColor)"
    ))
    assert colours <= swatches | {"rgba(0, 0, 0, 0)"}
    assert "in no pair (1)" in page.text_content("#legend")
    shot(page, "explore-permute-ring.png")


# ---------------------------------------------------------------- 4. one state


def test_after_an_error_every_panel_says_it_is_stale(tab: Page) -> None:
    page = tab.open(grid_hash(r="4", p="1", groups="{{0,1},{1,2}}"))
    assert "Replica 1 is repeated" in page.text_content("#findings")
    assert page.eval_on_selector_all("[data-stale]", "ns => ns.length") == 0
    after(page, lambda: page.fill("#groups", "{{0,1},{2,3"))
    stale = page.eval_on_selector_all("[data-stale]", "ns => ns.map(n => n.id)")
    assert stale == STALE_PANELS
    findings = page.text_content("#findings")
    assert "Replica 1 is repeated" not in findings
    assert findings == (
        "requestHloParseError: 1:12: expected ',' but found the end of the text in replica groups"
    )
    shot(page, "explore-stale.png")
    after(page, lambda: page.fill("#groups", "{{0,1},{2,3}}"))
    assert page.eval_on_selector_all("[data-stale]", "ns => ns.length") == 0
    assert no_findings(page)


def test_a_dump_collective_keeps_its_shapes_and_a_new_dump_resets_the_result(tab: Page) -> None:
    page = tab.open()
    page.click("#tab-dump")
    page.fill("#dump-text", (ROOT / "examples/broken.hlo").read_text())
    after(page, lambda: page.click("#dump-load"))
    # The new dump's first collective is shown at once.
    assert page.text_content("#origin") == "from the dump: repeated · all-reduce · line 11"
    after(page, lambda: page.click("#collectives li[data-name=gather]"))
    flag = page.text_content("#collectives li[data-name=gather] .fd")
    assert flag.startswith("shard_count = 2, subgroup_size = 4")
    assert page.text_content("#findings").startswith("verifiershard_count = 2, subgroup_size = 4")
    assert page.text_content("#shapes-text").startswith(
    "Shapes as in the dump's instruction: operand f32[8], result f32[16]"
    )
    # The link carries the shapes: the same finding on a fresh page.
    again = tab.open(page.evaluate("location.hash"))
    assert "shapes=8>16@0" in again.evaluate("decodeURIComponent(location.hash)")
    assert again.text_content("#findings").startswith("verifiershard_count = 2")
    page = tab.open(again.evaluate("location.hash"))
    after(page, lambda: page.click("#shapes-fit"))
    assert no_findings(page)
    assert page.is_hidden("#shapes-note")
    page.click("#tab-dump")
    page.fill("#dump-text", (ROOT / "examples/broken.hlo").read_text())
    after(page, lambda: page.click("#dump-load"))
    # Loading another dump replaces the result with one of its own collectives.
    after(page, lambda: page.click("#dump-example"))
    assert page.text_content("#origin") == "from the dump: grads · all-reduce · line 11"
    shot(page, "explore-dump-shapes.png")


def test_load_a_dump_and_open_its_collectives(page: Any) -> None:
    page.click("#tab-dump")
    after(page, lambda: page.click("#dump-example"))
    names = page.eval_on_selector_all("#collectives li", "ls => ls.map(l => l.dataset.name)")
    assert names == [
    "grads", "tp", "tp_flat", "dp_flat", "gathered", "ars", "ard", "shifted", "bad", "out",
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
    assert page.eval_on_selector_all(
    ".pane[data-view=flat] svg.arrows > path", "ps => ps.length"
    ) == 8
    page.click("#step-next")
    assert "pair #0 {0,1} as partition ids, in replica 0" in page.text_content("#step-text")
    after(page, lambda: page.click("#collectives li[data-name=tp]"))
    findings = page.text_content("#findings")
    assert "In kCrossReplicaAndPartition mode, replica groups should contain 2 replicas" in findings
    # Editing by hand leaves the dump: the banner stops naming it.
    page.click("#tab-dial")
    after(page, lambda: page.fill("#groups", "{{0,1}}"))
    assert page.is_hidden("#origin")


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


@pytest.mark.jax
def test_a_named_dump_is_dialed_with_its_own_device_assignment(
    tab: Page, named_permuted_dump: Path
) -> None:
    options = named_permuted_dump
    page = tab.open()
    page.wait_for_function(
        "document.body.dataset.dump === 'ready' && explorer.dial.origin !== null && "
        "document.body.dataset.pending === undefined && "
        "document.body.dataset.answered === String(explorer.dial.seq)"
    )
    assert page.text_content("#dump-placement") == f"device assignment from {options}"
    assert page.get_attribute("#dump-placement", "data-source") == "dump"
    assert page.input_value("#assignment") == "custom"
    assert page.input_value("#assignment-table") == " ".join(map(str, USER_MESH_ORDER))
    groups = page.evaluate("explorer.resultView.result.device_groups.groups")
    assert groups == [[3, 0, 6, 1], [7, 2, 5, 4]]
    assert page.text_content("#da-caption").startswith(f"device assignment from {options} · ")
    assert page.text_content("#origin").startswith("from the dump: ")
    shot(page, "explore-dump-assignment.png")
    # Reading the named file's text again keeps its table; edited text has none beside it.
    page.click("#tab-dump")
    after(page, lambda: page.click("#dump-load"))
    assert page.get_attribute("#dump-placement", "data-source") == "dump"
    assert page.evaluate("explorer.resultView.result.device_groups.groups") == groups
    page.fill("#dump-text", page.input_value("#dump-text") + "\n")
    after(page, lambda: page.click("#dump-load"))
    assert page.get_attribute("#dump-placement", "data-source") == "default"
    assert page.input_value("#assignment") == "default"
    assert page.evaluate("explorer.resultView.result.device_groups.groups") == [
        [0, 1, 2, 3], [4, 5, 6, 7]]


def test_a_dump_named_on_the_command_line_opens_at_start(tab: Page) -> None:
    text = (ROOT / "src/meshtopo/explore/static/example.hlo").read_text()
    tab.server.initial_dump = InitialDump("example.hlo", text)
    try:
        page = tab.open()
        page.wait_for_function("document.body.dataset.dump === 'ready'")
        assert page.is_visible("#panel-dump")
        assert page.input_value("#dump-text") == text
    finally:
        tab.server.initial_dump = None


# ---------------------------------------------------------------- 5. keyboard, sizes, large grids


def test_focus_survives_a_re_render_and_arrow_keys_rove(page: Any) -> None:
    page.focus("#modes .mode-col[data-mode=kCrossPartition]")
    after(page, lambda: page.keyboard.press("Enter"))
    assert page.text_content("#mode-name") == "kCrossPartition"
    assert page.evaluate("document.activeElement.dataset.focusKey") == "mode:kCrossPartition"
    # Tabs: arrows move and select.
    page.focus("#tab-dial")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "tab-dump"
    assert page.is_visible("#panel-dump") and page.is_hidden("#panel-dial")
    assert page.get_attribute("#tab-dump", "tabindex") == "0"
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.id") == "tab-dial"
    # Cells: one tab stop per view, arrows move across and down.
    stops = page.eval_on_selector_all(
        ".pane[data-view=mesh] .cell[tabindex='0']", "cs => cs.map(c => c.dataset.flat)"
    )
    assert stops == ["0"]
    page.focus(".pane[data-view=mesh] .cell[data-flat='0']")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.flat") == "1"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.flat") == "5"
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.dataset.flat") == "7"
    assert page.get_attribute("#details", "data-flat") == "7"
    assert page.text_content("#details").startswith("device 7: replica 0, partition 7")
    # The focused cell keeps its focus through a new answer.
    after(page, lambda: page.evaluate("explorer.update()"))
    assert page.evaluate("document.activeElement.dataset.focusKey") == "cell:mesh:7"


def test_large_grids_zoom_pan_and_fit_on_a_canvas(tab: Page) -> None:
    page = tab.open(grid_hash(r="64", p="64", ch="1", ugdi="true", groups="[64,64]<=[64,64]T(1,0)"))
    assert page.get_attribute("#views-box", "data-render") == "canvas"
    assert page.is_visible("#grid-canvas")
    groups = page.evaluate("explorer.cellGroups()")
    assert len(groups) == 4096 and groups[:3] == [0, 1, 2] and groups[64] == 0
    fit = float(page.get_attribute("#grid-canvas", "data-scale"))
    # Small cells: the flattened-id != device-id corners are not drawn, nor in the legend.
    assert fit < 14 and "flattened id ≠ device id" not in page.text_content("#legend")
    assert "colours repeat every 16 groups; hover or focus a cell" in page.text_content("#legend")
    page.click("#zoom-in")
    page.click("#zoom-in")
    zoomed = float(page.get_attribute("#grid-canvas", "data-scale"))
    assert zoomed == pytest.approx(fit * 2.25, rel=1e-3)
    # Drag to pan.
    def offset() -> tuple[int, int]:
        found = page.eval_on_selector("#grid-canvas", "c => [c.dataset.ox, c.dataset.oy]")
        return int(found[0]), int(found[1])

    box = page.locator("#grid-canvas").bounding_box()
    x0, y0 = offset()
    assert x0 >= 80 and y0 >= 60  # zoomed about the centre
    page.mouse.move(box["x"] + 120, box["y"] + 140)
    page.mouse.down()
    page.mouse.move(box["x"] + 200, box["y"] + 200, steps=4)
    page.mouse.up()
    assert offset() == (x0 - 80, y0 - 60)
    # Hovering picks out the cell's group (colours repeat past 16 groups).
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    hovered = int(page.get_attribute("#details", "data-flat"))
    assert page.evaluate("explorer.resultView.canvas.highlight") == groups[hovered]
    page.focus("#grid-canvas")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert page.get_attribute("#details", "data-flat") == "65"
    assert page.get_attribute("#details", "data-group") == "1"
    page.keyboard.press("0")
    assert float(page.get_attribute("#grid-canvas", "data-scale")) == pytest.approx(fit)
    page.click("label:has(input[name=canvasview][value=device])")
    assert page.get_attribute("#grid-canvas", "data-view") == "device"
    assert "view=device" in page.evaluate("location.hash")
    shot(page, "explore-4096.png")


def test_a_large_permute_draws_its_arrows_once_zoomed_in(tab: Page) -> None:
    ring = "{" + ",".join(f"{{{i},{(i + 1) % 128}}}" for i in range(128)) + "}"
    page = tab.open(grid_hash(r="128", p="128", ch="1", op="collective-permute", groups=ring))
    assert page.get_attribute("#views-box", "data-render") == "canvas"
    assert page.text_content("#f-count") == "16384 groups of 2"
    assert page.get_attribute("#grid-canvas", "data-arrows") == "0"
    assert "zoom to 6 px or more for the arrows" in page.text_content("#zoom-level")
    while float(page.get_attribute("#grid-canvas", "data-scale")) < 6:
        page.click("#zoom-in")
    assert int(page.get_attribute("#grid-canvas", "data-arrows")) > 0
    assert "for the arrows" not in page.text_content("#zoom-level")
    shot(page, "explore-permute-canvas.png")


def test_large_grids_answer_quickly(tab: Page) -> None:
    page = tab.open(grid_hash(r="64", p="64"))
    timings: list[dict[str, Any]] = []

    def measure(action: Any) -> None:
        after(page, action)
        page.wait_for_function(
            "document.body.dataset.timing !== undefined && "
            "JSON.parse(document.body.dataset.timing).seq === explorer.dial.seq"
        )
        timings.append(json.loads(page.evaluate("document.body.dataset.timing")))

    measure(lambda: page.fill("#groups", "[64,64]<=[64,64]T(1,0)"))
    measure(lambda: page.check("#channel"))
    measure(lambda: page.click("label:has(input[name=ugdi][value=true])"))
    measure(lambda: page.fill("#groups", "[1024,4]<=[4096]"))
    after(page, lambda: page.fill("#replicas", "256"))
    measure(lambda: page.fill("#partitions", "256"))
    measure(lambda: page.fill("#groups", "[256,256]<=[65536]"))
    groups = page.evaluate("explorer.cellGroups()")
    assert len(groups) == 65536 and groups[-1] == 255
    page.click("#step-next")  # the page still answers after drawing 65,536 cells
    assert page.get_attribute("#views-box", "data-step") == "0"
    shot(page, "explore-65536.png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "explore-timings.json").write_text(json.dumps(timings, indent=1))
    # Timings are reported (and compared in benchmarks/bench_explore.py), not asserted.
    assert all(t["total"] > 0 for t in timings)


@pytest.mark.parametrize("width", [1400, 800, 480])
def test_a_scripted_run_at_each_width_is_clean(tab: Page, width: int) -> None:
    tab.page.set_viewport_size({"width": width, "height": HEIGHT})
    page = tab.open(PERMUTED)
    top = page.evaluate("document.getElementById('views-box').getBoundingClientRect().top")
    if width >= 800:
        # The views sit beside the controls: visible without scrolling past them.
        assert top < 500
    shot(page, f"explore-width-{width}.png")
    after(page, lambda: page.click("#modes .mode-col[data-mode=kCrossPartition]"))
    page.hover(".pane[data-view=mesh] .cell[data-device='4']")
    shot(page, f"explore-width-{width}-hover.png")
    page.click("#tab-dump")
    after(page, lambda: page.click("#dump-example"))
    shot(page, f"explore-width-{width}-dump.png")
    widest = page.evaluate("document.documentElement.scrollWidth")
    assert widest <= width


# ---------------------------------------------------------------- 6. requests and messages


def test_typing_sends_one_request_when_the_typing_stops(own_tab: Page) -> None:
    # The page's clock stands still while the keys go in, so the debounce cannot fire between
    # two keystrokes however slowly the machine types; then it is moved past the debounce.
    own_tab.page.clock.install()
    page = own_tab.open(grid_hash(r="4", p="1"))
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.post_data) if r.url.endswith("/api/groups") else None)
    before = renders(page)
    page.fill("#groups", "")
    page.type("#groups", "{{0,1},{2,3}}")
    assert sent == [] and page.evaluate("document.body.dataset.pending") == "1"
    page.clock.run_for(300)
    page.wait_for_function(
        f"Number(document.body.dataset.renders) > {before} && "
        "document.body.dataset.pending === undefined && "
        "document.body.dataset.answered === String(explorer.dial.seq)"
    )
    assert len(sent) == 1 and json.loads(sent[0])["groups"] == "{{0,1},{2,3}}"
    assert no_findings(page)


def test_messages_name_the_bad_value(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4"))
    after(page, lambda: page.fill("#replicas", ""))
    # In the dial's words, beside the field, which is marked.
    assert page.text_content("#input-error") == (
        "replicas is empty; give an integer of at least 1"
    )
    assert page.get_attribute("#replicas", "aria-invalid") == "true"
    assert page.evaluate("document.querySelector('#replicas').nextElementSibling.id") == "input-error"
    page = tab.open(PERMUTED)
    after(page, lambda: page.fill("#mesh-perm", "0 0 1 2 3 4 5 6"))
    assert page.text_content("#input-error") == (
        "the device order lists id 0 twice (entries 0 and 1); it must be "
        "a permutation of 0..7 (8 distinct ids, one per mesh position)"
    )


# ---------------------------------------------------------------- 7. shareable state


def test_the_url_carries_the_whole_dial(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4"))
    after(page, lambda: page.check("#channel"))
    after(page, lambda: page.click("label:has(input[name=ugdi][value=false])"))
    after(page, lambda: page.select_option("#assignment", "custom"))
    after(page, lambda: page.fill("#assignment-table", "7 6 5 4\n3 2 1 0"))
    after(page, lambda: page.select_option("#opcode", "all-gather"))
    after(page, lambda: page.fill("#groups", "{{0},{1}}"))
    link = page.evaluate("location.href")
    expected = cells(page)
    answer = page.text_content("#f-hlo")
    again = tab.open(link[len(tab.server.url):])
    assert again.input_value("#replicas") == "2" and again.input_value("#partitions") == "4"
    assert again.is_checked("#channel") and again.is_checked("input[name=ugdi][value=false]")
    assert again.input_value("#assignment-table") == "7 6 5 4\n3 2 1 0"
    assert again.input_value("#opcode") == "all-gather"
    assert again.text_content("#f-hlo") == answer
    assert cells(again) == expected
    # A mesh link, with its order and its axes.
    page = tab.open(PERMUTED)
    after(page, lambda: page.check("#over-axes input[value=data]"))
    link = page.evaluate("location.href")
    again = tab.open(link[len(tab.server.url):])
    assert again.input_value("#mesh-perm") == "0 2 4 6 1 3 5 7"
    assert again.is_checked("#over-axes input[value=data]")
    assert by_position(again, "mesh") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert groups_of(again, "mesh") == [0] * 8


# ---------------------------------------------------------------- the arithmetic on screen


def test_mode_fields_change_the_mode_and_the_groups(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4", groups="{{0,1},{2,3}}"))
    after(page, lambda: page.check("#channel"))
    assert page.text_content("#mode-name") == "kCrossPartition"
    assert page.text_content("#mode-badge") == "mode: kCrossPartition"
    assert groups_of(page) == [0, 0, 2, 2, 1, 1, 3, 3]
    after(page, lambda: page.click("label:has(input[name=ugdi][value=false])"))
    assert page.text_content("#mode-name") == "kCrossReplicaAndPartition"
    assert "out of range" in page.text_content("#findings")
    assert set(groups_of(page)) == {-1}
    after(page, lambda: page.click("label:has(input[name=ugdi][value=true])"))
    after(page, lambda: page.fill("#groups", "{{0,1,2,3},{4,5,6,7}}"))
    assert groups_of(page) == [0, 0, 0, 0, 1, 1, 1, 1]
    found = cells(page)
    assert [c["bg"] for c in found] == [rgb(PALETTE[g]) for g in [0, 0, 0, 0, 1, 1, 1, 1]]
    assert [c["mismatch"] for c in found] == [False] + [True] * 6 + [False]
    after(page, lambda: page.select_option("#assignment", "row_major"))
    assert [c["mismatch"] for c in cells(page)] == [False] * 8


def test_opcode_rule_and_invalid_mode(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4", ch="1"))
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


def test_step_through_highlights_one_device_group_at_a_time(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4", groups="{{0,1}}"))
    page.click("#step-next")
    assert page.get_attribute("#views-box", "data-step") == "0"
    active = page.eval_on_selector_all(
        ".pane[data-view=flat] .cell.active", "cs => cs.map(c => Number(c.dataset.device))"
    )
    assert active == [0, 1]
    page.click("#step-next")
    assert "written group #0 {0,1} as replica ids, in partition 1" in page.text_content(
        "#step-text"
    )
    page.click("#step-play")
    page.wait_for_function("document.getElementById('views-box').dataset.step === '3'")
    assert page.text_content("#step-play") == "play"  # stopped at the last step
    page.click("#step-clear")
    assert page.get_attribute("#views-box", "data-step") == "-1"


def test_four_modes_side_by_side(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4", groups="{{0,1}}"))
    columns = page.eval_on_selector_all(
        "#modes .mode-col",
        "cs => cs.map(c => [c.dataset.mode, JSON.parse(c.dataset.groups),"
        " c.classList.contains('current')])",
    )
    assert columns == [
        ["kCrossReplica", [0, 1, 2, 3, 0, 1, 2, 3], True],
        ["kCrossPartition", [0, 0, -1, -1, 1, 1, -1, -1], False],
        ["kCrossReplicaAndPartition", [0] * 8, False],
        ["kFlattenedID", [0, 0, -1, -1, -1, -1, -1, -1], False],
    ]
    after(page, lambda: page.click("#modes .mode-col[data-mode=kFlattenedID]"))
    assert page.text_content("#mode-name") == "kFlattenedID"
    assert page.is_checked("#channel") and page.is_checked("input[name=ugdi][value=true]")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#views-box", "data-step") == "0"


def test_malformed_groups_show_the_parse_error(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="4"))
    after(page, lambda: page.fill("#groups", "{{0,1"))
    assert page.text_content("#input-error") == (
        "1:6: expected ',' but found the end of the text in replica groups"
    )
    after(page, lambda: page.fill("#groups", "{{0,1}}"))
    assert page.is_hidden("#input-error")


def test_custom_assignment(tab: Page) -> None:
    page = tab.open(grid_hash(r="2", p="2", ch="1", ugdi="true", groups="{{0,1},{2,3}}"))
    after(page, lambda: page.select_option("#assignment", "custom"))
    assert page.text_content("#input-error").startswith("the device table must be a 2 x 2 table")
    assert page.get_attribute("#assignment-table", "aria-invalid") == "true"
    after(page, lambda: page.fill("#assignment-table", "3 2\n1 0"))
    assert [int(c["device"]) for c in cells(page)] == [3, 2, 1, 0]
    assert groups_of(page) == [0, 0, 1, 1]
    assert by_position(page, "device") == [[0, 1], [2, 3]]
