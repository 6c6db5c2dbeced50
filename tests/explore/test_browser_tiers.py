"""Cells placed on a cluster in headless Chromium: colour by group, host or domain, each
group's tier in the legend and the focused-cell panel, the cluster in the URL fragment.
Asserts on the DOM; screenshots go to test-artifacts/; the console stays free of errors (the
``tab`` fixture checks it)."""

from __future__ import annotations

from typing import Any

import pytest  # noqa: F401  (pytestmark below)

from .conftest import Page
from .test_browser import PALETTE, after, cells, pytestmark, rgb, shot  # noqa: F401

MESH_2X8 = "#kind=mesh&axes=data:2,model:8&order=default&mr=1&da=mesh&ch=1&ugdi=true"


def by_flat(page: Any, view: str = "flat") -> list[dict[str, Any]]:
    return sorted(cells(page, view), key=lambda c: int(c["flat"]))


def legend(page: Any) -> list[str]:
    return page.eval_on_selector_all("#legend .item", "items => items.map(i => i.textContent)")


def test_cells_coloured_by_host_share_one_colour_per_host(tab: Page) -> None:
    page = tab.open(MESH_2X8 + "&over=model&cluster=h100-8x%3A2&by=host")
    assert page.input_value("#cluster") == "h100-8x:2"
    assert page.is_checked("input[name=colourby][value=host]")
    for view in ("mesh", "flat", "device"):
        found = by_flat(page, view)
        assert [int(c["host"]) for c in found] == [0] * 8 + [1] * 8
        host0 = {c["bg"] for c in found if c["host"] == "0"}
        host1 = {c["bg"] for c in found if c["host"] == "1"}
        assert host0 == {rgb(PALETTE[0])}
        assert host1 == {rgb(PALETTE[1])}
    assert legend(page) == [
        "host 0 (8 devices)",
        "host 1 (8 devices)",
        "on h100-8x:2 (2 hosts of 8, 2 domains) · tiers: host ×2",
    ]
    page.hover(".pane[data-view=flat] .cell[data-flat='9']")
    details = page.eval_on_selector_all("#details div", "ds => ds.map(d => d.textContent)")
    assert details[-2:] == [
        "on h100-8x:2: host 1, domain 1",
        "group g1 tier host: spans 1 host, 1 domain; slowest link nvlink at 450 GB/s one way",
    ]
    shot(page, "tiers-by-host.png")


def test_the_data_axis_crosses_the_network_and_the_legend_says_so(tab: Page) -> None:
    page = tab.open(MESH_2X8 + "&over=data&cluster=h100-8x%3A2")
    assert page.is_checked("input[name=colourby][value=group]")
    items = page.eval_on_selector_all(
        "#legend .item[data-group]", "items => items.map(i => [i.dataset.tier, i.textContent])"
    )
    assert len(items) == 8
    assert items[0] == ["network", "g0 {0,8} · network, 2 hosts, ib"]
    assert {tier for tier, _ in items} == {"network"}
    assert page.text_content("#legend .tiers") == (
        "on h100-8x:2 (2 hosts of 8, 2 domains) · tiers: network ×8"
    )
    # Coloured by group, the cells are as without a cluster: group g's colour.
    found = by_flat(page)
    assert [c["bg"] for c in found] == [rgb(PALETTE[f % 8]) for f in range(16)]
    page.hover(".pane[data-view=flat] .cell[data-flat='3']")
    assert page.text_content("#details").endswith(
        "group g3 tier network: spans 2 hosts, 2 domains; slowest link ib at 50 GB/s one way"
    )
    shot(page, "tiers-data-network.png")


