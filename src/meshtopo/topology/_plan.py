"""Layouts compared: every mesh axis and collective of a mesh on a cluster, and one dump
collective's tier and time columns.

>>> from meshtopo import Mesh
>>> from meshtopo.topology import preset
>>> rows = plan(preset("h100-8x", hosts=4), Mesh({"dp": 4, "tp": 8}), 2**30, ["all-reduce"])
>>> [(r.axis, str(r.tier), r.hosts) for r in rows]
[('dp', 'network', 4), ('tp', 'host', 1)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import InvalidArgumentError
from ..groups._device_list import Mesh
from ._cluster import Cluster, Tier
from ._cost import MODELS, Estimate, estimate, estimates, known_opcodes
from ._tiers import GroupTiers, group_tiers

if TYPE_CHECKING:
    from ..hlo._collective import Collective

PLAN_OPCODES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
"""The collectives ``plan`` prices by default."""


@dataclass(frozen=True)
class PlanRow:
    """One mesh axis and collective: groups x size, the slowest tier any group crosses, the
    most hosts and domains one group spans, torus figures (None off a torus), the bytes per
    device on the slowest link, each model's seconds (NaN where a model does not apply) and
    the ``algorithm/protocol`` NCCL's tuner picks for the slowest group (None off NCCL)."""

    axis: str
    opcode: str
    groups: int
    group_size: int
    tier: Tier
    hosts: int
    domains: int
    axes: int | None
    ring_hops: int | None
    ring_hops_no_wrap: int | None
    link_bytes: float
    times: dict[str, float]
    nccl_algorithm: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The row as JSON values (schema in docs/cli-json.md)."""
        return {
            "axis": self.axis,
            "opcode": self.opcode,
            "groups": self.groups,
            "group_size": self.group_size,
            "tier": str(self.tier),
            "hosts": self.hosts,
            "domains": self.domains,
            "torus_axes": self.axes,
            "ring_hops": self.ring_hops,
            "ring_hops_no_wrap": self.ring_hops_no_wrap,
            "link_bytes": self.link_bytes,
            "seconds": {k: None if math.isnan(v) else v for k, v in self.times.items()},
            "nccl_algorithm": self.nccl_algorithm,
        }


def _largest(values: object) -> int | None:
    if values is None:
        return None
    return int(values.max())  # type: ignore[attr-defined]


def row_of(axis: str, result: Estimate) -> PlanRow:
    """The ``PlanRow`` of one estimate (its slowest group's figures)."""
    tiers = result.tiers.distinct[0]  # the maxima over every group, read off one row per kind
    return PlanRow(
        axis=axis,
        opcode=result.opcode,
        groups=result.tiers.num_groups,
        group_size=int(tiers.sizes.max()) if tiers.num_groups else 0,
        tier=tiers.slowest,
        hosts=int(tiers.hosts.max()) if tiers.num_groups else 0,
        domains=int(tiers.domains.max()) if tiers.num_groups else 0,
        axes=_largest(tiers.axes),
        ring_hops=_largest(tiers.ring_hops),
        ring_hops_no_wrap=_largest(tiers.ring_hops_no_wrap),
        link_bytes=float(result.link_bytes.max()) if tiers.num_groups else 0.0,
        times=result.times(),
        nccl_algorithm=result.nccl_algorithm,
    )


def plan(
    cluster: Cluster,
    mesh: Mesh,
    size: float,
    opcodes: Sequence[str] = PLAN_OPCODES,
    axes: Sequence[str] | None = None,
    channels: int | None = None,
    sm: int | None = None,
) -> list[PlanRow]:
    """One row per mesh axis (all axes, or ``axes``; a comma inside a name groups several
    axes, ``"dp,tp"``) and opcode: a collective of ``size`` bytes over that axis."""
    if mesh.size > cluster.num_devices:
        raise InvalidArgumentError(
            f"the mesh has {mesh.size} devices but the cluster {cluster.name!r} has {cluster.num_devices}"
        )
    names = list(axes if axes is not None else mesh.axis_names)
    tiers = [group_tiers(cluster, mesh.group_array([a for a in axis.split(",") if a]))
             for axis in names]  # fmt: skip
    by_opcode = [estimates(cluster, tiers, opcode, size, channels=channels, sm=sm)
                 for opcode in opcodes]  # fmt: skip
    return [row_of(axis, by_opcode[o][a]) for a, axis in enumerate(names)
            for o in range(len(opcodes))]  # fmt: skip


@dataclass(frozen=True)
class PlanDiff:
    """The same axis and collective in two layouts: both rows and, per model, ``b / a``."""

    a: PlanRow
    b: PlanRow

    @property
    def ratios(self) -> dict[str, float]:
        """``{model: b seconds / a seconds}`` (NaN where either is NaN or a is 0)."""
        return {
            model: self.b.times[model] / self.a.times[model]
            if self.a.times[model] > 0 else math.nan
            for model in MODELS
        }  # fmt: skip


def compare(a: Sequence[PlanRow], b: Sequence[PlanRow]) -> list[PlanDiff]:
    """Pair the rows of two plans by (axis, opcode), in ``a``'s order."""
    index = {(row.axis, row.opcode): row for row in b}
    missing = [f"{row.axis}/{row.opcode}" for row in a if (row.axis, row.opcode) not in index]
    if missing:
        raise InvalidArgumentError(f"the second layout has no {', '.join(missing)}")
    return [PlanDiff(row, index[(row.axis, row.opcode)]) for row in a]


def group_costs(
    cluster: Cluster,
    groups: object,
    opcode: str,
    size: float | None,
    channels: int | None = None,
    sm: int | None = None,
) -> dict[str, object]:
    """The ``inspect --cluster`` columns of one collective from its device groups (anything
    ``group_tiers`` takes, or a ``GroupTiers``): ``tier``, ``hosts``, ``domains``,
    ``ring_hops`` (None off a torus), ``link_bytes``, ``seconds`` per model and
    ``nccl_algorithm``. Without a known ``size``, or for an opcode no model knows, bytes,
    seconds and the algorithm are None."""
    tiers = groups if isinstance(groups, GroupTiers) else group_tiers(cluster, groups)
    columns: dict[str, object] = {
        "tier": str(tiers.slowest),
        "hosts": int(tiers.hosts.max()) if tiers.num_groups else 0,
        "domains": int(tiers.domains.max()) if tiers.num_groups else 0,
        "ring_hops": _largest(tiers.ring_hops),
        "link_bytes": None,
        "seconds": None,
        "nccl_algorithm": None,
    }
    base = opcode.removesuffix("-start").removesuffix("-done")
    if size is not None and base in known_opcodes() and tiers.num_groups:
        row = row_of("", estimate(cluster, tiers, base, float(size), channels=channels, sm=sm))
        columns["link_bytes"] = row.link_bytes
        columns["seconds"] = row.to_dict()["seconds"]
        columns["nccl_algorithm"] = row.nccl_algorithm
    return columns


def collective_costs(
    collective: Collective,
    cluster: Cluster,
    device_assignment: object = None,
    size: float | None = None,
    channels: int | None = None,
    sm: int | None = None,
) -> dict[str, object]:
    """``group_costs`` of one dump collective: its device groups under ``device_assignment``
    (the module's by default), its payload bytes unless ``size`` is given, and the
    synchronous op it performs (``underlying_opcode``)."""
    groups = collective.device_groups(device_assignment)  # type: ignore[arg-type]
    payload = size if size is not None else collective.bytes
    opcode = collective.underlying_opcode or collective.opcode
    return group_costs(cluster, groups, opcode, payload, channels, sm)
