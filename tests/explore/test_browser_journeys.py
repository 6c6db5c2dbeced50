"""A first-time user's journeys in headless Chromium, against a real JAX dump.

A child JAX process runs a shard_map program (psum over ``model``, then all_gather over
``data``) on a 2 x 4 mesh of permuted devices with ``--xla_dump_to`` and
``--xla_dump_hlo_as_text``. The page opens that dump by path (as ``meshtopo explore FILE``), by
its directory, by two picked files, and without its compile options (then with a pasted
table); the groups it shows and the order lanes it draws equal what ``meshtopo inspect
--json`` and ``meshtopo order --json`` print for the file. Also: every control of the default
page answers, one stale line with the bad field marked, play then edit, tab and dial in the
URL with Back, and a reload that says which file it could not keep. Screenshots go to
test-artifacts/; the console holds no uncaught error. No step waits on the clock: each waits
for the page's own answer counters.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meshtopo.explore import ExplorerServer, InitialDump

from ._jax_dump import MESH_ORDER
from .conftest import CHROMIUM, ROOT, Page

ARTIFACTS = ROOT / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium"
    ),
]


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.fixture
def named(server: ExplorerServer, dump_file: Path) -> Iterator[Path]:
    server.initial_dump = InitialDump(dump_file.name, dump_file.read_text(), str(dump_file))
    try:
        yield dump_file
    finally:
        server.initial_dump = None


def answered(page: Any) -> None:
    """Wait until the dial has shown the answer (or error) to its latest request."""
    page.wait_for_function(
        "document.body.dataset.pending === undefined && "
        "document.body.dataset.answered === String(explorer.dial.seq)")


def dump_ready(page: Any, name: str) -> None:
    """Wait for the dump to be read, its first collective dialed and its order drawn."""
    page.wait_for_function("document.body.dataset.dump === 'ready'")
    page.wait_for_function(
        f"explorer.order.source === {json.dumps('the dump ' + name)} && "
        "document.body.dataset.order === 'ready'")
    answered(page)


def shown_groups(page: Any) -> list[list[int]]:
    return sorted(page.evaluate("explorer.resultView.result.device_groups.groups"))


def each_collective(page: Any) -> dict[str, list[list[int]]]:
    """The device groups the page shows for each collective of the dump, picked in turn."""
    found = {}
    names = page.eval_on_selector_all("#collectives li", "ls => ls.map(l => l.dataset.name)")
    for index, name in enumerate(names):
        before = page.evaluate("explorer.dial.renders")
        page.click(f"#collectives li >> nth={index}")
        page.wait_for_function(f"explorer.dial.renders > {before}")
        answered(page)
        found[name] = shown_groups(page)
    return found


def lanes(page: Any) -> dict[int, list[tuple[str, list[int]]]]:
    result = page.evaluate("explorer.order.result")
    return {lane["device"]: [(a["name"], result["cliques"][a["clique"]]) for a in lane["arrivals"]]
            for lane in result["lanes"]}


def check_like_the_cli(page: Any, cli: dict[str, Any]) -> None:
    assert page.get_attribute("#dump-placement", "data-source") != "default"
    assert each_collective(page) == cli["groups"]
    assert lanes(page) == cli["lanes"]
    assert "compile_options.textproto" in (page.text_content("#order-notes") or "")


def test_the_cli_sees_the_permuted_mesh(cli: dict[str, Any]) -> None:
    # The dump's table is the mesh's device order, so groups are not XLA's default.
    assert cli["table"] == [list(MESH_ORDER)]
    assert cli["groups"]["psum.7"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert cli["lanes"][0] == [("psum.7", [0, 2, 4, 6]), ("all_gather.3", [0, 1])]
    assert sorted(cli["lanes"]) == list(range(8))


def test_a_dump_named_on_the_command_line_is_placed_everywhere_as_the_cli(
        tab: Page, named: Path, cli: dict[str, Any]) -> None:
    page = tab.open()
    dump_ready(page, named.name)
    check_like_the_cli(page, cli)
    page.click("#tab-order")
    # The psum's cliques skip lanes ([0,2,4,6]): those lines keep to the gaps between lanes
    # and the gutters between boxes, so they cross no box of the lanes between.
    far = page.eval_on_selector_all(
        "path.meet",
        "ps => ps.filter(p => p.dataset.to - p.dataset.from > 1).map(p => p.getAttribute('d'))")
    assert far and all(" V" in d and " H" in d for d in far)
    crossing = page.evaluate("""() => {
      const boxes = [...document.querySelectorAll('.arrival rect')].map(r => r.getBBox());
      let hits = 0;
      for (const p of document.querySelectorAll('path.meet')) {
        if (p.dataset.to - p.dataset.from < 2) continue;
        const length = p.getTotalLength();
        for (let t = 2; t < length - 2; t += 2) {
          const pt = p.getPointAtLength(t);
          if (boxes.some(b => pt.x > b.x && pt.x < b.x + b.width && pt.y > b.y && pt.y < b.y + b.height)) hits++;
        }
      }
      return hits; }""")
    assert crossing == 0
    shot(page, "explore-journey-named-order.png")


def test_a_dump_directory_opened_in_the_page_takes_its_compile_options(
        tab: Page, dump_file: Path, cli: dict[str, Any]) -> None:
    page = tab.open()
    page.click("#tab-dump")
    page.set_input_files("#dump-dir", str(dump_file.parent))
    dump_ready(page, dump_file.name)
    assert page.input_value("#dump-pick") != ""
    assert "compile_options.textproto" in page.text_content("#dump-placement")
    check_like_the_cli(page, cli)
    shot(page, "explore-journey-directory.png")


def test_two_picked_files_place_the_module_by_the_compile_options(
        tab: Page, dump_file: Path, cli: dict[str, Any]) -> None:
    options = dump_file.parent / dump_file.name.split(".cpu_")[0] / "compile_options.textproto"
    page = tab.open()
    page.click("#tab-dump")
    page.set_input_files("#dump-file", [str(dump_file), str(options)])
    dump_ready(page, dump_file.name)
    check_like_the_cli(page, cli)


def test_without_compile_options_the_page_says_so_and_takes_a_pasted_table(
        tab: Page, dump_file: Path, cli: dict[str, Any]) -> None:
    page = tab.open()
    page.click("#tab-dump")
    page.set_input_files("#dump-file", [str(dump_file)])
    dump_ready(page, dump_file.name)
    assert page.get_attribute("#dump-placement", "data-source") == "default"
    assert "XLA's default placement" in page.text_content("#dump-placement")
    # XLA's default placement gives other groups than the job's.
    assert shown_groups(page) != cli["groups"]["psum.7"]
    page.click("#dump-table-box summary")
    page.fill("#dump-table", " ".join(map(str, MESH_ORDER)))
    page.click("#dump-table-use")
    page.wait_for_function("document.querySelector('#dump-placement').dataset.source === 'given'")
    dump_ready(page, dump_file.name)
    assert each_collective(page) == cli["groups"]
    assert lanes(page) == cli["lanes"]
    # A table of the wrong size is refused next to the table.
    page.fill("#dump-table", "0 1 2")
    page.click("#dump-table-use")
    page.wait_for_function("document.body.dataset.dump === 'error'")
    assert page.is_visible("#dump-table-error")
    assert page.get_attribute("#dump-table", "aria-invalid") == "true"


# ---------------------------------------------------------------- the default page


def test_every_control_of_the_default_page_answers(tab: Page) -> None:
    page = tab.open()
    shot(page, "explore-journey-cold-open.png")
    first = shown_groups(page)
    # Replicas x partitions keeps the collective: the same devices, the same groups.
    page.click("label:has(input[name=gridkind][value=grid])")
    answered(page)
    assert page.evaluate("document.body.dataset.state") == "ready"
    assert shown_groups(page) == first
    assert page.is_hidden("#input-error")
    page.click("label:has(input[name=gridkind][value=mesh])")
    answered(page)
    radios = [f"label:has(input[name={name}][value={value}])" for name, value in [
        ("groupsrc", "text"), ("groupsrc", "over"), ("ugdi", "false"), ("ugdi", "absent"),
        ("ugdi", "true")]]
    for selector in [*radios, "#channel"]:
        page.click(selector)
        answered(page)
        assert page.evaluate("document.body.dataset.state") == "ready", selector
    for select, value in [("#mesh-order", "reversed"), ("#assignment", "default"),
                          ("#opcode", "all-gather")]:
        page.select_option(select, value)
        answered(page)
        assert page.evaluate("document.body.dataset.state") == "ready", select
    page.fill("#cluster", "h100-8x")
    answered(page)
    page.click("label:has(input[name=colourby][value=host])")
    answered(page)
    assert page.evaluate("document.body.dataset.state") == "ready"
    assert page.evaluate("explorer.resultView.result.cells.host.length") == 8
    # The step player works on written groups (disabled, with nothing to step, otherwise).
    for button in ("#step-next", "#step-prev", "#step-first", "#step-clear"):
        if page.is_enabled(button):
            page.click(button)
        assert page.evaluate("document.body.dataset.state") == "ready", button
    page.click("#modes .mode-col >> nth=0")
    answered(page)
    assert page.evaluate("document.body.dataset.state") == "ready"
    page.click("#examples button >> nth=0")
    answered(page)
    assert page.evaluate("document.body.dataset.state") == "ready"
    page.click("#add-axis")
    answered(page)
    # A third axis doubles the mesh: an answer, or one message beside the control it names.
    if page.evaluate("document.body.dataset.state") == "error":
        assert page.get_attribute("#input-error", "data-field") is not None
    for tab_id in ("#tab-dump", "#tab-order", "#tab-dial"):
        page.click(tab_id)
        assert page.get_attribute(tab_id, "aria-selected") == "true"
    page.click("#tab-dump")
    page.click("#dump-example")
    page.wait_for_function("document.body.dataset.dump === 'ready'")
    page.click("#tab-order")
    page.click("#order-example")
    page.wait_for_function("document.body.dataset.order === 'ready'")
    page.click("#order-conditional")
    page.wait_for_function(
        "document.body.dataset.order === 'ready' && explorer.order.source.includes('conditional')")
    for button in ("#order-next", "#order-prev", "#order-first", "#order-all",
                   "#order-zoom-in", "#order-zoom-out", "#order-zoom-fit"):
        page.click(button)
    assert tab.errors == []


def test_a_bad_field_is_marked_in_the_dials_words_with_one_stale_line(tab: Page) -> None:
    page = tab.open()
    page.fill("#mesh-axes .axis >> nth=1 >> input[type=number]", "0")
    answered(page)
    assert page.evaluate("document.body.dataset.state") == "error"
    size = "#mesh-axes .axis >> nth=1 >> input[type=number]"
    assert page.get_attribute(size, "aria-invalid") == "true"
    beside = page.evaluate(
        "document.querySelectorAll('#mesh-axes .axis')[1]"
        ".querySelector('input[type=number]').nextElementSibling.id")
    assert beside == "input-error"
    message = page.text_content("#input-error")
    assert "axis 2's size" in message and "mesh.axes" not in message
    assert page.is_hidden("#request-error")  # said once, beside the field
    assert "mesh.axes" not in page.text_content("#findings")
    stale_lines = page.evaluate(
        "[...document.querySelectorAll('[data-stale]')]"
        ".filter(e => getComputedStyle(e, '::before').content !== 'none').length")
    assert stale_lines == 1
    shot(page, "explore-journey-bad-field.png")
    page.fill(size, "4")
    answered(page)
    assert page.get_attribute(size, "aria-invalid") is None
    assert page.evaluate("document.querySelectorAll('[data-stale]').length") == 0


def test_an_edit_while_playing_leaves_no_cell_dimmed(tab: Page) -> None:
    page = tab.open()
    page.click("#step-play")
    page.wait_for_function("document.querySelector('#views').classList.contains('stepping')")
    page.uncheck("#over-axes input[value=model]")
    page.check("#over-axes input[value=data]")
    answered(page)
    assert not page.evaluate("document.querySelector('#views').classList.contains('stepping')")
    assert page.evaluate("explorer.player.timer") is None


def test_the_shuffle_is_said_in_one_sentence(tab: Page) -> None:
    page = tab.open("#kind=mesh&axes=data:2,model:4&order=0.2.4.6.1.3.5.7&mr=1&da=mesh"
                    "&ch=1&ugdi=true&over=model")
    # Flattened id 1 (replica 0, partition 1) runs on the device at mesh position 1: device 2.
    assert page.text_content("#shuffle") == (
        "replica 0, partition 1 has flattened id 1 (r·P + p) but is device 2, because the "
        "mesh's device order puts it there (JAX runs flattened id f on the device at mesh "
        "position f).")


# ---------------------------------------------------------------- the URL


def test_tab_and_dial_are_in_the_url_and_back_returns(tab: Page) -> None:
    page = tab.open()
    page.click("#tab-order")
    assert "tab=order" in page.evaluate("location.hash")
    page.click("#tab-dial")
    page.check("#over-axes input[value=data]")
    answered(page)
    with_data = page.evaluate("location.hash")
    assert "over=model%2Cdata" in with_data or "over=data" in with_data
    page.go_back()
    page.wait_for_function(f"location.hash !== {json.dumps(with_data)}")
    answered(page)
    assert page.evaluate("explorer.url.ui.over") == ["model"]
    page.go_back()
    page.wait_for_function("document.querySelector('#tab-order').getAttribute('aria-selected') === 'true'")
    page.go_forward()
    page.wait_for_function("document.querySelector('#tab-dial').getAttribute('aria-selected') === 'true'")
    # Still the page: Back never left it.
    assert page.url.startswith(tab.server.url)


def _order_example(page: Any) -> None:
    """Open the order tab's example (its entry names it)."""
    page.click("#tab-order")
    page.click("#order-example")
    page.wait_for_function("location.hash.includes('show=opposite')")