def test_the_controls_pick_a_cluster_and_recolour(tab: Page) -> None:
    page = tab.open()
    # The first dial (data=2, model=4 over model): no cluster, so only group colours.
    assert page.input_value("#cluster") == ""
    assert page.is_disabled("input[name=colourby][value=host]")
    assert page.is_disabled("input[name=colourby][value=domain]")
    assert page.text_content("#cluster-note").endswith(
        "; presets: a100-8x, h100-8x, p6-b200, gb200-nvl72, tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e"
    )
    before = [c["bg"] for c in by_flat(page)]
    assert "host" not in by_flat(page)[0]
    after(page, lambda: page.fill("#cluster", "tpu-v5e:4x2"))
    assert page.is_enabled("input[name=colourby][value=host]")
    assert [c["bg"] for c in by_flat(page)] == before  # still by group
    assert "cluster=tpu-v5e%3A4x2" in page.url and "by=" not in page.url
    after(page, lambda: page.click("label:has(input[name=colourby][value=host])"))
    assert page.url.endswith("&cluster=tpu-v5e%3A4x2&by=host")
    # v5e hosts hold 2x2 chips; a 4x2 slice numbers chips x fastest (d = x + 4y), so host 0
    # holds x = 0..1 (devices 0, 1, 4, 5) and host 1 x = 2..3 (devices 2, 3, 6, 7).
    found = by_flat(page)
    assert [int(c["host"]) for c in found] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert [c["bg"] for c in found] == [rgb(PALETTE[int(c["host"])]) for c in found]
    after(page, lambda: page.click("label:has(input[name=colourby][value=domain])"))
    assert {c["bg"] for c in by_flat(page)} == {rgb(PALETTE[0])}
    assert legend(page)[0] == "domain 0 (8 devices)"
    after(page, lambda: page.click("label:has(input[name=colourby][value=host])"))
    shot(page, "tiers-tpu-by-host.png")
    after(page, lambda: page.click("label:has(input[name=colourby][value=domain])"))
    # The fragment restores the whole dial, cluster and colouring included.
    tab.open("#" + page.url.split("#", 1)[1])
    assert page.input_value("#cluster") == "tpu-v5e:4x2"
    assert page.is_checked("input[name=colourby][value=domain]")
    after(page, lambda: page.fill("#cluster", ""))
    assert "cluster=" not in page.url
    assert [c["bg"] for c in by_flat(page)] == before
    assert page.is_disabled("input[name=colourby][value=host]")


def test_a_bad_cluster_is_named_and_marks_the_panels_stale(tab: Page) -> None:
    page = tab.open(MESH_2X8 + "&over=model")
    after(page, lambda: page.fill("#cluster", "h100-8x:1"))
    assert page.text_content("#input-error") == (
        "the cluster 'h100-8x:1' has 8 devices, fewer than the grid's 16"
    )
    assert page.get_attribute("#views-box", "data-stale")


def test_the_canvas_colours_a_large_grid_by_host(tab: Page) -> None:
    """2,048 devices on 256 hosts of 8, drawn on the canvas: each host's 8 cells share one
    colour and the next host's differs."""
    page = tab.open(
        "#kind=mesh&axes=data:16,model:128&order=default&mr=1&da=mesh&ch=1&ugdi=true"
        "&over=model&cluster=h100-8x%3A256&by=host"
    )
    assert page.get_attribute("#views-box", "data-render") == "canvas"
    colours = page.evaluate(
        "[...Array(24).keys()].map(f => Array.from(explorer.resultView.canvas.rgb.slice(3 * f, 3 * f + 3)).join(','))"
    )
    assert len(set(colours[0:8])) == 1
    assert len(set(colours[8:16])) == 1
    assert colours[0] != colours[8] != colours[16]
    assert page.text_content("#legend .tiers") == (
        "on h100-8x:256 (256 hosts of 8, 256 domains) · tiers: network ×16"
    )
    shot(page, "tiers-canvas-by-host.png")


def test_a_dump_collective_keeps_the_cluster(tab: Page) -> None:
    """The dump's grid is 2 x 4 under XLA's default assignment DA[r][p] = p*2 + r: on a v5e
    2x4 slice (hosts of devices 0,1,4,5 and 2,3,6,7), tp_flat's groups {0,2,4,6} span both
    hosts (tier domain) while dp_flat's {0,1} stay on one."""
    page = tab.open()
    after(page, lambda: page.fill("#cluster", "tpu-v5e:2x4"))
    page.click("#tab-dump")
    after(page, lambda: page.click("#dump-example"))
    after(page, lambda: page.click("#collectives li[data-name=tp_flat]"))
    assert page.input_value("#cluster") == "tpu-v5e:2x4"
    tiers = page.eval_on_selector_all(
        "#legend .item[data-group]", "items => items.map(i => i.textContent)"
    )
    assert tiers == ["g0 {0,2,4,6} · domain, 2 hosts, ici", "g1 {1,3,5,7} · domain, 2 hosts, ici"]
    after(page, lambda: page.click("#collectives li[data-name=dp_flat]"))
    assert page.text_content("#legend .tiers") == (
        "on tpu-v5e:2x4 (2 hosts of 4, 1 domain) · tiers: host ×4"
    )
    page.hover(".pane[data-view=flat] .cell[data-flat='0']")
    assert page.text_content("#details").endswith(
        "group g0 tier host: spans 1 host, 1 domain; slowest link ici at 45 GB/s one way; "
        "ring hops 1"
    )
