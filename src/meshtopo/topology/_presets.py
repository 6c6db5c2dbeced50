"""Named clusters with published figures, each with its sources.

GPU servers (``hosts`` servers of 8 GPUs, or NVL72 racks; every GPU one NVLink bundle to the
NVSwitch, its link count kept for NCCL's own NVLink arithmetic); per-step latencies of every GPU
preset are NCCL's own per-step figures for the Simple protocol on a ring (``hwLat`` in
NCCL's ``src/graph/tuning.cc``: NVLink 3.4 us, PCIe 5.7 us, network 14 us).

- ``a100-8x``: DGX A100. NVLink3: 12 links x 25 GB/s per direction = 300 GB/s per GPU
  (NVIDIA A100 datasheet, "600 GB/s" bidirectional); 8 x 200 Gb/s HDR ConnectX-6 (DGX A100
  user guide).
- ``h100-8x``: DGX/HGX H100. NVLink4: 18 links x 25 GB/s per direction = 450 GB/s per GPU
  (H100 datasheet, "900 GB/s" bidirectional); 8 x 400 Gb/s NDR ConnectX-7 (DGX H100 user guide).
- ``p6-b200``: AWS P6-B200. NVLink5: 18 links x 50 GB/s = 900 GB/s per GPU one way;
  8 x 400 Gb/s EFA = 50 GB/s per GPU (AWS P6 instance page; ml-engineering book, "Network").
- ``gb200-nvl72``: one NVLink domain of 18 trays x 4 GPUs, NVLink5 900 GB/s per GPU one way
  across the rack (NVIDIA GB200 NVL72 page); 4 x 400 Gb/s ConnectX-7 per tray (one per GPU).

TPU slices (ICI one-way bandwidth per link, from "How to Scale Your Model", part 2 "How to
Think About TPUs", hardware table; DCN about 2.5e10 B/s per host from the same table):

- ``tpu-v4``: 3-D torus, 4.5e10 B/s per link, hosts of 2x2x1 chips.
- ``tpu-v5p``: 3-D torus, 9e10 B/s per link, hosts of 2x2x1 chips.
- ``tpu-v5e``: 2-D torus, 4.5e10 B/s per link, hosts of 2x2 chips.
- ``tpu-v6e``: 2-D torus (Trillium), 9e10 B/s per link, hosts of 2x2 chips.

Wraparound follows the same book: 3-D slices wrap only when every axis is a multiple of 4
(whole 4x4x4 cubes joined by optical switches); 2-D v5e/v6e slices wrap on an axis of the full
pod size 16. ICI latency is the book's "about 1 us per hop"; DCN latency is not published
there: 10 us is assumed (calibrate to replace it).

>>> c = preset("h100-8x", hosts=2)
>>> c.num_devices, c.host_link.bandwidth, c.network_bandwidth_per_host
(16, 450000000000.0, 400000000000.0)
>>> preset("tpu-v4", shape=(4, 4, 4)).torus.wraparound
(True, True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._errors import InvalidArgumentError
from ._cluster import Cluster, Link, Torus

NCCL_NVLINK_STEP = 3.4e-6
NCCL_PCIE_STEP = 5.7e-6
NCCL_NET_STEP = 14e-6
ICI_HOP = 1e-6
DCN_STEP = 10e-6
DCN_PER_HOST = 2.5e10


def _gpu(
    name: str, source: str, sm: int, links: int, per_link: float, nic_kind: str, nic: float,
    nics: int, hosts: int, gpus: int = 8, hosts_per_domain: int = 1,
) -> Cluster:  # fmt: skip
    return Cluster(
        name=name,
        num_hosts=hosts,
        devices_per_host=gpus,
        host_link=Link("nvlink", links * per_link, NCCL_NVLINK_STEP, links),
        network=Link(nic_kind, nic, NCCL_NET_STEP),
        nics_per_host=nics,
        hosts_per_domain=hosts_per_domain,
        source=source,
        sm=sm,
    )


def _tpu(name: str, source: str, link: float, host_shape: tuple[int, ...],
         shape: Sequence[int], slices: int) -> Cluster:  # fmt: skip
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(host_shape):
        raise InvalidArgumentError(
            f"preset {name!r} is a {len(host_shape)}-D torus, got shape {list(shape)}"
        )
    host = tuple(min(h, s) for h, s in zip(host_shape, shape, strict=True))
    wrap: tuple[bool, ...]
    if len(shape) == 3:
        wrap = (all(s % 4 == 0 for s in shape),) * 3
    else:
        wrap = tuple(s == 16 for s in shape)
    torus = Torus(shape, wrap, link, host, ICI_HOP)
    per_host = torus.chips_per_host
    return Cluster(
        name=name,
        num_hosts=slices * (torus.chips // per_host),
        devices_per_host=per_host,
        host_link=Link("ici", link, ICI_HOP),
        network=Link("dcn", DCN_PER_HOST, DCN_STEP),
        nics_per_host=1,
        hosts_per_domain=torus.chips // per_host,
        torus=torus,
        source=source,
    )


_BOOK = "How to Scale Your Model, part 2 (jax-ml.github.io/scaling-book/tpus)"
_GPU_PRESETS: dict[str, Callable[[int], Cluster]] = {
    "a100-8x": lambda h: _gpu("a100-8x", "A100 datasheet; DGX A100 user guide", 80, 12, 2.5e10,
                              "ib", 2.5e10, 8, h),
    "h100-8x": lambda h: _gpu("h100-8x", "H100 datasheet; DGX H100 user guide", 90, 18, 2.5e10,
                              "ib", 5e10, 8, h),
    "p6-b200": lambda h: _gpu("p6-b200", "AWS P6-B200 instance page; ml-engineering book", 100, 18,
                              5e10, "efa", 5e10, 8, h),
    "gb200-nvl72": lambda h: _gpu("gb200-nvl72", "NVIDIA GB200 NVL72 page", 100, 18, 5e10, "ib",
                                  5e10, 4, h, gpus=4, hosts_per_domain=18),
}  # fmt: skip
_TPU_PRESETS: dict[str, tuple[float, tuple[int, ...], tuple[int, ...]]] = {
    "tpu-v4": (4.5e10, (2, 2, 1), (4, 4, 4)),
    "tpu-v5p": (9e10, (2, 2, 1), (4, 4, 4)),
    "tpu-v5e": (4.5e10, (2, 2), (16, 16)),
    "tpu-v6e": (9e10, (2, 2), (16, 16)),
}
PRESETS = tuple(_GPU_PRESETS) + tuple(_TPU_PRESETS)
"""Every preset name."""


def preset(
    name: str,
    hosts: int | None = None,
    shape: Sequence[int] | None = None,
    slices: int = 1,
) -> Cluster:
    """The preset ``name`` (see ``PRESETS``): GPU presets take ``hosts`` (default one server,
    or one rack of 18 trays for ``gb200-nvl72``); TPU presets take the slice ``shape`` in chips
    (default a full cube or pod) and the number of ``slices`` joined by DCN."""
    if name in _GPU_PRESETS:
        if shape is not None:
            raise InvalidArgumentError(f"preset {name!r} is a GPU cluster: give hosts, not shape")
        default = 18 if name == "gb200-nvl72" else 1
        return _GPU_PRESETS[name](default if hosts is None else hosts)
    if name in _TPU_PRESETS:
        if hosts is not None:
            raise InvalidArgumentError(f"preset {name!r} is a TPU slice: give shape, not hosts")
        link, host_shape, full = _TPU_PRESETS[name]
        return _tpu(name, _BOOK, link, host_shape, full if shape is None else shape, slices)
    raise InvalidArgumentError(f"unknown cluster preset {name!r}; presets: {', '.join(PRESETS)}")
