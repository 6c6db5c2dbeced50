"""``to_text()`` round trips: jaxlib reads the printed module back to the module it reads from
the original text; the passes' output on real JAX dumps compiles with jaxlib."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import meshtopo as mt
from hlo._dumps import dumps  # type: ignore[import-not-found]  # tests/hlo, a sibling package
from hlo.verify._xla import xla_errors  # type: ignore[import-not-found]
from meshtopo.hlo import passes

pytestmark = pytest.mark.jax

ROOT = Path(__file__).resolve().parents[2]
_LITERAL = re.compile(r'(?<![fr])(?:"""|\'\'\')(\s*HloModule.*?)(?:"""|\'\'\')', re.S)


def _test_modules() -> list[tuple[str, str]]:
    found = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("examples/*.hlo"))]
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for n, match in enumerate(_LITERAL.finditer(path.read_text())):
            found.append((f"{path.relative_to(ROOT)}#{n}", match.group(1)))
    return found


def _jaxlib(text: str) -> str | None:
    import jaxlib._hlo as jax_hlo  # type: ignore[import-not-found]

    try:
        return str(jax_hlo.hlo_module_from_text(text).to_string())
    except Exception:  # jaxlib refuses it: nothing to compare with
        return None


def test_round_trip_of_every_test_module() -> None:
    compared = 0
    for name, text in _test_modules():
        expected = _jaxlib(text)
        if expected is None:
            continue
        try:
            module = mt.hlo.parse_module(text)
        except mt.MeshtopoError:
            continue
        assert _jaxlib(module.to_text()) == expected, name
        compared += 1
    assert compared >= 14


@pytest.mark.parametrize("name", sorted(dumps()))
def test_round_trip_of_real_dumps(name: str) -> None:
    text = dumps()[name]
    module = mt.hlo.parse_module(text)
    assert _jaxlib(module.to_text()) == _jaxlib(text)


def _compile(texts: list[str]) -> list[str | None]:
    """jaxlib's parse, StableHLO import and compile of each text on 8 replicas (in its own
    interpreter: XLA may abort on bad input); each one's error or None."""
    return xla_errors([{"text": t, "replicas": 8, "partitions": 1} for t in texts], "hlo")


def test_passes_on_real_dumps_compile_where_the_dump_does() -> None:
    """jaxlib does not compile the dumps as written (already SPMD-partitioned: ``num_partitions=8
    but SPMD partitioning not enabled``; with partitioning on, the partitioner refuses their
    cross-partition collectives), so each dump is compiled on 8 replicas instead (the same
    groups: with one partition, flattened ids are replica ids). Where jaxlib compiles the dump,
    it compiles every pass's output; elsewhere each output fails exactly as the dump does,
    except the creator's on the shard_map dump, which jaxlib's StableHLO import refuses (an
    async-wrapped tuple all-to-all: the shape XLA's own pass creates, which jaxlib's parser and
    verifier accept)."""
    texts, labels = [], []
    for name, written in sorted(dumps().items()):
        text = written.replace("num_partitions=8", "replica_count=8", 1)
        module = mt.hlo.parse_module(text)
        split = passes.async_collective_creator(
            module, convert={"all-reduce", "all-gather", "collective-permute", "all-to-all",
                             "reduce-scatter"})
        outputs = {"original": text, "creator": split.to_text(),
                   "to_sync": passes.convert_async_collectives_to_sync(split).to_text(),
                   "combine": passes.combine_collectives(module).to_text(),
                   "linearize": passes.linearize_collectives(module).to_text()}
        for label, out in outputs.items():
            texts.append(out)
            labels.append(f"{name}/{label}")
    errors = dict(zip(labels, _compile(texts), strict=True))
    compiled = sorted(n for n in dumps() if errors[f"{n}/original"] is None)
    assert compiled == ["gram", "sum_replicated"]
    expected = {label: errors[label.split("/")[0] + "/original"] for label in labels}
    expected["shard_map/creator"] = (
        "INVALID_ARGUMENT: expected async done to have exactly one operand")
    assert errors == expected


@pytest.mark.parametrize("name", sorted(dumps()))
def test_creator_then_to_sync_gives_the_dump_back(name: str) -> None:
    """On a scheduled dump every start lands right before its done, so converting everything
    and back gives the same instructions, opcodes and operands in the same order."""
    module = mt.hlo.parse_module(dumps()[name])
    split = passes.async_collective_creator(module, convert=set(passes.CONVERTIBLE))
    back = passes.convert_async_collectives_to_sync(split)

    def shape(m: mt.hlo.Module) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(i.name, i.opcode, i.operands) for i in m.entry.instructions]

    assert shape(back) == shape(module)
    assert len(split.entry.instructions) == len(module.entry.instructions) + sum(
        c.opcode in passes.CONVERTIBLE for c in module.collectives
        if c.name in module.entry.by_name)
    assert _jaxlib(back.to_text()) is not None


@pytest.mark.parametrize("name", sorted(dumps()))
def test_combine_and_linearize_on_real_dumps(name: str) -> None:
    """Both passes' output on a scheduled dump is read by jaxlib (its verifier checks the
    schedule against the new control dependencies), and the linearizer chains the entry's
    collectives."""
    module = mt.hlo.parse_module(dumps()[name])
    combined = passes.combine_collectives(module)
    assert _jaxlib(combined.to_text()) is not None
    linearized = passes.run_linearize_collectives(module)
    assert _jaxlib(linearized.module.to_text()) is not None
    ordered = [d.instruction for d in linearized.decisions if d.action == "ordered"]
    for instruction in ordered:
        assert linearized.module.entry.instruction(instruction).control_predecessors