def test_back_and_forward_cross_an_order_example_and_keep_forward(own_tab: Page) -> None:
    # A page of its own: Chromium counts at most 50 entries in history.length.
    page = own_tab.open()
    _order_example(page)
    entries = page.evaluate("history.length")
    page.click("#tab-dial")
    # One entry for the switch, naming no example.
    assert page.evaluate("history.length") == entries + 1
    assert "show=" not in page.evaluate("location.hash")
    page.go_back()
    page.wait_for_function("document.querySelector('#tab-order').getAttribute('aria-selected') === 'true'")
    assert "show=opposite" in page.evaluate("location.hash")
    page.go_forward()
    page.wait_for_function("document.querySelector('#tab-dial').getAttribute('aria-selected') === 'true'")
    assert page.evaluate("history.length") == entries + 1


def test_a_late_answer_to_a_restored_entry_leaves_a_later_entry_alone(own_tab: Page) -> None:
    # Back restores the order example's entry and asks for an answer; Forward moves the URL
    # on before it comes (its hashchange not yet run). The answer must not open the example
    # again over the later entry, which would drop it from Forward.
    page = own_tab.open()
    _order_example(page)
    page.click("#tab-dial")
    answered(page)
    later = page.evaluate("location.hash")
    held: list[Any] = []

    def hold(route: Any) -> None:  # answers wait until let go below
        held.append(route)

    page.route("**/api/**", hold)
    page.go_back()
    page.wait_for_function("document.querySelector('#tab-order').getAttribute('aria-selected') === 'true'")
    assert held  # the restore's question is held
    page.evaluate(f"history.pushState(null, '', {json.dumps(later)})")  # no hashchange
    for route in held:
        route.continue_()
    page.unroute("**/api/**")  # (what came meanwhile goes on too)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("location.hash") == later


