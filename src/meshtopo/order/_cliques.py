"""Who each entry talks to: the device groups (or device pairs) of every entry of a program,
as numpy arrays computed once per entry and shared by every device that runs the program.

``EntryPeers`` holds, for a grouped collective, all its device groups concatenated with their
sizes (XLA's ``GetParticipatingDevicesGroups`` order: rank = position), and for permutes and
send/recv the ``(source, target)`` device pairs. A device's clique is the group that holds it
(for pairs: its pair as a sender and its pair as a receiver, two cliques on the p2p stream).
Entries that name the same groups or pairs (the reader decodes each distinct text once) share
one ``EntryPeers``, so the lists are checked and converted once per distinct list
(``program_peers``), and every table derived from them (the group rows, the hashable key;
a device's clique and rank in ``_schedule``) is built once too.

Bound: O(devices) numpy work per distinct list; ``check_size`` refuses lists past the device
limit.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidArgumentError
from .._limits import check_size
from ..groups._pairs import participating_device_pairs
from ..groups._placement import DeviceAssignment, device_group_arrays
from ..hlo import Collective
from ._entry import Entry


@dataclass(frozen=True)
class EntryPeers:
    """The devices an entry connects: ``flat``/``sizes`` (groups) or ``pairs`` (n x 2)."""

    flat: np.ndarray
    sizes: np.ndarray
    pairs: np.ndarray | None

    @functools.cached_property
    def starts(self) -> np.ndarray:
        """Offset of each group in ``flat``."""
        return np.cumsum(self.sizes) - self.sizes

    def group_rows(self, devices: np.ndarray) -> np.ndarray:
        """For each device, the index of the group holding it (-1: none). O(devices + ids)."""
        if self.pairs is not None:
            raise InvalidArgumentError("an entry with pairs has no groups")
        size = int(max(self.flat.max(initial=-1), devices.max(initial=-1))) + 1
        row_of = np.full(size, -1, dtype=np.int64)
        row_of[self.flat] = np.repeat(np.arange(self.sizes.size), self.sizes)
        return row_of[devices]

    def group(self, row: int) -> tuple[int, ...]:
        """The devices of group ``row``, in rank order."""
        return self.groups[row]

    @functools.cached_property
    def groups(self) -> list[tuple[int, ...]]:
        """Every group (or pair) as a tuple of devices in rank order. O(ids), once."""
        if self.pairs is not None:
            return [tuple(pair) for pair in self.pairs.tolist()]
        if self.sizes.size and (self.sizes == self.sizes[0]).all():
            return [tuple(g) for g in self.flat.reshape(self.sizes.size, -1).tolist()]
        return [tuple(g.tolist()) for g in np.split(self.flat, self.starts[1:])]

    def groups_key(self) -> tuple[object, ...]:
        """A hashable form of every group (each in rank order) or pair, to compare what two
        programs name: the order the list gives them in carries no meaning (a device uses
        only its own group), so they are sorted, and any encoding of the same groups has one
        key."""
        return self._key

    @functools.cached_property
    def _key(self) -> tuple[object, ...]:
        return ("pairs" if self.pairs is not None else "groups", tuple(sorted(self.groups)))

    @functools.cached_property
    def disjoint(self) -> bool:
        """True when no device is in two groups (pairs: always False, as a device may send
        and receive). O(ids)."""
        if self.pairs is not None:
            return False
        inside = self.flat[self.flat >= 0]
        return bool(np.bincount(inside).max(initial=0) <= 1) if inside.size else True

    def describe(self, limit: int = 8) -> str:
        """The groups or pairs as text, ``{{0,1},{2,3}}``, cut after ``limit`` of them."""
        if self.pairs is not None:
            items = [f"{{{s},{t}}}" for s, t in self.pairs[:limit].tolist()]
            more = len(self.pairs) - limit
        else:
            items = ["{" + ",".join(map(str, self.group(r))) + "}"
                     for r in range(min(limit, self.sizes.size))]
            more = self.sizes.size - limit
        return "{" + ",".join(items) + (f",... {more} more" if more > 0 else "") + "}"


def entry_peers(entry: Entry, collective: Collective, assignment: DeviceAssignment,
                source: str | None = None) -> EntryPeers:
    """The device groups (or pairs) of ``collective`` under ``assignment``; when they cannot
    be resolved, the ``InvalidArgumentError`` says where (its ``location``: ``source``, the
    instruction and its position)."""
    try:
        return _peers(entry, collective, assignment)
    except InvalidArgumentError as error:
        if error.location is None:
            error.location = (source, entry.name, entry.line, entry.column)
        raise


def program_peers(entries: Sequence[Entry], collectives: Sequence[Collective],
                  assignment: DeviceAssignment, source: str | None = None) -> list[EntryPeers]:
    """``entry_peers`` of every entry, computed once per distinct list: entries whose
    collectives hold the same decoded groups or pairs object (the reader shares one per
    distinct text) under the same mode share one ``EntryPeers``."""
    found: dict[tuple[bool, int, object], tuple[object, EntryPeers]] = {}
    out = []
    for entry, collective in zip(entries, collectives, strict=True):
        pairwise = entry.stream != "collective"
        written = collective.source_target_pairs if pairwise else collective.replica_groups
        key = (pairwise, id(written), collective.mode)
        known = found.get(key)
        if known is None:  # the list is kept with its peers, so its id stays its own
            known = found[key] = (written, entry_peers(entry, collective, assignment, source))
        out.append(known[1])
    return out


def _peers(entry: Entry, collective: Collective, assignment: DeviceAssignment) -> EntryPeers:
    if entry.stream != "collective":
        pairs = participating_device_pairs(
            collective.source_target_pairs or [], mode=collective.mode, device_assignment=assignment)
        check_size(2 * len(pairs), f"the device pairs of {entry.name}")
        array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        return EntryPeers(array.reshape(-1), np.full(len(array), 2, dtype=np.int64), array)
    groups = collective.replica_groups
    flat, sizes = device_group_arrays(groups, mode=collective.mode, device_assignment=assignment)
    return EntryPeers(np.asarray(flat, dtype=np.int64), np.asarray(sizes, dtype=np.int64), None)


RENDEZVOUS = ("clique", "op_id")


def group_extremes(groups: np.ndarray, values: np.ndarray,
                   count: int) -> tuple[np.ndarray, np.ndarray]:
    """The least and greatest of ``values`` within each of ``count`` groups (``groups[i]``
    holds ``values[i]``): the members of group g agree when ``low[g] == high[g]``; a group
    with no member has the int64 maximum and minimum. O(members)."""
    low = np.full(count, np.iinfo(np.int64).max)
    high = np.full(count, np.iinfo(np.int64).min)
    np.minimum.at(low, groups, values)
    np.maximum.at(high, groups, values)
    return low, high


class CliqueTable:
    """Interned cliques: ``(stream key, devices...)`` -> id; ``members[id]`` the devices.

    ``rendezvous`` says what meets: ``clique`` (the n-th collective of each member on one
    clique and stream, whatever the instruction: NCCL's order on a communicator, as XLA:GPU
    runs them) or ``op_id`` (XLA:CPU's ``RendezvousKey`` also holds the op id, the channel
    id: collectives of different channels never meet)."""

    def __init__(self, rendezvous: str = "clique") -> None:
        if rendezvous not in RENDEZVOUS:
            raise InvalidArgumentError(
                f"rendezvous must be one of {', '.join(RENDEZVOUS)}, got {rendezvous!r}")
        self.rendezvous = rendezvous
        self.ids: dict[tuple[object, ...], int] = {}
        self.members: list[tuple[int, ...]] = []
        self.streams: list[str] = []

    def intern(self, stream: str, members: tuple[int, ...]) -> int:
        """The id of the clique ``members`` on ``stream`` (new ids count up from 0)."""
        key = (stream, *members)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.members)
            self.members.append(members)
            self.streams.append(stream)
        return found

    def stream_key(self, entry: Entry) -> str:
        """What, besides the devices, decides which arrivals meet: the stream; a send/recv's
        channel; under ``op_id``, every collective's channel."""
        if entry.channel_id is not None and (entry.stream == "send-recv"
                                             or self.rendezvous == "op_id"):
            return f"{entry.stream}:{entry.channel_id}"
        return entry.stream

    def slots(self, entry: Entry, peers: EntryPeers, devices: np.ndarray) -> np.ndarray:
        """For each device, its two clique ids for ``entry`` ([n, 2], -1 for none): a grouped
        collective's group in slot 0; a permute's or send/recv's pair as sender in slot 0 and
        as receiver in slot 1 (a send has only the first, a recv only the second). Interning
        is one dict lookup per group or pair; the device mapping is numpy."""
        out = np.full((devices.size, 2), -1, dtype=np.int64)
        if peers.pairs is None:
            rows = peers.group_rows(devices)
            stream = self.stream_key(entry)
            ids = np.array([self.intern(stream, group) for group in peers.groups] + [-1],
                           dtype=np.int64)
            out[:, 0] = ids[rows]
            return out
        stream = self.stream_key(entry)
        pairs = peers.pairs
        ids = np.array([self.intern(stream, pair) for pair in peers.groups], dtype=np.int64)
        size = int(max(pairs.max(initial=-1), devices.max(initial=-1))) + 1
        row = np.full(size, -1, dtype=np.int64)
        row[devices] = np.arange(devices.size)
        for column, side, skip in ((0, pairs[:, 0], "recv"), (1, pairs[:, 1], "send")):
            if entry.opcode != skip:
                hit = row[side] >= 0
                out[row[side][hit], column] = ids[hit]
        return out
