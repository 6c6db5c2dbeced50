"""``CliqueKey``: the ordered devices of one collective clique, as XLA's ``GpuCliqueKey``.

The device list is never sorted: a device's rank is its position in the list
(``GetParticipatingDevices`` order). Equality and hashing follow XLA: equality compares the
devices, the participant groups, ``num_local_participants``, the root device and the
incarnations (not the stream kind); the hash leaves out the stream kind and
``num_local_participants``; ordering compares (number of devices, devices, root,
``num_local_participants``, incarnations).

>>> key = CliqueKey((3, 1, 2), num_local_participants=2)
>>> key.rank(1), key.rank(7), key.is_local
(1, None, False)
>>> str(key)
'devices=[3,1,2]; is_p2p=0; root_device=-1; num_local_participants=2; incarnations=[]'
>>> clique_split_color((0, 1, 2, 3)) == clique_split_color([0, 1, 2, 3])
True
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._errors import InvalidArgumentError


class StreamKind(enum.Enum):
    """XLA's ``AsyncStreamKind``: collectives run on one stream, point-to-point on others."""

    COLLECTIVE = "collective"
    P2P0 = "p2p0"
    P2P1 = "p2p1"
    MEMCPY_P2P = "memcpy_p2p"


def _normalised_groups(groups: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    rows = [tuple(sorted(int(d) for d in g)) for g in groups]
    return tuple(sorted(rows, key=lambda g: (g[0] if g else -1, g)))


@dataclass(frozen=True, eq=False)
class CliqueKey:
    """The devices of a clique in rank order, and XLA's other key fields.

    ``num_local_participants`` defaults to the number of devices (every participant local);
    ``participant_groups`` are normalised as XLA does (each group sorted, groups sorted by
    their first device); ``incarnations`` are kept sorted and unique.
    """

    devices: tuple[int, ...]
    stream_kind: StreamKind = StreamKind.COLLECTIVE
    participant_groups: tuple[tuple[int, ...], ...] = ()
    root_device: int = -1
    num_local_participants: int = -1
    incarnations: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        devices = tuple(int(d) for d in self.devices)
        if not devices:
            raise InvalidArgumentError("a CliqueKey needs at least one device, got none")
        if len(set(devices)) != len(devices):
            raise InvalidArgumentError(f"CliqueKey devices {list(devices)} repeat a device")
        object.__setattr__(self, "devices", devices)
        object.__setattr__(self, "participant_groups",
                           _normalised_groups(self.participant_groups))
        object.__setattr__(self, "incarnations",
                           tuple(sorted({int(i) for i in self.incarnations})))
        local = self.num_local_participants
        if local == -1:
            object.__setattr__(self, "num_local_participants", len(devices))
        elif not 0 <= local <= len(devices):
            raise InvalidArgumentError(
                f"num_local_participants={local} must be in 0..{len(devices)} for a clique of "
                f"{len(devices)} devices"
            )

    @property
    def num_devices(self) -> int:
        """The number of devices (ranks) in the clique."""
        return len(self.devices)

    @property
    def is_p2p(self) -> bool:
        """True for every stream kind other than ``COLLECTIVE``."""
        return self.stream_kind is not StreamKind.COLLECTIVE

    @property
    def is_local(self) -> bool:
        """True when every participant is in this process."""
        return self.num_local_participants == len(self.devices)

    def rank(self, device: int) -> int | None:
        """The device's position in the device list, or None when it is not a participant."""
        try:
            return self.devices.index(int(device))
        except ValueError:
            return None

    def is_subset_of(self, other: CliqueKey) -> bool:
        """Same ``is_p2p`` and every device of this key is a device of ``other``."""
        return self.is_p2p == other.is_p2p and set(self.devices) <= set(other.devices)

    def sub_keys(self, nroots: int) -> list[CliqueKey]:
        """XLA's ``GetSubKeys``: ``nroots`` keys, each with one root device spread evenly."""
        n = len(self.devices)
        if not 0 < nroots <= n:
            raise InvalidArgumentError(f"nroots={nroots} must be in 1..{n}")
        q, rem = divmod(n, nroots)
        roots = [
            self.devices[i * (q + 1)] if i < rem else self.devices[rem * (q + 1) + (i - rem) * q]
            for i in range(nroots)
        ]
        return [
            CliqueKey(self.devices, self.stream_kind, self.participant_groups, root,
                      self.num_local_participants, self.incarnations)
            for root in roots
        ]

    def _equality(self) -> tuple[object, ...]:
        return (self.devices, self.participant_groups, self.num_local_participants,
                self.root_device, self.incarnations)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CliqueKey):
            return NotImplemented
        return self._equality() == other._equality()

    def __hash__(self) -> int:
        return hash((self.devices, self.participant_groups, self.root_device, self.incarnations))

    def _order(self) -> tuple[object, ...]:
        return (len(self.devices), self.devices, self.root_device, self.num_local_participants,
                self.incarnations)

    def __lt__(self, other: CliqueKey) -> bool:
        return self._order() < other._order()

    def __str__(self) -> str:
        def ids(values: Sequence[int]) -> str:
            return "[" + ",".join(str(v) for v in values) + "]"

        groups = ""
        if self.participant_groups:
            groups = "; groups=[" + ",".join(ids(g) for g in self.participant_groups) + "]"
        return (
            f"devices={ids(self.devices)}; is_p2p={int(self.is_p2p)}{groups}; "
            f"root_device={self.root_device}; num_local_participants="
            f"{self.num_local_participants}; incarnations={ids(self.incarnations)}"
        )


_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def hash32(data: bytes, seed: int = 0) -> int:
    """TSL's ``Hash32``: 32-bit MurmurHash2 of ``data`` (little-endian words), unsigned."""
    n = len(data)
    h = (seed ^ n) & _MASK
    words = np.frombuffer(data[: n - n % 4], dtype="<u4")
    for k in words.tolist():
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[n - n % 4:]
    if tail:
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def clique_split_color(devices: Iterable[int]) -> int:
    """XLA's split colour of a new clique: ``abs((int32) Hash32(int64 device ids, seed 0))``.

    ``abs`` of the one value without a positive int32 (``-2**31``) is ``2**31`` here."""
    h = hash32(np.asarray(list(devices), dtype="<i8").tobytes())
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(signed)
