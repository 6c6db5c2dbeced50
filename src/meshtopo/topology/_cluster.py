"""A physical cluster: hosts, their intra-host fabric, NVLink domains or TPU slices, NICs or DCN.

A ``Cluster`` places every device id on a host, a domain (a multi-host NVLink domain such as
GB200 NVL72, or a TPU slice, whose chips share one ICI torus; for an 8-GPU server the domain is
the host) and, for TPU slices, torus coordinates inside its slice. Four tiers follow, fastest
first: ``device`` (a group of one), ``host`` (the intra-host fabric: NVLink/NVSwitch, PCIe, or
ICI), ``domain`` (NVLink across hosts, or ICI across the hosts of a slice) and ``network``
(the hosts' NICs, or DCN between slices).

Units: bytes, bytes per second (one direction), seconds.

>>> c = Cluster("two", num_hosts=2, devices_per_host=4,
...             host_link=Link("nvlink", 4.5e11, 3.4e-6), network=Link("ib", 5e10, 1.4e-5),
...             nics_per_host=4)
>>> c.num_devices, c.device_hosts.tolist()
(8, [0, 0, 0, 0, 1, 1, 1, 1])
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum

import numpy as np

from .._checks import is_int
from .._errors import InvalidArgumentError
from .._limits import checked_product
from ._units import parse_bandwidth, parse_seconds

LINK_KINDS = ("nvlink", "pcie", "ici", "ib", "roce", "efa", "ethernet", "dcn")
"""The link kinds a ``Link`` may name (the first three are fabrics inside a host or domain)."""


class Tier(IntEnum):
    """The slowest part of the cluster a device group spans, fastest first."""

    DEVICE = 0
    HOST = 1
    DOMAIN = 2
    NETWORK = 3

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Link:
    """One kind of link: its ``kind`` (see ``LINK_KINDS``), ``bandwidth`` in bytes per second in
    one direction, ``latency`` in seconds per algorithm step, and how many physical ``links``
    make up the bandwidth (a GPU's NVLinks; 0 when not known).

    For the host link the bandwidth is per device (all of a GPU's NVLinks together, or one
    ICI link of a TPU chip); for the network it is per NIC (per host for DCN). NCCL counts
    an NVLink bundle as ``links`` x its own per-link figure (``_nccl_graph``).
    """

    kind: str
    bandwidth: float
    latency: float = 0.0
    links: int = 0

    def __post_init__(self) -> None:
        if self.kind not in LINK_KINDS:
            raise InvalidArgumentError(
                f"link kind must be one of {', '.join(LINK_KINDS)}, got {self.kind!r}"
            )
        for name in ("bandwidth", "latency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidArgumentError(f"link {name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0 or (name == "bandwidth" and value == 0):
                raise InvalidArgumentError(
                    f"link {name} must be finite and {'positive' if name == 'bandwidth' else 'non-negative'}, got {value!r}"
                )
        if isinstance(self.links, bool) or not isinstance(self.links, int | np.integer) or not 0 <= self.links < 1024:
            raise InvalidArgumentError(f"link links must be an int in [0, 1024), got {self.links!r}")

    def to_dict(self) -> dict[str, object]:
        """``{"kind", "bandwidth", "latency"}`` in bytes/s and seconds, and ``links`` when
        known."""
        data: dict[str, object] = {"kind": self.kind, "bandwidth": float(self.bandwidth),
                                   "latency": float(self.latency)}  # fmt: skip
        if self.links:
            data["links"] = int(self.links)
        return data

    @classmethod
    def from_dict(cls, data: object, what: str) -> Link:
        """Read a link table; bandwidth and latency may be numbers or text like ``25GB/s``."""
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(f"{what} must be a table with kind and bandwidth")
        unknown = set(data) - {"kind", "bandwidth", "latency", "links"}
        if unknown:
            raise InvalidArgumentError(f"{what} has unknown keys {sorted(unknown)}")
        if "kind" not in data or "bandwidth" not in data:
            raise InvalidArgumentError(f"{what} needs kind and bandwidth")
        links = data.get("links", 0)
        if not is_int(links):
            raise InvalidArgumentError(f"{what}.links must be an int, got {links!r}")
        return cls(
            str(data["kind"]),
            parse_bandwidth(data["bandwidth"], f"{what}.bandwidth"),
            parse_seconds(data.get("latency", 0.0), f"{what}.latency"),
            int(links),
        )


@dataclass(frozen=True)
class Torus:
    """A TPU slice's ICI network: chips per axis (``shape``), whether each axis wraps around,
    the one-way bandwidth of one ICI link, the latency per hop, and the block of chips one
    host holds (``host_shape``, e.g. ``(2, 2, 1)`` for TPU v4)."""

    shape: tuple[int, ...]
    wraparound: tuple[bool, ...]
    link_bandwidth: float
    host_shape: tuple[int, ...]
    hop_latency: float = 1e-6

    def __post_init__(self) -> None:
        dims = len(self.shape)
        if not 1 <= dims <= 3 or any(not 1 <= int(s) < 1024 for s in self.shape):
            raise InvalidArgumentError(
                f"a torus has 1 to 3 axes of 1 to 1023 chips, got {list(self.shape)}"
            )
        if len(self.wraparound) != dims or len(self.host_shape) != dims:
            raise InvalidArgumentError(
                f"torus {list(self.shape)}: wraparound {list(self.wraparound)} and host_shape "
                f"{list(self.host_shape)} need one entry per axis"
            )
        if any(h < 1 or s % h for s, h in zip(self.shape, self.host_shape, strict=True)):
            raise InvalidArgumentError(
                f"host_shape {list(self.host_shape)} must divide the torus {list(self.shape)}"
            )
        if not (self.link_bandwidth > 0 and math.isfinite(self.link_bandwidth)):
            raise InvalidArgumentError(f"ICI link bandwidth must be positive, got {self.link_bandwidth}")

    @property
    def chips(self) -> int:
        """Chips in one slice."""
        return math.prod(self.shape)

    @property
    def chips_per_host(self) -> int:
        """Chips one host holds."""
        return math.prod(self.host_shape)

    def to_dict(self) -> dict[str, object]:
        """The torus as plain JSON values."""
        return {
            "shape": list(self.shape),
            "wraparound": list(self.wraparound),
            "link_bandwidth": float(self.link_bandwidth),
            "host_shape": list(self.host_shape),
            "hop_latency": float(self.hop_latency),
        }

    @classmethod
    def from_dict(cls, data: object) -> Torus:
        """Read a ``[torus]`` table (``wraparound`` may be one bool for every axis)."""
        if not isinstance(data, Mapping) or "shape" not in data:
            raise InvalidArgumentError("torus must be a table with shape and link_bandwidth")
        unknown = set(data) - {"shape", "wraparound", "link_bandwidth", "host_shape", "hop_latency"}
        if unknown:
            raise InvalidArgumentError(f"torus has unknown keys {sorted(unknown)}")
        shape = tuple(_ints(data["shape"], "torus.shape"))
        wrap = data.get("wraparound", True)
        wraps = tuple(bool(w) for w in wrap) if isinstance(wrap, list) else (bool(wrap),) * len(shape)
        host = tuple(_ints(data.get("host_shape", [1] * len(shape)), "torus.host_shape"))
        return cls(
            shape,
            wraps,
            parse_bandwidth(data.get("link_bandwidth", 0.0), "torus.link_bandwidth"),
            host,
            parse_seconds(data.get("hop_latency", 1e-6), "torus.hop_latency"),
        )


def _ints(values: object, what: str) -> list[int]:
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise InvalidArgumentError(f"{what} must be a list of ints, got {values!r}")
    if not all(is_int(v) for v in values):
        raise InvalidArgumentError(f"{what} must be a list of ints, got {values!r}")
    return [int(v) for v in values]


@dataclass(frozen=True, eq=False)
class Cluster:
    """Hosts of ``devices_per_host`` devices joined by ``host_link``; ``hosts_per_domain``
    consecutive hosts form one NVLink domain or TPU slice; ``nics_per_host`` NICs of
    ``network`` (or DCN) join the domains. ``torus`` describes TPU slices. ``collnet`` says the
    network reduces in its switches (SHARP), which NCCL's CollNet algorithms, and its NVLS
    across nodes, need. ``sm`` is the GPUs' compute capability (90 Hopper, 100 Blackwell; 0 when
    not known), which NCCL's arithmetic and tables depend on.

    Device placement is explicit when ``placement_hosts`` (device id -> host) and, for tori,
    ``placement_coords`` (device id -> coordinates in its slice) are given (``with_placement``);
    otherwise device ``d`` is on host ``d // devices_per_host``, and on a torus the chips of a
    slice are numbered x fastest (``d = x + X*(y + Y*z)``), each host holding one
    ``host_shape`` block. Clusters are immutable and compare by their description.
    """

    name: str
    num_hosts: int
    devices_per_host: int
    host_link: Link
    network: Link
    nics_per_host: int = 1
    hosts_per_domain: int = 1
    torus: Torus | None = None
    source: str = ""
    collnet: bool = False
    sm: int = 0
    placement_hosts: np.ndarray | None = field(default=None, repr=False)
    placement_coords: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.sm, bool) or not isinstance(self.sm, int | np.integer) or not 0 <= self.sm < 1000:
            raise InvalidArgumentError(f"cluster sm must be an int in [0, 1000), got {self.sm!r}")
        for name in ("num_hosts", "devices_per_host", "nics_per_host", "hosts_per_domain"):
            value = getattr(self, name)
            if not is_int(value) or value < 1:
                raise InvalidArgumentError(f"cluster {name} must be a positive int, got {value!r}")
        checked_product([self.num_hosts, self.devices_per_host], f"the cluster {self.name!r}")
        if self.num_hosts % self.hosts_per_domain:
            raise InvalidArgumentError(
                f"cluster {self.name!r}: {self.num_hosts} hosts do not split into domains of "
                f"{self.hosts_per_domain} hosts"
            )
        if self.torus is not None:
            if self.torus.chips_per_host != self.devices_per_host:
                raise InvalidArgumentError(
                    f"cluster {self.name!r}: torus hosts hold {self.torus.chips_per_host} chips "
                    f"({list(self.torus.host_shape)}) but devices_per_host is {self.devices_per_host}"
                )
            if self.torus.chips != self.devices_per_host * self.hosts_per_domain:
                raise InvalidArgumentError(
                    f"cluster {self.name!r}: a slice {list(self.torus.shape)} has "
                    f"{self.torus.chips} chips but hosts_per_domain x devices_per_host is "
                    f"{self.hosts_per_domain * self.devices_per_host}"
                )
        self._check_placement()

    def _check_placement(self) -> None:
        n = self.num_devices
        if self.placement_hosts is not None:
            hosts = self.placement_hosts
            if hosts.shape != (n,) or (hosts < 0).any() or (hosts >= self.num_hosts).any():
                raise InvalidArgumentError(
                    f"cluster {self.name!r}: placement hosts must be {n} host ids in "
                    f"[0, {self.num_hosts})"
                )
            counts = np.bincount(hosts, minlength=self.num_hosts)
            if (counts != self.devices_per_host).any():
                raise InvalidArgumentError(
                    f"cluster {self.name!r}: placement puts {counts.min()} to {counts.max()} "
                    f"devices on a host, expected {self.devices_per_host} on each"
                )
        if self.placement_coords is not None:
            if self.torus is None:
                raise InvalidArgumentError(f"cluster {self.name!r}: coordinates need a torus")
            coords = self.placement_coords
            shape = np.asarray(self.torus.shape)
            if coords.shape != (n, shape.size) or (coords < 0).any() or (coords >= shape).any():
                raise InvalidArgumentError(
                    f"cluster {self.name!r}: placement coords must be {n} rows of "
                    f"{shape.size} coordinates inside {shape.tolist()}"
                )

    # ---- placement ---------------------------------------------------------------------------

    @property
    def num_devices(self) -> int:
        """Devices in the cluster (ids 0 .. num_devices-1)."""
        return self.num_hosts * self.devices_per_host

    @property
    def num_domains(self) -> int:
        """NVLink domains or TPU slices."""
        return self.num_hosts // self.hosts_per_domain

    @functools.cached_property
    def device_coords(self) -> np.ndarray | None:
        """Read-only int64 ``[num_devices, axes]``: each chip's coordinates in its slice
        (None without a torus)."""
        if self.torus is None:
            return None
        if self.placement_coords is not None:
            return self.placement_coords
        local = np.arange(self.num_devices, dtype=np.int64) % self.torus.chips
        coords = np.stack(np.unravel_index(local, self.torus.shape, order="F"), axis=1)
        coords.setflags(write=False)
        return coords

    @functools.cached_property
    def device_hosts(self) -> np.ndarray:
        """Read-only int64 ``[num_devices]``: the host of each device id."""
        if self.placement_hosts is not None:
            return self.placement_hosts
        ids = np.arange(self.num_devices, dtype=np.int64)
        coords = self.device_coords
        if self.torus is None or coords is None:
            hosts = ids // self.devices_per_host
        else:
            grid = tuple(s // h for s, h in zip(self.torus.shape, self.torus.host_shape, strict=True))
            blocks = coords // np.asarray(self.torus.host_shape)
            local = np.ravel_multi_index(tuple(blocks.T), grid, order="F")
            hosts = (ids // self.torus.chips) * self.hosts_per_domain + local
        hosts = hosts.astype(np.int64)
        hosts.setflags(write=False)
        return hosts

    @functools.cached_property
    def device_domains(self) -> np.ndarray:
        """Read-only int64 ``[num_devices]``: the NVLink domain or TPU slice of each device."""
        domains = self.device_hosts // self.hosts_per_domain
        domains.setflags(write=False)
        return domains

    @functools.cached_property
    def host_index(self) -> np.ndarray:
        """``device_hosts`` as int32, the compact table the tier computations gather from."""
        return self.device_hosts.astype(np.int32)

    @functools.cached_property
    def coord_index(self) -> np.ndarray | None:
        """``device_coords`` packed ten bits per axis into one int32 per device (axis 0 in
        the low bits; torus axes are below 1024 chips), or None without a torus."""
        coords = self.device_coords
        if coords is None:
            return None
        packed = np.zeros(coords.shape[0], dtype=np.int32)
        for axis in range(coords.shape[1]):
            packed |= coords[:, axis].astype(np.int32) << (10 * axis)
        return packed

    def with_placement(self, hosts: object, coords: object = None) -> Cluster:
        """The same cluster with device id -> host (and -> torus coordinates) given
        explicitly, e.g. from ``jax.devices()`` (``process_index``, ``coords``)."""
        host_array = np.array(hosts, dtype=np.int64).reshape(-1)
        host_array.setflags(write=False)
        coord_array = None
        if coords is not None:
            coord_array = np.array(coords, dtype=np.int64)
            coord_array.setflags(write=False)
        return replace(self, placement_hosts=host_array, placement_coords=coord_array)

    @property
    def network_bandwidth_per_host(self) -> float:
        """All of a host's NICs together (bytes/s one way)."""
        return self.network.bandwidth * self.nics_per_host

    # ---- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """The cluster as plain JSON values (``load_cluster`` reads it back)."""
        data: dict[str, object] = {
            "name": self.name,
            "hosts": self.num_hosts,
            "devices_per_host": self.devices_per_host,
            "host_link": self.host_link.to_dict(),
            "network": self.network.to_dict(),
            "nics_per_host": self.nics_per_host,
            "hosts_per_domain": self.hosts_per_domain,
        }
        if self.source:
            data["source"] = self.source
        if self.collnet:
            data["collnet"] = True
        if self.sm:
            data["sm"] = int(self.sm)
        if self.torus is not None:
            data["torus"] = self.torus.to_dict()
        if self.placement_hosts is not None or self.placement_coords is not None:
            placement: dict[str, object] = {}
            if self.placement_hosts is not None:
                placement["hosts"] = self.placement_hosts.tolist()
            if self.placement_coords is not None:
                placement["coords"] = self.placement_coords.tolist()
            data["placement"] = placement
        return data

    @classmethod
    def from_dict(cls, data: object) -> Cluster:
        """Read the table ``to_dict`` writes (also the layout of a cluster TOML file)."""
        if not isinstance(data, Mapping):
            raise InvalidArgumentError("a cluster description must be a table")
        known = {"name", "hosts", "devices_per_host", "host_link", "network", "nics_per_host",
                 "hosts_per_domain", "torus", "source", "collnet", "sm", "placement"}  # fmt: skip
        unknown = set(data) - known
        if unknown:
            raise InvalidArgumentError(f"cluster description has unknown keys {sorted(unknown)}")
        torus = Torus.from_dict(data["torus"]) if "torus" in data else None
        needed = ("hosts", "host_link", "network") + (() if torus else ("devices_per_host",))
        for key in needed:
            if key not in data:
                raise InvalidArgumentError(f"cluster description needs {key!r}")
        default_dph = torus.chips_per_host if torus is not None else 1
        default_hpd = torus.chips // torus.chips_per_host if torus is not None else 1
        cluster = cls(
            name=str(data.get("name", "cluster")),
            num_hosts=_int(data["hosts"], "hosts"),
            devices_per_host=_int(data.get("devices_per_host", default_dph), "devices_per_host"),
            host_link=Link.from_dict(data["host_link"], "host_link"),
            network=Link.from_dict(data["network"], "network"),
            nics_per_host=_int(data.get("nics_per_host", 1), "nics_per_host"),
            hosts_per_domain=_int(data.get("hosts_per_domain", default_hpd), "hosts_per_domain"),
            torus=torus,
            source=str(data.get("source", "")),
            collnet=_bool(data.get("collnet", False), "collnet"),
            sm=_int(data.get("sm", 0), "sm"),
        )
        placement = data.get("placement")
        if placement is not None:
            if not isinstance(placement, Mapping) or "hosts" not in placement:
                raise InvalidArgumentError("placement must be a table with hosts (and coords)")
            cluster = cluster.with_placement(placement["hosts"], placement.get("coords"))
        return cluster

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cluster):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"cluster {what} must be true or false, got {value!r}")
    return value


def _int(value: object, what: str) -> int:
    if not is_int(value):
        raise InvalidArgumentError(f"cluster {what} must be an int, got {value!r}")
    return int(value)
