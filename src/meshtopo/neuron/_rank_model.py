"""Neuron's NEFF-side 3-D rank model: ``replica_groups[topology][group][rank]``.

XLA gives each collective one 2-D list of replica groups ``[group][rank]``
(``num_replica_groups`` x ``num_devices_per_group``). Neuron's NEFF carries a 3-D envelope:

- outer axis: the distinct CC topologies of the module, i.e. the distinct 2-D group lists of its
  collectives (the NEFF writer scans every collective and de-duplicates their group lists);
- middle axis: the groups of one topology (XLA's ``num_replica_groups``);
- inner axis: the ranks of one group (XLA's ``num_devices_per_group``).

Single-program SPMD fills only ``topology[0]``; ``cc_rank_world_size`` rejects anything else as
MPMD. Rank ids are XLA's replica-group ids, and a physical core's rank is ``core //
cores_per_lnc``.

The seed's 2 x 4 ``data`` x ``model`` mesh, reducing over ``model``:

>>> model = RankModel.from_groups([[0, 1, 2, 3], [4, 5, 6, 7]])
>>> model.to_list(), model.num_topologies, model.group_count(0), model.group_size(0)
([[[0, 1, 2, 3], [4, 5, 6, 7]]], 1, 2, 4)
>>> cc_rank_world_size(model)
4
>>> rank_of_core(5), is_in_replica_group(3, model), num_partitions_for(16)
(2, True, 8)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._checks import as_int, is_int
from .._errors import InvalidArgumentError
from .._limits import check_size
from ..groups._device_list import CollectiveDeviceList
from ..groups._pairs import as_pairs
from ..hlo import Module

if TYPE_CHECKING:
    from ..hlo import Collective

# Opcodes that carry source-target pairs instead of replica groups.
PAIR_OPCODES = frozenset({"collective-permute", "send", "recv"})
DEFAULT_CORES_PER_LNC = 2


class MpmdError(InvalidArgumentError):
    """The 3-D replica groups describe more than one CC topology (an MPMD neff).

    The input is well formed; the single-program rank model cannot give it one world size.
    """


class RankModel:
    """A frozen ``replica_groups[topology][group][rank]`` envelope.

    Each topology is a ``CollectiveDeviceList`` (an XLA 2-D group list). Construct from nested
    lists, or with ``from_groups`` (one 2-D list as ``topology[0]``), ``from_collectives`` or
    ``from_module`` (the distinct group lists, first appearance first). Rank ids must be
    non-negative ints; a topology may be empty (it then holds no groups).
    """

    __slots__ = ("_topologies",)

    def __init__(self, replica_groups: object = ()) -> None:
        if isinstance(replica_groups, RankModel):
            self._topologies: tuple[CollectiveDeviceList, ...] = replica_groups._topologies
            return
        if isinstance(replica_groups, str | bytes) or not isinstance(replica_groups, Iterable):
            raise InvalidArgumentError(
                "replica_groups must be nested lists [topology][group][rank], "
                f"got {replica_groups!r}"
            )
        topologies = []
        total = 0
        for index, topology in enumerate(replica_groups):
            device_list = _topology(topology, index)
            total += int(device_list.flattened_replica_groups().size)
            check_size(total, "the 3-D replica groups")
            topologies.append(device_list)
        self._topologies = tuple(topologies)

    @classmethod
    def from_groups(cls, groups: object) -> RankModel:
        """One XLA 2-D group list as ``topology[0]``: int lists, a ``CollectiveDeviceList``,
        or XLA's replica-group text (``{{0,1},{2,3}}``, ``[2,2]<=[4]``, mesh axes)."""
        if isinstance(groups, str):
            groups = CollectiveDeviceList.parse(groups)
        return cls([_topology(groups, 0)])

    @classmethod
    def from_collectives(cls, collectives: Iterable[Collective]) -> RankModel:
        """The distinct group lists of ``collectives``, in first-appearance order.

        Only instructions that issue an operation count (a ``-done`` repeats its start).
        Permutes and send/recv carry pairs, not groups, and add no topology; a permute that
        carries replica groups is refused ("Permute should not contain replica_groups"). A
        collective that wrote no groups (``{}``) contributes an empty topology.
        """
        seen: dict[CollectiveDeviceList, None] = {}
        read: set[int] = set()  # the parser shares one device list per distinct text
        for collective in collectives:
            if not collective.is_start or collective.is_host_transfer:
                continue
            if collective.underlying_opcode in PAIR_OPCODES:
                check_permute(collective)
                continue
            groups = collective.replica_groups
            if groups is None or id(groups) in read:
                continue
            read.add(id(groups))
            seen.setdefault(CollectiveDeviceList(groups).to_explicit(), None)
        return cls(list(seen))

    @classmethod
    def from_module(cls, module: Module) -> RankModel:
        """``from_collectives`` over every collective of ``module``, in text order."""
        return cls.from_collectives(module.collectives)

    # ---- reading back -----------------------------------------------------------------

    @property
    def topologies(self) -> tuple[CollectiveDeviceList, ...]:
        """The topologies, each an XLA 2-D group list."""
        return self._topologies

    @property
    def num_topologies(self) -> int:
        """The length of the outer axis."""
        return len(self._topologies)

    def group_count(self, topology: int = 0) -> int:
        """The number of groups of ``topology`` (XLA's ``num_replica_groups``)."""
        return self._at(topology).num_replica_groups

    def group_size(self, topology: int = 0) -> int:
        """The largest rank count of a group of ``topology`` (0 when it has no groups).

        For the uniform lists XLA writes this is ``num_devices_per_group``.
        """
        sizes = self._at(topology).group_sizes
        return int(sizes.max()) if sizes.size else 0

    def to_list(self) -> list[list[list[int]]]:
        """The envelope as nested lists ``[topology][group][rank]``."""
        return [topology.replica_groups for topology in self._topologies]

    def _at(self, topology: int) -> CollectiveDeviceList:
        if not is_int(topology):
            raise InvalidArgumentError(f"topology index must be an int, got {topology!r}")
        if not 0 <= topology < len(self._topologies):
            raise InvalidArgumentError(
                f"topology index {topology} is out of range: the replica groups have "
                f"{len(self._topologies)} topologies"
            )
        return self._topologies[topology]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RankModel):
            return NotImplemented
        return self._topologies == other._topologies

    def __hash__(self) -> int:
        return hash(self._topologies)

    def __repr__(self) -> str:
        return f"RankModel({[str(t) for t in self._topologies]})"


