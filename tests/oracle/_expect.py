"""meshtopo's side of the oracle comparisons: what meshtopo says for a measured program.

Each function takes a measurement and returns meshtopo's answer in the measurement's form
(groups sorted by first member, in-group order kept where the collective reveals it), so a
test is one equality.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import meshtopo as mt
import meshtopo.hlo

from ._decode import sorted_groups
from ._hlo_text import HloCollective, parse_int_pairs
from ._measure import OPCODE_FOR, Measurement

Groups = tuple[tuple[int, ...], ...]
Pairs = tuple[tuple[int, int], ...]


def as_measured(groups: Sequence[Sequence[int]], ordered: bool) -> Groups:
    """Put groups in the measured form: sorted sets when order is not observable."""
    return sorted_groups(groups if ordered else [sorted(g) for g in groups])


def over(axes: Sequence[str]) -> str | tuple[str, ...]:
    return axes[0] if len(axes) == 1 else tuple(axes)


def mesh_groups(m: Measurement, axes: Sequence[str] | None = None) -> list[list[int]]:
    """``mt.Mesh(shape, devices=...).replica_groups(over=axes)`` as device-id lists."""
    mesh = mt.Mesh(dict(m.mesh_shape), devices=m.mesh_devices)
    return mesh.replica_groups(over=over(m.axes if axes is None else axes)).replica_groups


def mesh_pairs(m: Measurement) -> Pairs:
    """ppermute's (source, target) device pairs: the permutation applied inside each of
    meshtopo's mesh groups.

    JAX's ppermute indexes a group in mesh order whatever order the axes are named in (its
    lowering sorts each group's logical ids), so the group here is taken over the same axes
    listed major to minor as in the mesh."""
    assert m.permutation is not None
    names = [name for name, _ in m.mesh_shape]
    in_mesh_order = sorted(m.axes, key=names.index)
    groups = mesh_groups(m, in_mesh_order)
    return tuple(sorted((g[s], g[t]) for g in groups for s, t in m.permutation))


def assignment(table: Sequence[Sequence[int]]) -> mt.DeviceAssignment:
    return mt.DeviceAssignment([list(row) for row in table])


def mode_of(c: HloCollective) -> mt.CollectiveOpGroupMode:
    return mt.group_mode_for_opcode(
        c.opcode,
        has_channel_id=c.channel_id is not None,
        use_global_device_ids=c.use_global_device_ids,
    )


def written_groups(c: HloCollective, table: Sequence[Sequence[int]]) -> list[list[int]]:
    """The groups XLA wrote for ``c``, parsed by meshtopo and resolved to devices through
    ``table`` under the instruction's group mode."""
    assert c.replica_groups is not None, f"no replica_groups in: {c.line}"
    device_list = mt.CollectiveDeviceList.parse(c.replica_groups)
    return mt.participating_device_groups(device_list, mode=mode_of(c), device_assignment=assignment(table))


def written_pairs(c: HloCollective, table: Sequence[Sequence[int]]) -> Pairs:
    """The source_target_pairs XLA wrote for ``c``, mapped to devices by meshtopo."""
    assert c.source_target_pairs is not None, f"no source_target_pairs in: {c.line}"
    pairs = mt.participating_device_pairs(
        parse_int_pairs(c.source_target_pairs), mode=mode_of(c), device_assignment=assignment(table)
    )
    return tuple(sorted(pairs))


def the_collective(m: Measurement) -> HloCollective:
    return m.collective_named(OPCODE_FOR[m.collective])


def check_module(m: Any, opcode: str, measured: Any, ordered: bool) -> None:
    """meshtopo's HLO reader on a measurement's compiled ``m.hlo_text``: the header's counts
    (``m.replica_count``, ``m.num_partitions``), the collectives in the text
    (``m.collectives``: names and opcodes), and the one of ``opcode`` resolved through
    ``m.device_assignment`` (``device_groups``, or ``device_pairs`` for a permute) to the
    ``measured`` groups or pairs."""
    module = meshtopo.hlo.parse_module(m.hlo_text)
    assert (module.replica_count, module.num_partitions) == (m.replica_count, m.num_partitions)
    assert [(c.name, c.opcode) for c in module.collectives] == [
        (c.name, c.opcode) for c in m.collectives
    ]
    (c,) = [c for c in module.collectives if c.opcode == opcode]
    da = assignment(m.device_assignment)
    if opcode == "collective-permute":
        assert tuple(sorted(c.device_pairs(da))) == measured
    else:
        assert as_measured(c.device_groups(da), ordered) == measured
