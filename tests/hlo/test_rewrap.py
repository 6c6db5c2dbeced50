"""One grammar, every path: white space and comments may stand between any two tokens.

Re-wrapping a module at random token boundaries (a newline before a comma, after ``=``,
inside operand lists and tuple shapes, comments after commas) changes nothing any collective
says, read by ``parse_module`` or streamed in small blocks; cutting a module anywhere inside a
computation is an ``HloParseError`` from every path, and exit 2 from the commands.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo import hlo
from meshtopo.cli import main

from ._dumps import dumps
from .test_fuzz import HAND

pytestmark = pytest.mark.jax

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Where a line break or comment may go: after a comma, around '=', inside '(' ')'.
_BOUNDARY = re.compile(r", | = |\((?=%)|(?<=[A-Za-z0-9_.])\)")
_WRAPS = {
    ", ": [", ", "\n      , ", ",\n  ", ", /* c */ ", ",\n/* a, b */\n ", ", // note\n"],
    " = ": [" = ", " =\n    ", " /* = */ = ", "\n  = "],
    "(": ["(", "(\n      ", "( /* index=0 */ "],
    ")": [")", "\n  )", " /* end */ )"],
}


def _texts() -> list[str]:
    return [HAND, *dumps().values(), *(p.read_text() for p in sorted(EXAMPLES.glob("*.hlo"))
                                        if p.name != "broken.hlo")]


def facts(module_or_stream: object) -> list[tuple[object, ...]]:
    """Everything a collective says about who talks, as plain values."""
    out = []
    for c in module_or_stream:  # type: ignore[attr-defined]
        groups = None if c.replica_groups is None else c.replica_groups.replica_groups
        out.append((c.name, c.opcode, groups, c.source_target_pairs, c.channel_id,
                    c.use_global_device_ids, str(c.mode), c.dimensions, c.to_apply))
    return out


def rewrap(text: str, choices: list[int]) -> str:
    """``text`` with its boundaries outside strings re-wrapped by ``choices`` (cycled)."""
    pieces = text.split('"')
    count = 0

    def wrap(match: re.Match[str]) -> str:
        nonlocal count
        options = _WRAPS[match.group()]
        count += 1
        return options[choices[count % len(choices)] % len(options)]

    for i in range(0, len(pieces), 2):  # even pieces are outside strings
        pieces[i] = _BOUNDARY.sub(wrap, pieces[i])
    return '"'.join(pieces)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 20), st.lists(st.integers(0, 5), min_size=1, max_size=40))
def test_rewrapping_changes_no_collective(index: int, choices: list[int]) -> None:
    texts = _texts()
    text = texts[index % len(texts)]
    expected = facts(hlo.parse_module(text).collectives)
    wrapped = rewrap(text, choices)
    assert facts(hlo.parse_module(wrapped).collectives) == expected
    streamed = hlo.iter_collectives(io.StringIO(wrapped), progress=False, block_size=512)
    assert facts(streamed) == expected


def test_the_issue_s_continuation_lines() -> None:
    base = ("HloModule test, replica_count=2, num_partitions=2\nadd {\n  x = f32[] parameter(0)\n"
            "  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\nENTRY main {\n"
            "  p = f32[128]{0} parameter(0)\n")
    one_line = base + ("  ROOT crs = f32[128]{0} all-reduce(p), to_apply=add, replica_groups="
                       "{{0,1},{2,3}}, channel_id=1, use_global_device_ids=true\n}\n")
    for text in [
        base + "  ROOT crs = f32[128]{0} all-reduce(p), to_apply=add, replica_groups={{0,1},{2,3}}\n"
               "                                   ,channel_id=1, use_global_device_ids=true\n}\n",
        base + "  ROOT crs =\n f32[128]{0} all-reduce(p), to_apply=add, replica_groups={{0,1},{2,3}}"
               ", channel_id=1, use_global_device_ids=true\n}\n",
        one_line.split("\n", 1)[1],  # no HloModule line: counts default to 1
    ]:
        module = hlo.parse_module(text, replica_count=2, num_partitions=2)
        [c] = module.collectives
        assert (str(c.mode), c.device_groups()) == ("kFlattenedID", [[0, 2], [1, 3]])
        assert hlo.verify(module) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 20), st.floats(0, 1, exclude_max=True))
def test_a_module_cut_inside_a_computation_is_refused_by_every_path(index: int,
                                                                    where: float) -> None:
    texts = _texts()
    text = texts[index % len(texts)]
    # Computations do not nest: the n-th header line ending in '{' pairs with the n-th '}'.
    opens = [m.end() for m in re.finditer(r"\{\n", text)]
    closes = [m.start() for m in re.finditer(r"\n\}", text)]
    spans = list(zip(opens, closes, strict=True))
    start, end = spans[int(where * len(spans))]
    cut = text[: start + int((end + 1 - start) * (where * len(spans) % 1))]
    with pytest.raises(mt.HloParseError) as whole:
        hlo.parse_module(cut)
    assert whole.value.line in range(1, cut.count("\n") + 2)
    with pytest.raises(mt.HloParseError) as streamed:
        list(hlo.iter_collectives(io.StringIO(cut), progress=False, block_size=256))
    assert (streamed.value.line, streamed.value.message) == (whole.value.line,
                                                             whole.value.message)


@pytest.mark.parametrize("command", ["inspect", "check", "neuron", "order"])
def test_commands_exit_2_on_a_cut_module(command: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = (EXAMPLES / "data_model_2x4.hlo").read_text()
    path = tmp_path / "cut.hlo"
    path.write_text(text[: text.rindex("\n}") - 5])
    with pytest.raises(SystemExit) as done:
        main([command, str(path)])
    _, err = capsys.readouterr()
    assert done.value.code == 2
    assert err.startswith(f"meshtopo: error: {path}:") and err.count("\n") == 1
