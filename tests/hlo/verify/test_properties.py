"""Properties: ``CheckReplicaGroups`` through ``verify`` agrees with a direct transcription of
XLA's loops on random groups, and the result never depends on the encoding of the groups."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

import meshtopo as mt
import meshtopo.hlo as hlo

from ._modules import module_text


def xla_check(groups: list[list[int]], replica_count: int) -> str | None:
    """XLA's CheckReplicaGroups for an all-gather in kCrossReplica mode, loop by loop."""
    if not groups:
        return None
    n = 0
    for group in groups:
        if not group:
            return "Instruction cannot have an empty replica group"
        n += len(group)
    seen = [False] * n
    for group in groups:
        for i in group:
            if i < 0 or i >= n:
                return f"Replica {i} is out of range (should be in [0, {n}) range)"
            if seen[i]:
                return f"Replica {i} is repeated"
            seen[i] = True
    if replica_count != 1 and n != replica_count:
        return (f"In kCrossReplica mode, replica groups should contain {replica_count} "
                f"replicas, but found {n}")
    if any(len(g) != len(groups[0]) for g in groups):
        return "Replica groups expected to be of uniform size"
    return None


def groups_text(groups: list[list[int]]) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def verify_all_gather(text: str, replica_count: int, size: int) -> list[str]:
    body = (f"ROOT %ag = f32[{8 * size}]{{0}} all-gather(%p), replica_groups={text}, "
            "dimensions={0}")
    module = hlo.parse_module(module_text(body, r=replica_count))
    return [f.message for f in hlo.verify(module)]


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(st.lists(st.integers(-2, 9), max_size=4), max_size=4),
    replica_count=st.integers(1, 9),
)
def test_matches_xla_loops(groups: list[list[int]], replica_count: int) -> None:
    size = len(groups[0]) if groups and groups[0] else replica_count
    messages = verify_all_gather(groups_text(groups), replica_count, max(size, 1))
    expected = xla_check(groups, replica_count)
    if expected is None:
        # The output is sized to the first group, so the shard count passes too.
        assert messages == []
    else:
        assert len(messages) == 1 and messages[0].startswith(expected), (messages, expected)


@settings(max_examples=30, deadline=None)
@given(
    num_groups=st.sampled_from([1, 2, 4, 8]),
    permutation=st.permutations(list(range(8))),
    replica_count=st.sampled_from([1, 4, 8]),
)
def test_encoding_does_not_matter(num_groups: int, permutation: list[int],
                                  replica_count: int) -> None:
    """Explicit text and its iota form (when one exists) give the same findings, up to the
    quoted groups text."""
    size = 8 // num_groups
    groups = [permutation[g * size:(g + 1) * size] for g in range(num_groups)]
    explicit = mt.CollectiveDeviceList(groups)
    compact = explicit.compact()
    first = verify_all_gather(str(explicit), replica_count, size)
    second = verify_all_gather(str(compact), replica_count, size)
    assert [m.split(": %")[0] for m in first] == [m.split(": %")[0] for m in second]
