"""The checks shown next to a dialed collective, in XLA's words.

Two sources: the library's own errors while reading the mode and multiplying the groups out,
and the HLO verifier (``meshtopo.hlo.verify``) run over a one-instruction module built from the
dial (``module_text``), so the messages are XLA's. ``findings`` and ``pair_findings`` are the
seams the groups endpoint calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import meshtopo as mt
from meshtopo import hlo

from ._schema import Fields, RequestError, int_list

_MAX_RANK = 8
_MAX_EXTENT = 1 << 40


@dataclass(frozen=True)
class Shapes:
    """The array shapes of a dump's collective (f32, default layout) and its ``dimensions``
    entry, so that the dial's module checks the instruction as written instead of shapes
    fitted to the groups."""

    operand: tuple[int, ...]
    result: tuple[int, ...]
    dimension: int


def read_shapes(fields: Fields | None) -> Shapes | None:
    """The request's ``shapes`` object ``{"operand": [dims], "result": [dims], "dimension"}``,
    or None when absent; a 400 for anything else."""
    if fields is None:
        return None
    fields.check_known(("operand", "result", "dimension"))
    dims: list[tuple[int, ...]] = []
    for key in ("operand", "result"):
        values = int_list(fields.raw(key), f"shapes.{key}", _MAX_RANK)
        if any(not 0 <= v < _MAX_EXTENT for v in values):
            raise RequestError(
                400, f"field 'shapes.{key}' dimensions must be in 0..{_MAX_EXTENT - 1}"
            )
        dims.append(tuple(values))
    dimension = fields.integer("dimension", default=0, minimum=0)
    if dimension >= max(1, len(dims[0]), len(dims[1])):
        raise RequestError(
            400, f"field 'shapes.dimension' is {dimension}, past the rank of the shapes"
        )
    return Shapes(dims[0], dims[1], dimension)


def findings(
    module: str, mode_error: str | None, expansion_error: str | None
) -> list[dict[str, Any]]:
    """Every finding for the dial written as the one-collective ``module`` (``module_text``),
    each ``{"source", "message"}``; ``[]`` when all is well.

    ``source`` is ``"mode"`` (the two fields do not form a mode; nothing else is checked then),
    ``"verifier"`` (XLA's collective checks on the dial written as one HLO instruction, when
    the library has a verifier) or ``"expansion"`` (the library could not multiply the groups
    out on this grid).
    """
    if mode_error:
        return [{"source": "mode", "message": mode_error}]
    out: list[dict[str, Any]] = []
    try:
        results: list[Any] = hlo.verify(hlo.parse_module(module), check_replica_groups=True)
    except mt.MeshtopoError as error:
        results = [error]
    for finding in results:
        out.append({"source": "verifier", "message": str(getattr(finding, "message", finding))})
    if expansion_error:
        out.append({"source": "expansion", "message": expansion_error})
    return out


def pair_findings(
    pairs: list[tuple[int, int]],
    replicas: int,
    partitions: int,
    has_channel: bool,
    mode_error: str | None,
    expansion_error: str | None,
) -> list[dict[str, Any]]:
    """Findings for a collective-permute dial: XLA's source-target checks
    (``mt.pair_problems``, range R without a channel and P with one) plus the library's errors.
    """
    out: list[dict[str, Any]] = []
    if mode_error:
        out.append({"source": "mode", "message": mode_error})
    limit = partitions if has_channel else replicas
    for problem in mt.pair_problems(pairs, limit):
        out.append({"source": "verifier", "message": problem})
    if expansion_error:
        out.append({"source": "expansion", "message": expansion_error})
    return out


def module_text(
    replicas: int,
    partitions: int,
    opcode: str,
    has_channel: bool,
    global_ids: bool | None,
    written: mt.CollectiveDeviceList,
    shapes: Shapes | None = None,
) -> str:
    """A one-collective HLO module for the dial, shaped so that only the groups can fail.

    Without ``shapes``, shapes follow the subgroup size the verifier derives
    (``mt.subgroup_size``), so that all-gather's shard count and reduce-scatter's and
    all-to-all's split counts agree with the groups whatever they are; with them (a dump's
    instruction), the shapes are the dump's and the shape checks speak too. Start forms are checked as their synchronous op, and
    ragged-all-to-all as all-to-all (the same group checks, without its six operands); for
    collective-permute the written groups are read as the source-target pairs.
    """
    sync = {
        "all-reduce-start": "all-reduce",
        "all-gather-start": "all-gather",
        "collective-permute-start": "collective-permute",
        "ragged-all-to-all": "all-to-all",
    }.get(opcode, opcode)
    attrs = ["channel_id=1"] if has_channel else []
    if sync == "collective-permute":
        attrs.append(f"source_target_pairs={written.to_text(full=True)}")
    else:
        attrs.append(f"replica_groups={written}")
    if sync in {"all-gather", "reduce-scatter", "all-to-all"}:
        attrs.append(f"dimensions={{{0 if shapes is None else shapes.dimension}}}")
    if global_ids and sync in {"all-reduce", "all-gather", "reduce-scatter"}:
        attrs.append("use_global_device_ids=true")
    body = ", ".join(attrs)
    try:
        mode = mt.group_mode_for_opcode(sync, has_channel, global_ids)
        size = max(1, mt.subgroup_size(written, mode, replicas, partitions))
    except mt.MeshtopoError:
        size = 1
    header = f"HloModule explore, replica_count={replicas}, num_partitions={partitions}\n\n"
    add = (
        "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
        "  %y = f32[] parameter(1)\n  ROOT %sum = f32[] add(f32[] %x, f32[] %y)\n}\n\n"
    )
    n, m = (4,), (4 * size,)
    fitted = {
        "all-reduce": (n, n),
        "reduce-scatter": (m, n),
        "all-gather": (n, m),
        "all-to-all": (m, m),
    }.get(sync, (n, n))
    operand, result = fitted if shapes is None else (shapes.operand, shapes.result)
    reduce = sync in {"all-reduce", "reduce-scatter"}
    call = f"{sync}(@), {body}" + (", to_apply=%add" if reduce else "")
    return header + (add if reduce else "") + _entry(operand, result, call)


def _shape_text(dims: tuple[int, ...]) -> str:
    """``f32[d0,...]{k-1,...,0}``: an f32 array of ``dims`` in the default layout."""
    if not dims:
        return "f32[]"
    layout = ",".join(str(i) for i in range(len(dims) - 1, -1, -1))
    return f"f32[{','.join(map(str, dims))}]{{{layout}}}"


def _entry(operand: tuple[int, ...], result: tuple[int, ...], instruction: str) -> str:
    """The entry computation: parameter ``%p`` of f32[operand] fed to the collective (whose
    operand list is written ``@`` in ``instruction``)."""
    given, made = _shape_text(operand), _shape_text(result)
    call = instruction.replace("(@)", f"({given} %p)", 1)
    bare = given.split("{")[0]
    return (
        f"ENTRY %main (p: {bare}) -> {made.split('{')[0]} {{\n"
        f"  %p = {given} parameter(0)\n"
        f"  ROOT %collective = {made} {call}\n}}\n"
    )


def instruction_text(module: str) -> str:
    """The collective's line of ``module_text``'s module, as XLA would print it."""
    line = next(x for x in module.splitlines() if "%collective =" in x)
    return line.strip().removeprefix("ROOT ")