ReplicaGroups3D = RankModel | Sequence[Sequence[Sequence[int]]]


def _topology(groups: object, index: int) -> CollectiveDeviceList:
    """One topology as a device list, with the rank-id rule checked."""
    if isinstance(groups, str | bytes):
        raise InvalidArgumentError(
            f"topology {index} must be a list of groups, got the text {groups!r}; "
            "use RankModel.from_groups for replica-group text"
        )
    try:
        device_list = CollectiveDeviceList(groups)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(
            f"topology {index} of the replica groups [topology][group][rank] is not a list of "
            f"int lists: {error}"
        ) from None
    flat = device_list.flattened_replica_groups()
    if flat.size and int(flat.min()) < 0:
        raise InvalidArgumentError(
            f"topology {index} holds the rank {int(flat.min())}; rank ids are non-negative"
        )
    return device_list


def as_rank_model(replica_groups: ReplicaGroups3D) -> RankModel:
    """``replica_groups`` as a ``RankModel`` (a model passes through unchanged)."""
    if isinstance(replica_groups, RankModel):
        return replica_groups
    if isinstance(replica_groups, CollectiveDeviceList):
        raise InvalidArgumentError(
            f"expected 3-D replica groups [topology][group][rank], got the 2-D list "
            f"{replica_groups}; use RankModel.from_groups for one topology"
        )
    model = RankModel(replica_groups)
    return model


