"""The attributes XLA's parser allows on each collective opcode; any other is refused.

Read from XLA's own refusals (``unexpected attribute "x". Allowed attributes: ...``, the
parser inside jaxlib 0.10): every instruction takes ``COMMON``, and each collective opcode its
own fields. ``-done`` forms of all-reduce, all-gather and collective-permute take no
``channel_id`` (the start carries it); send/recv and their ``-done`` forms do.
"""

from __future__ import annotations

COMMON = frozenset({
    "backend_config", "control-predecessors", "frontend_attributes", "metadata", "origin",
    "parameter_replication", "sharding", "statistics",
})  # fmt: skip
_ALL_REDUCE = ("channel_id", "constrain_layout", "mode", "replica_groups", "to_apply",
               "use_global_device_ids")
_ALL_GATHER = ("channel_id", "constrain_layout", "dimensions", "replica_groups",
               "use_global_device_ids")
_PERMUTE = ("channel_id", "slice_sizes", "source_target_pairs")
_P2P = ("channel_id", "is_host_transfer")
_OWN: dict[str, tuple[str, ...]] = {
    "all-reduce": _ALL_REDUCE, "all-reduce-start": _ALL_REDUCE, "all-reduce-done": (),
    "all-gather": _ALL_GATHER, "all-gather-start": _ALL_GATHER, "all-gather-done": (),
    "reduce-scatter": (*_ALL_GATHER, "mode", "to_apply"),
    "all-to-all": ("channel_id", "constrain_layout", "dimensions", "replica_groups"),
    "ragged-all-to-all": ("channel_id", "dimensions", "replica_groups"),
    "collective-permute": _PERMUTE, "collective-permute-start": _PERMUTE,
    "collective-permute-done": (), "collective-broadcast": ("channel_id", "replica_groups"),
    "send": _P2P, "send-done": _P2P, "recv": _P2P, "recv-done": _P2P,
}  # fmt: skip
ALLOWED: dict[str, frozenset[str]] = {op: COMMON | set(own) for op, own in _OWN.items()}


def unexpected_attribute(opcode: str, key: str) -> str | None:
    """XLA's message when ``key`` is not an attribute of ``opcode``, else None (also for
    opcodes this table does not cover, such as the generic async wrappers)."""
    allowed = ALLOWED.get(opcode)
    if allowed is None or key in allowed:
        return None
    return f'unexpected attribute "{key}". Allowed attributes: {", ".join(sorted(allowed))}'
