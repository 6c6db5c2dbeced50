"""``inspect --html``: one self-contained page with a device grid per collective."""

import re

import pytest

from meshtopo.cli import main

from ._dumps import MIXED_2X2, REJECTED, module


def report(tmp_path, capsys, text, *args, code=0):
    source = tmp_path / "m.hlo"
    source.write_text(text)
    page = tmp_path / "report.html"
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(source), "--html", str(page), *args])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (code, "")
    assert out.endswith(f"report written to {page}\n")
    return page.read_text()


def test_page_is_self_contained(tmp_path, capsys):
    page = report(tmp_path, capsys, MIXED_2X2)
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"\bsrc=", page) and "@import" not in page and "url(http" not in page


def test_one_grid_per_collective_with_labelled_cells(tmp_path, capsys):
    page = report(tmp_path, capsys, MIXED_2X2)
    grids = re.findall(r'<svg class="grid"[^>]*><use href="#p(\d+)"/></svg>', page)
    assert len(grids) == 5
    # ar2 and rs resolve to the same device groups under the same mode: one drawing shared.
    assert len(set(grids)) == 4
    for index in set(grids):
        assert f'<symbol id="p{index}"' in page
    # Cells: replica/partition, flattened id/device id (* where they differ), group.rank.
    assert ">r0 p1</text>" in page and ">f1 d2*</text>" in page and ">f0 d0</text>" in page
    assert ">g0.1</text>" in page
    assert "flattened id 1, device 2, g0.1 (flattened id != device id)" in page
    # The all-gather's group {1,3,0,2} is listed in rank order in its legend.
    assert "g 0: <code>{1,3,0,2}</code>" in page
    # The permute's pairs form two 2-cycles (one per replica).
    assert "chain 0: <code>0\u21922\u21920</code>" in page
    for index, name in enumerate(("ar", "ag", "cp", "rs", "ar2")):
        assert f'<a href="#c{index}">{name}</a>' in page
        assert f'<section class="collective" id="c{index}"><h3>{name} ' in page


def test_rejected_collective_shows_the_error(tmp_path, capsys):
    page = report(tmp_path, capsys, REJECTED, code=1)
    assert '<p class="error">Invalid combination of has_channel_id' in page
    assert '<svg class="grid"' not in page


def test_grids_above_the_cell_limit_are_summarised(tmp_path, capsys):
    text = module(
        "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups=[2,4096]<=[8192], to_apply=%add\n",
        replica_count=8192,
    )
    page = report(tmp_path, capsys, text)
    assert '<svg class="grid"' not in page and "<symbol" not in page
    assert "1 &times; 8192 = 8192 cells: grid not drawn (over 4096)" in page.replace(
        "8192 &times; 1", "1 &times; 8192"
    )
    assert len(page) < 200_000


def test_long_one_row_grid_is_wrapped(tmp_path, capsys):
    text = module(
        "  ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[8,32]<=[256], "
        "use_global_device_ids=true, to_apply=%add\n",
        num_partitions=256,
    )
    page = report(tmp_path, capsys, text)
    assert "cells in flattened-id order, 16 per row" in page
    assert page.count("<g><title>") == 256


def test_table_has_mesh_axes_op_name_and_both_byte_columns(tmp_path, capsys):
    page = report(tmp_path, capsys, MIXED_2X2, "--mesh", "x=2,y=2")
    assert "<th>mesh axes</th>" in page and "<th>op_name</th>" in page
    assert '<th class="num">payload/device</th><th class="num">wire/device</th>' in page
    # ar: flattened ids {{0,1},{2,3}} are the rows of the 2x2 mesh, i.e. axis y.
    assert "<td>kFlattenedID</td><td><code>{{0,1},{2,3}}</code></td>" in page
    row = page.split('<a href="#c0">ar</a>')[1].split("</tr>")[0]
    assert "<td>y</td>" in row and "<td class=num>32 B</td>" in row