def replica_groups_3d(source: Module | Iterable[Collective]) -> list[list[list[int]]]:
    """The module's 3-D envelope ``[topology][group][rank]`` as nested lists.

    The outer axis holds the distinct group lists of the collectives (``RankModel.from_module``),
    so a single-program module with one group geometry gives one topology:

    >>> from meshtopo.hlo import parse_module
    >>> module = parse_module('''HloModule m, num_partitions=8
    ... %add (x: f32[], y: f32[]) -> f32[] {
    ...   %x = f32[] parameter(0)
    ...   %y = f32[] parameter(1)
    ...   ROOT %s = f32[] add(%x, %y)
    ... }
    ... ENTRY %main (p: f32[8]) -> f32[8] {
    ...   %p = f32[8]{0} parameter(0)
    ...   ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add
    ... }
    ... ''')
    >>> replica_groups_3d(module)
    [[[0, 1, 2, 3], [4, 5, 6, 7]]]
    """
    if isinstance(source, Module):
        return RankModel.from_module(source).to_list()
    if isinstance(source, str | bytes) or not isinstance(source, Iterable):
        raise InvalidArgumentError(
            f"replica_groups_3d expects an HLO module or its collectives, got {source!r}"
        )
    return RankModel.from_collectives(source).to_list()


def check_permute(collective: Collective) -> None:
    """Refuse a collective-permute (or send/recv) that carries replica groups."""
    if collective.replica_groups is not None or "replica_groups" in collective.attributes:
        raise InvalidArgumentError(
            f"Permute should not contain replica_groups: {collective.opcode} "
            f"{collective.name} (line {collective.line}) has replica_groups="
            f"{collective.groups_text or collective.attributes.get('replica_groups')}; "
            "a permute routes by source_target_pairs only"
        )


def source_target_pairs(module: Module) -> list[tuple[int, int]]:
    """Every source-target pair of the module's permutes and sends, in text order.

    A send and its recv carry the same pairs, so they are read once, from the send. A permute
    that carries replica groups is refused ("Permute should not contain replica_groups").
    """
    pairs: list[tuple[int, int]] = []
    for collective in module.collectives:
        if collective.underlying_opcode not in PAIR_OPCODES:
            continue
        check_permute(collective)
        if (collective.is_start and not collective.is_host_transfer
                and collective.underlying_opcode != "recv"):
            pairs.extend(collective.source_target_pairs or ())
    return pairs


def pairs_span(source_target_pairs: Iterable[Sequence[int]]) -> int:
    """The span of source-target pairs: the largest id named, plus one (0 for no pairs).

    The ranks a permute touches are ``0 .. span - 1``, so the span is the world size the pairs
    need. Ids must be non-negative.

    >>> pairs_span([(0, 1), (1, 2), (2, 3), (3, 0)])
    4
    """
    pairs = as_pairs(source_target_pairs)
    if not pairs:
        return 0
    ids = np.asarray(pairs, dtype=np.int64)
    if int(ids.min()) < 0:
        raise InvalidArgumentError(
            f"source_target_pairs name the id {int(ids.min())}; rank ids are non-negative"
        )
    return int(ids.max()) + 1


def cc_rank_world_size(
    replica_groups: ReplicaGroups3D,
    source_target_pairs: Iterable[Sequence[int]] | None = None,
    rank_world_size: int | None = None,
) -> int:
    """Neuron's ``getCCRankWorldSize``: ``max(ws_rg, ws_pairs, ws_expl, 1)``.

    - ``ws_rg``: the largest rank count of a group (``group_size``) over the topologies;
    - ``ws_pairs``: ``pairs_span(source_target_pairs)`` (largest id + 1);
    - ``ws_expl``: the explicit ``rank_world_size`` override (a positive int), when given.

    With more than one topology the envelope is MPMD and ``MpmdError`` is raised, checking
    in this order: an empty topology ("Empty topology found at index 1 in replica_groups;
    possible MPMD neff"), then rank counts that differ from topology 0's ("Inconsistent worker
    count across topologies: topology 0 has 4 ranks per group, topology 1 has 2; MPMD is not
    supported"), then several consistent topologies. A single empty topology, like no topology
    at all, means every rank takes part and adds nothing to the world size.

    >>> cc_rank_world_size([[[0, 4], [1, 5], [2, 6], [3, 7]]])
    2
    >>> cc_rank_world_size([], source_target_pairs=[(0, 1), (1, 2)], rank_world_size=2)
    3
    """
    model = as_rank_model(replica_groups)
    ws_rg = _ranks_per_group(model)
    ws_pairs = 0 if source_target_pairs is None else pairs_span(source_target_pairs)
    ws_expl = 0
    if rank_world_size is not None:
        as_int(rank_world_size, "rank_world_size", minimum=1)
        ws_expl = int(rank_world_size)
    return max(ws_rg, ws_pairs, ws_expl, 1)