def test_a_reload_restores_the_page_and_names_the_file_it_lost(
        tab: Page, dump_file: Path) -> None:
    page = tab.open()
    page.click("#tab-dump")
    page.set_input_files("#dump-file", [str(dump_file)])
    dump_ready(page, dump_file.name)
    assert "file=" in page.evaluate("location.hash")
    page.reload()
    page.wait_for_function("['ready', 'error'].includes(document.body.dataset.state)")
    page.wait_for_function("document.body.dataset.lostFile !== undefined")
    assert page.get_attribute("#tab-dump", "aria-selected") == "true"
    assert dump_file.name in page.text_content("#dump-status")
    assert "open it again" in page.text_content("#dump-status")


@pytest.mark.parametrize("size", [(800, 600), (1920, 1080)], ids=["800x600", "1920x1080"])
def test_the_page_at_two_window_sizes(tab: Page, size: tuple[int, int]) -> None:
    page = tab.open()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    answered(page)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    shot(page, f"explore-journey-{size[0]}x{size[1]}.png")


# ---------------------------------------------------------------- details at the pointer


@pytest.mark.parametrize("view", ["mesh", "flat", "device"])
def test_hover_at_64_devices_shows_a_tooltip_beside_the_cell(tab: Page, view: str) -> None:
    page = tab.open("#kind=mesh&axes=data:8,model:8&order=reversed&mr=1&da=mesh&ch=1"
                    "&ugdi=true&over=model")
    cells = f".pane[data-view={view}] .cell"
    assert page.eval_on_selector_all(cells, "cs => cs.length") == 64
    for index in (0, 63):
        cell = page.locator(cells).nth(index)
        cell.scroll_into_view_if_needed()
        cell.hover()
        page.wait_for_function(
            f"!document.querySelector('#cell-tip').hidden && "
            f"document.querySelector('#cell-tip').dataset.flat === {json.dumps(cell.get_attribute('data-flat'))}")
        box = page.locator("#cell-tip").bounding_box()
        at = cell.bounding_box()
        assert box is not None and at is not None
        size = page.viewport_size
        assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"]
        assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"]
        # Next to the cell: touching its right or left edge within a few pixels, level with it.
        beside = min(abs(box["x"] - (at["x"] + at["width"])), abs(box["x"] + box["width"] - at["x"]))
        assert beside <= 12
        assert box["y"] <= at["y"] + at["height"] and box["y"] + box["height"] >= at["y"]
        text = page.text_content("#cell-tip")
        flat = int(cell.get_attribute("data-flat") or "-1")
        result = page.evaluate("explorer.resultView.result")
        device = result["cells"]["device_id"][flat]
        assert f"device {device}: replica 0, partition {flat}, flattened id {flat}" in text
        assert "mesh position data=" in text and "rank" in text
    shot(page, f"explore-journey-tooltip-{view}.png")


