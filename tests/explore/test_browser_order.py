"""The collective order in headless Chromium: lanes, rendezvous lines, a finding's devices and
blocking collectives, the waits-for cycle, the step-by-step hang, a dump's order and the lane
cap. Asserts on the DOM; screenshots go to test-artifacts/; the console stays free of errors
(the ``tab`` fixture checks it)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import HEIGHT, Page
from .test_browser import ROOT, pytestmark, shot  # noqa: F401  (pytestmark applies here)

ADD = """%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
"""


def open_order(tab: Page) -> Any:
    page = tab.open()
    page.click("#tab-order")
    return page


def analysed(page: Any, action: Any) -> None:
    """Run ``action`` and wait for the order answer it asks for."""
    before = page.evaluate("explorer.order.seq")
    action()
    page.wait_for_function(
        f"explorer.order.seq > {before} && ['ready', 'error'].includes(document.body.dataset.order)"
        " && document.body.dataset.order !== 'loading'"
    )


def lanes(page: Any) -> list[tuple[int, list[str]]]:
    return page.eval_on_selector_all(
        "#order-lanes .lane",
        "ls => ls.map(l => [Number(l.dataset.device), [...document.querySelectorAll("
        "`#order-lanes .arrival[data-lane='${l.dataset.lane}']`)].map(a => a.dataset.name)])",
    )


def marked(page: Any, selector: str) -> list[tuple[int, int]]:
    """(lane, index) of the arrivals matching ``selector``."""
    found = page.eval_on_selector_all(
        f"#order-lanes {selector}",
        "as => as.map(a => [Number(a.dataset.lane), Number(a.dataset.index)])",
    )
    return [(lane, index) for lane, index in found]


def test_two_devices_in_opposite_order_draw_their_deadlock(tab: Page) -> None:
    page = open_order(tab)
    assert page.is_visible("#order-view") and page.is_hidden("#result-view")
    analysed(page, lambda: page.click("#order-example"))
    assert lanes(page) == [[0, ["grads", "stats"]], [1, ["stats", "grads"]],
                           [2, ["grads", "stats"]], [3, ["grads", "stats"]]]
    # The finding is picked: its devices' lanes and the collectives where they block.
    assert page.get_attribute("#order-findings li.picked", "data-type") == "deadlock"
    assert page.eval_on_selector_all(
        "#order-lanes .lane.hit", "ls => ls.map(l => Number(l.dataset.device))") == [0, 1]
    assert marked(page, ".arrival.block") == [(0, 0), (1, 0)]
    assert marked(page, ".arrival.blocked") == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert marked(page, ".arrival.never") == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert page.text_content("#order-message") == (
        "a waits-for cycle across 2 cliques: device 0 waits in grads (line 9) on clique "
        "[0,1,2,3] for device 1; device 1 waits in stats (line 9) on clique [0,1] for device 0. "
        "None of them can go on: the job hangs. 2 more devices only wait behind it.")
    # The cycle: device 0 waits for 1, 1 for 0, each arrow from one blocking box to the other.
    assert page.eval_on_selector_all(
        "#order-lanes .cycle-arrow", "ps => ps.map(p => [p.dataset.from, p.dataset.to])"
    ) == [["0", "1"], ["1", "0"]]
    # Lines join each rendezvous (grads over four lanes, the two stats pairs); none completes.
    joined = page.eval_on_selector_all(
        "#order-lanes .meet", "ls => ls.map(l => [l.dataset.rendezvous, l.classList.contains('open')])")
    assert joined == [["0", True]] * 3 + [["1", True], ["2", True]]
    # Device 0's grads meets device 1's grads, which device 1 issues second: the line slants.
    first = page.eval_on_selector(
        "#order-lanes .meet[data-rendezvous='0']",
        "l => [l.getPointAtLength(0).x, l.getPointAtLength(l.getTotalLength()).x]")
    assert first[1] > first[0]
    shot(page, "explore-order-deadlock.png")
    # Pointing at a collective picks out its rendezvous in every lane.
    page.hover("#order-lanes .arrival[data-lane='3'][data-index='0']")
    assert marked(page, ".arrival.lit") == [(0, 0), (1, 1), (2, 0), (3, 0)]
    # Keyboard: one tab stop, arrow keys rove, the focused collective is described in a panel.
    assert marked(page, ".arrival[tabindex='0']") == [(0, 0)]
    page.focus("#order-lanes .arrival[data-lane='0'][data-index='0']")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("[document.activeElement.dataset.lane, document.activeElement.dataset.index]") == ["1", "1"]
    assert marked(page, ".arrival[tabindex='0']") == [(1, 1)]
    assert page.text_content("#order-details") == (
        "device 1: grads (all-reduce, line 10) on clique [0,1,2,3] as rank 1, arrival 0 there; "
        "never issued: the device is stuck earlier")
    assert marked(page, ".arrival.lit") == [(0, 0), (1, 1), (2, 0), (3, 0)]


def test_the_hang_plays_step_by_step(tab: Page) -> None:
    page = open_order(tab)
    analysed(page, lambda: page.click("#order-example"))
    assert page.get_attribute("#order-view", "data-stepping") == "no"
    assert page.text_content("#order-step-text") == "5 steps: next › plays the run from the start."
    page.click("#order-next")
    assert page.get_attribute("#order-view", "data-frame") == "0"
    assert marked(page, ".arrival.now") == [(0, 0)]
    assert len(marked(page, ".arrival.future")) == 7
    assert page.get_attribute("#order-lanes .cycle", "visibility") == "hidden"
    assert page.text_content("#order-step-text") == (
        "step 1 of 5 · time 0: device 0 arrives at grads on clique [0,1,2,3] as rank 0: "
        "1 of 4 there")
    page.click("#order-next")
    assert marked(page, ".arrival.issued") == [(0, 0), (1, 0)]
    assert page.text_content("#order-step-text").endswith(
        "device 1 arrives at stats on clique [0,1] as rank 1: 1 of 2 there")
    shot(page, "explore-order-step-2.png")
    for _ in range(3):
        page.click("#order-next")
    assert page.get_attribute("#order-view", "data-frame-kind") == "hang"
    assert marked(page, ".arrival.now") == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert marked(page, ".arrival.future") == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert page.get_attribute("#order-lanes .cycle", "visibility") == "visible"
    assert page.text_content("#order-step-text") == (
        "step 5 of 5 · time 1: no device can move; each waits forever: device 0 in grads, "
        "device 1 in stats, device 2 in grads, device 3 in grads; the waits-for cycle: device 0 "
        "waits for device 1, device 1 waits for device 0")
    shot(page, "explore-order-hang.png")
    page.click("#order-next")  # past the end stays on the hang
    assert page.get_attribute("#order-view", "data-frame") == "4"
    page.click("#order-prev")
    assert page.get_attribute("#order-view", "data-frame") == "3"
    page.click("#order-all")
    assert page.get_attribute("#order-view", "data-stepping") == "no"
    assert page.eval_on_selector("#order-lanes .cycle", "g => g.getAttribute('visibility')") is None


def test_a_conditional_on_partition_id_shows_each_device_its_branch(tab: Page) -> None:
    page = open_order(tab)
    analysed(page, lambda: page.click("#order-conditional"))
    # Each lane is its device's own branch; the collectives meet by arrival order.
    assert lanes(page) == [[0, ["sum", "gather"]], [1, ["gather2", "sum2"]]]
    assert marked(page, ".arrival.skipped") == []
    assert page.eval_on_selector_all("#order-lanes .meet", "ls => ls.length") == 2
    assert page.eval_on_selector_all(
        "#order-findings li", "ls => ls.map(l => l.dataset.type)") == ["mismatch"] * 2
    # The wrong pairings are drawn: a red line from sum to gather2 and from gather to sum2,
    # each labelled with what it pairs, and the four collectives outlined.
    drawn = page.eval_on_selector_all(
        "#order-lanes .meet.mismatch",
        "ls => ls.map(l => [l.dataset.from, l.dataset.to, getComputedStyle(l).stroke])")
    assert drawn == [["0", "1", "rgb(168, 38, 27)"], ["0", "1", "rgb(168, 38, 27)"]]
    assert page.eval_on_selector_all(
        "#order-lanes .mismatch-label", "ls => ls.map(l => l.firstChild.textContent)") == [
        "sum ≠ gather2", "gather ≠ sum2"]
    assert sorted(marked(page, ".arrival.mismatched")) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    page.click("#order-findings li[data-finding='0']")
    assert page.text_content("#order-message").startswith(
        "Position 0 on clique [0,1]: device 0 issues sum (line 11, branch 0 of c)")
    assert not page.is_disabled("#order-next")
    shot(page, "explore-order-conditional.png")


def test_a_loaded_dump_shows_its_order(tab: Page) -> None:
    page = tab.open()
    page.click("#tab-dump")
    page.fill("#dump-text", (ROOT / "examples/data_model_2x4.hlo").read_text())
    analysed(page, lambda: page.click("#dump-load"))
    assert page.text_content("#dump-order") == (
        "order: no findings over 8 devices; see the Collective order tab")
    page.click("#tab-order")
    assert [d for d, _ in lanes(page)] == list(range(8))
    assert lanes(page)[1][1] == [
        "all_gather.3", "reduce_scatter.7", "psum_invariant.7", "ppermute.3", "ppermute.3"]
    assert page.text_content("#order-findings") == (
        "No findings: every rendezvous completes in this order.")
    assert page.eval_on_selector_all("#order-lanes .meet.open", "ls => ls.length") == 0
    assert page.eval_on_selector_all("#order-lanes .arrival.blocked", "as => as.length") == 0
    shot(page, "explore-order-dump.png")
    # A dump with a missing guest: the finding names device 1 (stuck in gather) and device 0
    # (waiting in too_few). First comes the mismatch where device 0's repeated meets device
    # 1's too_few, two collectives naming different group lists.
    page.click("#tab-dump")
    page.fill("#dump-text", (ROOT / "examples/broken.hlo").read_text())
    analysed(page, lambda: page.click("#dump-load"))
    assert page.text_content("#dump-order") == (
        "order: 1 mismatch, 1 missing over 4 devices; see the Collective order tab")
    page.click("#tab-order")
    assert page.get_attribute("#order-findings li.picked", "data-type") == "mismatch"
    page.click("#order-findings li[data-type=missing]")
    assert page.get_attribute("#order-findings li.picked", "data-type") == "missing"
    assert page.eval_on_selector_all(
        "#order-lanes .lane.hit", "ls => ls.map(l => Number(l.dataset.device))") == [0, 1]
    assert marked(page, ".arrival.block") == [(0, 1), (1, 2)]
    assert page.eval_on_selector_all("#order-lanes .cycle-arrow", "ps => ps.length") == 0
    # A dump the order layer refuses says why, and leaves no lanes from the previous one.
    page.click("#tab-dump")
    analysed(page, lambda: page.click("#dump-example"))
    assert page.text_content("#dump-order") == (
        "order: cannot be analysed (see the Collective order tab)")
    page.click("#tab-order")
    assert page.is_visible("#order-error")
    assert page.text_content("#order-error").startswith(
        "InvalidArgumentError: replica group id 2 is out of range")
    assert page.eval_on_selector_all("#order-lanes .lane", "ls => ls.length") == 0


def test_a_large_dump_caps_its_lanes_with_a_note(tab: Page) -> None:
    body = "".join(
        f"  %r{i} = f32[8]{{0}} all-reduce(%p), channel_id={i + 1}, "
        "replica_groups=[512,2]<=[1024], use_global_device_ids=true, to_apply=%add\n"
        for i in range(3))
    text = (f"HloModule big, num_partitions=1024\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n{body}  ROOT %out = f32[8]{{0}} copy(%p)\n}}\n")
    page = tab.open()
    page.click("#tab-dump")
    page.fill("#dump-text", text)
    analysed(page, lambda: page.click("#dump-load"))
    page.click("#tab-order")
    assert len(lanes(page)) == 64
    assert page.is_visible("#order-cap")
    assert page.text_content("#order-cap").startswith(
        "showing 64 of 1024 devices (the devices the findings name first, then the lowest ids)")
    assert page.text_content("#order-caption").endswith("1024 devices · one program (SPMD)")
    shot(page, "explore-order-capped.png")


@pytest.mark.parametrize("width", [800, 480])
def test_the_order_view_fits_narrow_windows(tab: Page, width: int) -> None:
    tab.page.set_viewport_size({"width": width, "height": HEIGHT})
    page = open_order(tab)
    analysed(page, lambda: page.click("#order-example"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"explore-order-width-{width}.png")


def test_the_url_names_the_order_example_shown(tab: Page) -> None:
    page = open_order(tab)
    analysed(page, lambda: page.click("#order-conditional"))
    assert "show=conditional" in page.evaluate("location.hash")
    analysed(page, lambda: page.click("#order-example"))
    link = page.url
    assert "show=opposite" in link
    # Sending the link opens the order tab on the same example.
    page.goto("about:blank")
    page.goto(link)
    page.wait_for_function("document.body.dataset.order === 'ready'")
    assert page.is_visible("#order-view") and page.get_attribute("#tab-order", "aria-selected") == "true"
    assert [d for d, _ in lanes(page)] == [0, 1, 2, 3]
    assert page.eval_on_selector_all("#order-lanes .cycle-arrow", "ps => ps.length") == 2
    # Leaving the tab leaves the example out of the URL; a dump is never in it.
    page.click("#tab-dial")
    assert "show=" not in page.evaluate("location.hash")


def test_two_versions_of_one_collective_paired_are_drawn_as_a_mismatch(tab: Page) -> None:
    """Device 0 runs ``%ar`` on f32[8], device 1 its own ``%ar`` on f32[16]: one rendezvous
    pairs the two versions, drawn red and labelled as such."""
    def module(size: int) -> bytes:
        return (
            "HloModule half, num_partitions=2\n"
            "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
            "  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n"
            f"ENTRY %main (p: f32[{size}]) -> f32[{size}] {{\n  %p = f32[{size}]{{0}} parameter(0)\n"
            f"  ROOT %ar = f32[{size}]{{0}} all-reduce(%p), channel_id=1, replica_groups={{{{0,1}}}}, "
            "use_global_device_ids=true, to_apply=%add\n}\n"
        ).encode()

    page = tab.open()
    page.click("#tab-order")
    rows = "#order-programs .program"
    for index, (size, device) in enumerate([(8, "0"), (16, "1")]):
        page.set_input_files(f"{rows} >> nth={index} >> input[type=file]", files=[{
            "name": f"half{size}.hlo", "mimeType": "text/plain", "buffer": module(size)}])
        page.fill(f"{rows} >> nth={index} >> input[type=text]", device)
    page.click("#order-run")
    page.wait_for_function("document.body.dataset.order === 'ready'")
    assert page.eval_on_selector_all(
        "#order-findings li", "ls => ls.map(l => l.dataset.type)") == ["mismatch"]
    assert page.eval_on_selector_all(
        "#order-lanes .meet.mismatch", "ls => ls.map(l => [l.dataset.from, l.dataset.to])") == [["0", "1"]]
    assert page.eval_on_selector_all(
        "#order-lanes .mismatch-label", "ls => ls.map(l => l.firstChild.textContent)") == [
        "ar: the versions differ"]
    assert sorted(marked(page, ".arrival.mismatched")) == [(0, 0), (1, 0)]
