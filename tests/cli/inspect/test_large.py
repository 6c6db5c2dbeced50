"""A big dump is read in bounded memory: proportional to its collectives, not its size."""

import json
import tracemalloc

import pytest

from meshtopo.cli import main
from meshtopo.cli._inspect._rows import inspect_file

from ._dumps import ADD

GROUPS = ("{{0,1,2,3},{4,5,6,7}}", "[4,2]<=[2,4]T(1,0)", "{{1,0},{3,2},{5,4},{7,6}}")
FILLER = (
    '  %neg.{n} = f32[1024]{{0}} negate(%p.0), metadata={{op_name="jit(step)/jit(main)/a/long/'
    'scope/name/that/pads/the/dump/negate" source_file="/src/model.py" source_line={n}}}\n'
)


def write_dump(path, target_bytes: int, collectives: int) -> None:
    """A dump of about ``target_bytes``: ``collectives`` all-reduces spread among filler."""
    per = max(1, target_bytes // 200 // collectives)
    n = 0
    previous = "p.0"
    with open(path, "w") as out:
        out.write(f"HloModule big, replica_count=2, num_partitions=4\n\n{ADD}\n")
        out.write("ENTRY %main (p: f32[1024]) -> f32[1024] {\n  %p.0 = f32[1024]{0} parameter(0)\n")
        for i in range(collectives):
            out.write("".join(FILLER.format(n=n + k) for k in range(per)))
            n += per
            out.write(
                f"  %ar.{i} = f32[1024]{{0}} all-reduce(%{previous}), channel_id={i + 1}, "
                f"replica_groups={GROUPS[i % 3]}, use_global_device_ids=true, to_apply=%add\n"
            )
            previous = f"ar.{i}"
        out.write(f"  ROOT %out = f32[1024]{{0}} negate(%{previous})\n}}\n")


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.hlo"
    write_dump(path, 22_000_000, 4000)
    return path


def peak_of(path, block_size: int) -> tuple[int, object]:
    tracemalloc.start()
    try:
        result = inspect_file(str(path), progress=False, block_size=block_size)
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


@pytest.mark.timeout(240)
def test_memory_follows_collectives_not_file_size(big_dump, tmp_path):
    size = big_dump.stat().st_size
    assert size > 19_000_000
    peak, result = peak_of(big_dump, 1 << 18)
    assert len(result.rows) == 4000
    # Three distinct groups texts: three resolutions, shared by all 4000 rows.
    assert [p.device_groups for p in result.patterns] == [
        [[0, 2, 4, 6], [1, 3, 5, 7]],
        [[0, 1], [2, 3], [4, 5], [6, 7]],
        [[2, 0], [6, 4], [3, 1], [7, 5]],
    ]
    assert peak < size / 2.5, f"peak {peak} bytes for a {size}-byte dump"
    # Half the filler, same collectives: the big dump's peak is no larger than this one's
    # and what the extra filler lines may add. (Half rather than twice the big dump: the
    # same comparison of two sizes, at a third of the reading under tracemalloc.)
    half = tmp_path / "half.hlo"
    write_dump(half, 11_000_000, 4000)
    half_peak, _ = peak_of(half, 1 << 18)
    # The reader keeps 8 bytes per instruction of a computation (a hash of its name, to check
    # operands as XLA does); merging a batch of names into the sorted array briefly holds the
    # old array, the new one and the sort's buffer, so the peak may grow by up to about 3 x 8
    # bytes and the filter's share per instruction. Beyond that it does not grow with the file.
    extra_lines = big_dump.read_bytes().count(b"\n") - half.read_bytes().count(b"\n")
    assert peak - half_peak < 32 * extra_lines, (half_peak, peak, extra_lines)


@pytest.mark.timeout(240)
def test_cli_json_of_many_collectives(tmp_path, capsys):
    # The 4000 collectives of the big dump with one filler line each: what the JSON counts
    # does not depend on the filler.
    dump = tmp_path / "many.hlo"
    write_dump(dump, 0, 4000)
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(dump), "--json"])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    payload = json.loads(out)
    assert payload["collective_count"] == 4000
    assert payload["collectives"][-1]["name"] == "ar.3999"
    assert payload["not_ascending_count"] == 1333