# ---------------------------------------------------------------- the order of the user's programs


def test_an_mpmd_pair_loaded_by_the_user_draws_its_deadlock(tab: Page) -> None:
    examples = ROOT / "examples"
    page = tab.open()
    page.click("#tab-order")
    rows = "#order-programs .program"
    page.set_input_files(f"{rows} >> nth=0 >> input[type=file]", str(examples / "order_forward.hlo"))
    page.fill(f"{rows} >> nth=0 >> input[type=text]", "0,2,3")
    page.set_input_files(f"{rows} >> nth=1 >> input[type=file]", str(examples / "order_backward.hlo"))
    page.click("#order-run")
    # Each program of several needs its devices: said beside that program's field.
    page.wait_for_function("!document.querySelector('#order-own-error').hidden")
    assert page.get_attribute(f"{rows} >> nth=1 >> input[type=text]", "aria-invalid") == "true"
    assert "program 2" in page.text_content("#order-own-error")
    page.fill(f"{rows} >> nth=1 >> input[type=text]", "1")
    page.click("#order-run")
    page.wait_for_function(
        "document.body.dataset.order === 'ready' && "
        "explorer.order.source === 'order_forward.hlo on 0,2,3; order_backward.hlo on 1'")
    result = page.evaluate("explorer.order.result")
    assert result["findings"][0]["type"] == "deadlock"
    assert page.evaluate("document.querySelector('#order-own-error').hidden")
    # The waits-for cycle drawn between device 0 (or 2, 3) and device 1.
    arrows = page.eval_on_selector_all(
        ".cycle-arrow", "as => as.map(a => [Number(a.dataset.from), Number(a.dataset.to)])")
    assert len(arrows) == 2 and {d for pair in arrows for d in pair} >= {1}
    assert page.locator(".arrival.block").count() >= 2
    # A finding clicked takes the view to where its devices block.
    page.click("#order-findings li >> nth=0")
    assert page.evaluate("document.activeElement.classList.contains('block')")
    shot(page, "explore-journey-mpmd-deadlock.png")


