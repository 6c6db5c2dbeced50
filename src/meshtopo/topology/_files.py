"""Clusters from files or preset names, and back to JSON.

``load_cluster`` takes a preset spec (``h100-8x``, ``h100-8x:4`` for four servers,
``tpu-v5e:4x4``, ``tpu-v4:4x4x4:2`` for two slices), a TOML or JSON file in the layout of
``Cluster.to_dict`` (bandwidths in bytes/s or text like ``"25GB/s"``, latencies in seconds or
``"3.4us"``), or NCCL's topology XML (one host; ``hosts`` copies of it). An example TOML::

    name = "my-cluster"
    hosts = 4
    devices_per_host = 8
    nics_per_host = 8
    sm = 90              # the GPUs' compute capability (NCCL's figures and tables)
    collnet = false      # true when the network reduces in-switch (SHARP)
    host_link = { kind = "nvlink", bandwidth = "450GB/s", latency = "3.4us", links = 18 }
    network = { kind = "ib", bandwidth = "400Gb/s", latency = "14us" }

>>> load_cluster("h100-8x:2").num_hosts
2
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

from .._errors import InvalidArgumentError
from ._cluster import Cluster
from ._nccl_xml import read_nccl_topology
from ._presets import PRESETS, preset

PRESET_SPEC_FORM = "name, name:HOSTS or name:AxB[xC][:SLICES]"
_PRESET_SPEC = re.compile(
    r"([a-z0-9-]+)(?::([0-9]{1,9})|:([0-9]{1,6}(?:x[0-9]{1,6}){0,2})(?::([0-9]{1,6}))?)?")


def preset_spec(spec: str) -> Cluster:
    """The preset cluster a spec names: ``h100-8x``, ``h100-8x:4`` (hosts) or
    ``tpu-v5e:4x4[:2]`` (slice shape and slice count). Numbers are bounded by the spec's form
    before anything is built; a malformed spec or an unknown name is an
    ``InvalidArgumentError`` saying which."""
    match = _PRESET_SPEC.fullmatch(spec)
    if match is None:
        raise InvalidArgumentError(f"{spec!r} is not a preset spec ({PRESET_SPEC_FORM})")
    name, hosts, shape, slices = match.groups()
    if name not in PRESETS:
        raise InvalidArgumentError(
            f"{spec!r} names {name!r}, which is not a preset; presets: {', '.join(PRESETS)}")
    return preset(name, hosts=None if hosts is None else int(hosts),
                  shape=None if shape is None else [int(s) for s in shape.split("x")],
                  slices=1 if slices is None else int(slices))


def load_cluster(spec: str | os.PathLike[str], hosts: int = 1) -> Cluster:
    """The cluster named by ``spec``: a preset spec, or a ``.toml``, ``.json`` or NCCL ``.xml``
    file (``hosts`` copies of the XML's host; TOML and JSON give their own host count)."""
    path = Path(spec)
    if not path.is_file():
        if str(spec).partition(":")[0] not in PRESETS:
            raise InvalidArgumentError(
                f"{str(spec)!r} is neither a cluster file nor a preset; presets: "
                f"{', '.join(PRESETS)}")
        return preset_spec(str(spec))
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix == ".xml" or text.lstrip().startswith("<"):
        return read_nccl_topology(text).to_cluster(hosts=hosts, name=path.stem)
    try:
        data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise InvalidArgumentError(f"{path}: not valid {suffix[1:] or 'JSON'}: {error}") from None
    return Cluster.from_dict(data)


def save_cluster(cluster: Cluster, path: str | os.PathLike[str]) -> None:
    """Write ``cluster`` as JSON (``load_cluster`` reads it back equal)."""
    Path(path).write_text(json.dumps(cluster.to_dict(), indent=2) + "\n", encoding="utf-8")
