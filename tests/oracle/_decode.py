"""Decode executed collectives' outputs into device groups and pairs.

Inputs are built so that each device's contribution is recognisable; see each decoder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def sorted_groups(groups: Iterable[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(sorted({tuple(int(d) for d in g) for g in groups}, key=lambda g: (min(g), g)))


def decode_sets(outputs: Mapping[int, np.ndarray]) -> tuple[tuple[int, ...], ...]:
    """psum of one-hots: the nonzero slots of each device's output are its group."""
    groups = {}
    for device, out in outputs.items():
        members = tuple(int(i) for i in np.flatnonzero(out))
        if device not in members or not np.all(out[list(members)] == 1):
            raise AssertionError(
                f"device {device}: psum output {out.tolist()} is not a one-hot sum"
            )
        groups[device] = members
    return _checked_partition(groups)


def decode_gathered(outputs: Mapping[int, np.ndarray]) -> tuple[tuple[int, ...], ...]:
    """all_gather of each device's own id: the output lists the group in rank order."""
    groups = {device: tuple(int(v) for v in out) for device, out in outputs.items()}
    return _checked_partition(groups)


def decode_scattered(outputs: Mapping[int, np.ndarray]) -> tuple[tuple[int, ...], ...]:
    """psum_scatter where chunk j of device d is (j+1)*onehot(d): device d receives
    (rank(d)+1) at each member's slot."""
    members: dict[int, tuple[int, ...]] = {}
    rank: dict[int, int] = {}
    for device, out in outputs.items():
        nz = np.flatnonzero(out)
        values = set(out[nz].tolist())
        if device not in nz or len(values) != 1:
            raise AssertionError(f"device {device}: psum_scatter output {out.tolist()} undecodable")
        members[device] = tuple(int(i) for i in nz)
        rank[device] = int(values.pop()) - 1
    groups = {}
    for device, group in members.items():
        ordered = sorted(group, key=lambda m: rank[m])
        if [rank[m] for m in ordered] != list(range(len(group))):
            raise AssertionError(f"group {group}: ranks {[rank[m] for m in group]} not 0..S-1")
        groups[device] = tuple(ordered)
    return _checked_partition(groups)


def decode_all_to_all(outputs: Mapping[int, np.ndarray], size: int) -> tuple[tuple[int, ...], ...]:
    """all_to_all where chunk j of device d holds d*S + j: position i of device d's output
    holds src_i*S + rank(d), so the sources in position order are the group in rank order."""
    groups = {}
    for device, out in outputs.items():
        sources = tuple(int(v) // size for v in out)
        chunks = {int(v) % size for v in out}
        if len(chunks) != 1 or sources.index(device) != chunks.pop():
            raise AssertionError(f"device {device}: all_to_all output {out.tolist()} undecodable")
        groups[device] = sources
    return _checked_partition(groups)


def _checked_partition(groups: Mapping[int, tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
    """Every member of a group must have measured the same group."""
    for device, group in groups.items():
        for member in group:
            if groups.get(member) != group:
                raise AssertionError(
                    f"device {device} measured group {group} but member {member} measured "
                    f"{groups.get(member)}"
                )
    return sorted_groups(groups.values())


def decode_pairs(outputs: Mapping[int, np.ndarray]) -> tuple[tuple[int, int], ...]:
    """ppermute of (id + 1): a nonzero output v at device t means the pair (v - 1, t)."""
    return tuple(
        sorted((int(out[0]) - 1, device) for device, out in outputs.items() if int(out[0]) != 0)
    )


def default_permutation(size: int) -> tuple[tuple[int, int], ...]:
    """A ppermute over in-group indices that exposes rank order: i -> (i + 1) mod S.

    (For S = 2 this is the swap; it still distinguishes groups.)"""
    return tuple((i, (i + 1) % size) for i in range(size))