def test_500_collectives_on_8_devices_draw_every_arrival_and_answer(tab: Page) -> None:
    # 500 all-reduces that all 8 devices issue.
    lines = ["HloModule long, num_partitions=8",
             "%add (x: f32[], y: f32[]) -> f32[] {", "  %x = f32[] parameter(0)",
             "  %y = f32[] parameter(1)", "  ROOT %s = f32[] add(%x, %y)", "}",
             "ENTRY %main (p: f32[8]) -> f32[8] {", "  %p = f32[8]{0} parameter(0)"]
    previous = "%p"
    for k in range(500):
        lines.append(f"  %ar{k} = f32[8]{{0}} all-reduce({previous}), channel_id={k + 1}, "
                     "replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, "
                     "to_apply=%add")
        previous = f"%ar{k}"
    lines += [f"  ROOT %out = f32[8]{{0}} copy({previous})", "}"]
    page = tab.open()
    page.click("#tab-order")
    page.set_input_files("#order-programs .program >> nth=0 >> input[type=file]", files=[{
        "name": "long.hlo", "mimeType": "text/plain", "buffer": "\n".join(lines).encode()}])
    page.click("#order-programs .program >> nth=1 >> button")
    page.click("#order-run")
    page.wait_for_function("document.body.dataset.order === 'ready'")
    # Every arrival is drawn: the 500 all-reduces on each of the 8 lanes, in the module's order.
    assert page.locator("#order-lanes .arrival").count() == 8 * 500
    for device in (0, 7):
        assert page.eval_on_selector_all(
            f"#order-lanes .arrival[data-lane='{device}']", "as => as.map(a => a.dataset.name)"
        ) == [f"ar{k}" for k in range(500)]
    assert page.locator(".lane-sub", has_text="of 500").count() == 0
    # The whole run fits the view's width.
    fits = page.evaluate(
        "(() => { const box = document.querySelector('#order-lanes');"
        " return box.querySelector('svg').getBoundingClientRect().width <= box.clientWidth; })()")
    overview = float(page.get_attribute("#order-lanes", "data-zoom") or "1")
    assert fits and overview < 1
    for _ in range(6):
        page.click("#order-zoom-in")
    assert float(page.get_attribute("#order-lanes", "data-zoom") or "0") == 0.4
    # Still answering: pointing at a collective describes it and lights its rendezvous.
    page.hover(".arrival[data-lane='7'][data-index='3']")
    assert page.text_content("#order-details").startswith("device 7: ar3 (all-reduce")
    assert page.locator(".arrival.lit").count() == 8
    # The last collective, reached by scrolling, takes a click and the arrow keys.
    last = page.locator(".arrival[data-lane='0'][data-index='499']")
    last.scroll_into_view_if_needed()
    last.click()
    assert page.evaluate("document.activeElement.dataset.name") == "ar499"
    assert page.text_content("#order-details").startswith("device 0: ar499 (all-reduce")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("[document.activeElement.dataset.lane, document.activeElement.dataset.index]") == ["1", "499"]
    assert page.locator(".arrival.lit").count() == 8
    shot(page, "explore-journey-order-overview.png")