def _ranks_per_group(model: RankModel) -> int:
    """``ws_rg`` with the MPMD checks of ``cc_rank_world_size``."""
    count = model.num_topologies
    if count == 0:
        return 0
    if count > 1:
        for index in range(count):
            if model.group_count(index) == 0:
                raise MpmdError(
                    f"Empty topology found at index {index} in replica_groups; possible MPMD "
                    f"neff (replica_groups has {count} topologies)"
                )
        first = model.group_size(0)
        for index in range(1, count):
            size = model.group_size(index)
            if size != first:
                raise MpmdError(
                    f"Inconsistent worker count across topologies: topology 0 has {first} ranks "
                    f"per group, topology {index} has {size}; MPMD is not supported"
                )
        raise MpmdError(
            f"replica_groups has {count} topologies (all with {first} ranks per group); more "
            "than one topology is an MPMD neff, which is not supported"
        )
    return model.group_size(0)


def rank_of_core(core: int, cores_per_lnc: int = DEFAULT_CORES_PER_LNC) -> int:
    """The CC rank of a physical core: ``core // cores_per_lnc``.

    ``cores_per_lnc`` is the logical-core size (``--lnc``; 2 on Trn2). With LNC 2, cores 0
    and 1 are rank 0, cores 2 and 3 rank 1:

    >>> [rank_of_core(core) for core in range(6)], rank_of_core(5, cores_per_lnc=1)
    ([0, 0, 1, 1, 2, 2], 5)
    """
    return as_int(core, "core", minimum=0) // as_int(cores_per_lnc, "cores_per_lnc", minimum=1)


def cores_of_rank(rank: int, cores_per_lnc: int = DEFAULT_CORES_PER_LNC) -> list[int]:
    """The physical cores whose rank is ``rank`` (the inverse of ``rank_of_core``).

    >>> cores_of_rank(3)
    [6, 7]
    """
    as_int(rank, "rank", minimum=0)
    size = as_int(cores_per_lnc, "cores_per_lnc", minimum=1)
    return list(range(int(rank) * size, (int(rank) + 1) * size))


def num_partitions_for(num_cores: int, cores_per_lnc: int = DEFAULT_CORES_PER_LNC) -> int:
    """The ``num_partitions`` the ``--lnc`` cardinality seeds: ``num_cores // cores_per_lnc``.

    One partition per logical core, i.e. one per rank of ``rank_of_core``; ``num_cores`` must
    be a positive multiple of ``cores_per_lnc``.

    >>> num_partitions_for(32, 2), num_partitions_for(32, 1)
    (16, 32)
    """
    cores = as_int(num_cores, "num_cores", minimum=1)
    size = as_int(cores_per_lnc, "cores_per_lnc", minimum=1)
    if cores % size:
        raise InvalidArgumentError(
            f"num_cores {cores} is not a multiple of cores_per_lnc {size}: every logical core "
            f"(rank) holds exactly {size} physical cores"
        )
    return cores // size


def is_in_replica_group(rank: int, replica_groups: ReplicaGroups3D) -> bool:
    """Whether ``rank`` takes part: a scan of ``topology[0]``; no groups means everyone.

    >>> rg3 = [[[0, 1], [2, 3]]]
    >>> is_in_replica_group(3, rg3), is_in_replica_group(4, rg3), is_in_replica_group(9, [])
    (True, False, True)
    """
    as_int(rank, "rank", minimum=0)
    model = as_rank_model(replica_groups)
    if model.num_topologies == 0 or model.group_count(0) == 0:
        return True
    return bool((model.topologies[0].flattened_replica_groups() == rank).any())