# The drawn text of every header of a view (a Range around its text: the glyphs, upright or
# on end), as [label, left, top, right, bottom].
HEAD_TEXT = """hs => hs.map(h => { const t = document.createRange(); t.selectNodeContents(h);
  const r = t.getBoundingClientRect(); return [h.textContent, r.left, r.top, r.right, r.bottom]; })"""


def overlaps(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    """The pairs of labels whose drawn text overlaps (by more than half a pixel both ways)."""
    return [(a[0], b[0]) for a, b in itertools.combinations(boxes, 2)
            if min(a[3], b[3]) - max(a[1], b[1]) > 0.5 and min(a[4], b[4]) - max(a[2], b[2]) > 0.5]


@pytest.mark.parametrize("size", [(800, 600), (1920, 1080)], ids=["800x600", "1920x1080"])
@pytest.mark.parametrize("columns", [16, 64, 256])
def test_header_labels_stay_apart(tab: Page, columns: int, size: tuple[int, int]) -> None:
    tab.page.set_viewport_size({"width": size[0], "height": size[1]})
    page = tab.open(f"#kind=mesh&axes=data:2,model:{columns}&order=default&mr=1&da=mesh&ch=1"
                    "&ugdi=true&over=model")
    assert page.get_attribute("#views-box", "data-render") == "dom"
    mesh = page.eval_on_selector_all(".pane[data-view=mesh] .col-head", HEAD_TEXT)
    # Every column keeps its label, in order.
    assert [b[0] for b in mesh] == [f"model={i}" for i in range(columns)]
    for view in ("mesh", "flat", "device"):
        boxes = page.eval_on_selector_all(f".pane[data-view={view}] .head, "
                                          f".pane[data-view={view}] .corner", HEAD_TEXT)
        assert len(boxes) > 2 and overlaps(boxes) == [], view
    shot(page, f"explore-journey-headers-{columns}-{size[0]}x{size[1]}.png")


@pytest.mark.parametrize("size", [(800, 600), (1920, 1080)], ids=["800x600", "1920x1080"])
def test_a_1xn_strip_scrolls_with_its_headers(tab: Page, size: tuple[int, int]) -> None:
    """1 replica x 32 partitions: the strip scrolls inside its pane (the page does not), the
    row header stays in view and each column header stays above its cell."""
    tab.page.set_viewport_size({"width": size[0], "height": size[1]})
    page = tab.open("#kind=grid&r=1&p=32&da=default&ch=1&ugdi=true&groups=%7B%7B0%2C1%7D%7D")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    wrap = ".pane[data-view=flat] .vwrap"
    page.eval_on_selector(wrap, "w => { w.scrollLeft = w.scrollWidth; }")
    placed = page.eval_on_selector(wrap, """w => {
      const box = w.getBoundingClientRect();
      const inside = (n) => { const r = n.getBoundingClientRect();
        return r.left >= box.left - 0.5 && r.right <= box.right + 0.5; };
      const heads = [...w.querySelectorAll('.col-head')];
      const cells = [...w.querySelectorAll('.cell')];
      const above = heads.every((h, i) => { const a = h.getBoundingClientRect();
        const c = cells.find((x) => x.dataset.col === String(i)).getBoundingClientRect();
        return a.left < c.right && c.left < a.right && a.bottom <= c.top + 0.5; });
      return {labels: heads.map((h) => h.textContent), above,
              row: inside(w.querySelector('.row-head')), last: inside(cells[cells.length - 1])};
    }""")
    assert placed == {"labels": [f"p{i}" for i in range(32)], "above": True, "row": True,
                      "last": True}
    shot(page, f"explore-journey-strip-{size[0]}x{size[1]}.png")


def test_a_tall_grid_scrolls_under_its_headers(tab: Page) -> None:
    """1,024 partitions wrap into 32 rows of 32, taller than an 800 x 600 window: scrolled to
    its far corner, the column and row headers are still in view above and beside the cells."""
    tab.page.set_viewport_size({"width": 800, "height": 600})
    page = tab.open("#kind=grid&r=1&p=1024&da=default&ch=1&ugdi=true&groups=%7B%7B0%2C1%7D%7D")
    wrap = ".pane[data-view=flat] .vwrap"
    page.eval_on_selector(wrap, "w => { w.scrollTop = w.scrollHeight; w.scrollLeft = w.scrollWidth; }")
    kept = page.eval_on_selector(wrap, """w => {
      const box = w.getBoundingClientRect();
      const seen = (n) => { const r = n.getBoundingClientRect();
        return r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5
          && r.left >= box.left - 0.5 && r.right <= box.right + 0.5; };
      const last = w.querySelector('.cell[data-flat="1023"]');
      const heads = [...w.querySelectorAll('.col-head')];
      const rows = [...w.querySelectorAll('.row-head')];
      return {scrolled: w.scrollTop > 0, last: seen(last),
              column: seen(heads[heads.length - 1]), row: seen(rows[rows.length - 1]),
              labels: [heads[heads.length - 1].textContent, rows[rows.length - 1].textContent]};
    }""")
    assert kept == {"scrolled": True, "last": True, "column": True, "row": True,
                    "labels": ["+31", "f992"]}
    shot(page, "explore-journey-tall-grid-800x600.png")


def test_the_canvas_keeps_axis_headers(tab: Page) -> None:
    page = tab.open("#kind=mesh&axes=data:64,model:64&order=default&mr=1&da=mesh&ch=1"
                    "&ugdi=true&over=model")
    assert page.get_attribute("#views-box", "data-render") == "canvas"
    for zoom in ("#zoom-fit", "#zoom-in"):
        page.click(zoom)
        page.click(zoom)
        assert int(page.get_attribute("#grid-canvas", "data-col-heads") or "0") > 1
        assert int(page.get_attribute("#grid-canvas", "data-row-heads") or "0") > 1
    shot(page, "explore-journey-canvas-headers.png")
