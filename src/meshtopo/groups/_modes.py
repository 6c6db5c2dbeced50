"""Group modes: how the ids in ``replica_groups`` are read, decided by two instruction fields.

======================  ========================  ============================
``channel_id``          ``use_global_device_ids``  mode
======================  ========================  ============================
absent                  absent or false            ``kCrossReplica``
absent                  true                       error (InvalidArgumentError)
present                 absent                     ``kCrossPartition``
present                 false                      ``kCrossReplicaAndPartition``
present                 true                       ``kFlattenedID``
======================  ========================  ============================

>>> str(group_mode(has_channel_id=True, use_global_device_ids=None))
'kCrossPartition'
>>> str(group_mode_for_opcode("all-reduce", has_channel_id=True, use_global_device_ids=None))
'kCrossReplicaAndPartition'
"""

from __future__ import annotations

import enum

import numpy as np

from .._errors import InternalError, InvalidArgumentError

INVALID_MODE_MESSAGE = "Invalid combination of has_channel_id and use_global_device_ids"


class CollectiveOpGroupMode(enum.Enum):
    """The four readings of a replica-group id; ``str()`` gives the name XLA prints (``kCrossReplica``)."""

    CROSS_REPLICA = "kCrossReplica"
    CROSS_PARTITION = "kCrossPartition"
    CROSS_REPLICA_AND_PARTITION = "kCrossReplicaAndPartition"
    FLATTENED_ID = "kFlattenedID"

    def __str__(self) -> str:
        return self.value

    @property
    def snake_name(self) -> str:
        """XLA's newer spelling, e.g. ``cross_replica``, as used by ``mode=`` in HLO text."""
        return self.name.lower()

    @classmethod
    def parse(cls, name: str) -> CollectiveOpGroupMode:
        """Read any spelling XLA has used: ``kCrossReplica``, ``cross_replica``,
        ``COLLECTIVE_OP_GROUP_MODE_CROSS_REPLICA``, ``CROSS_REPLICA`` (``kFlattenedID`` likewise)."""
        key = str(name).strip()
        for mode in cls:
            spellings = {
                mode.value.lower(),
                mode.name.lower(),
                f"collective_op_group_mode_{mode.name.lower()}",
            }
            if key.lower() in spellings:
                return mode
        raise InvalidArgumentError(f"Invalid collective op group mode: {name}")

    @classmethod
    def coerce(cls, mode: object) -> CollectiveOpGroupMode:
        """``mode`` itself, or the mode a name spells (any spelling ``parse`` reads)."""
        if isinstance(mode, cls):
            return mode
        if isinstance(mode, str):
            return cls.parse(mode)
        raise InvalidArgumentError(
            f"mode must be a CollectiveOpGroupMode or its name, got {mode!r}"
        )


def group_mode(has_channel_id: bool, use_global_device_ids: bool | None) -> CollectiveOpGroupMode:
    """XLA's ``GetCollectiveOpGroupMode``: the mode for the two fields as written.

    ``use_global_device_ids`` is ``None`` when the field is absent, which differs from ``False``
    once a channel id is present. Without a channel, ``True`` is an ``InvalidArgumentError``.
    """
    if not isinstance(has_channel_id, bool | np.bool_):
        raise InvalidArgumentError(f"has_channel_id must be a bool, got {has_channel_id!r}")
    if use_global_device_ids is not None and not isinstance(use_global_device_ids, bool | np.bool_):
        raise InvalidArgumentError(
            f"use_global_device_ids must be a bool or None (absent), got {use_global_device_ids!r}"
        )
    if not has_channel_id:
        if use_global_device_ids:
            raise InvalidArgumentError(
                f"{INVALID_MODE_MESSAGE}: use_global_device_ids=true needs a channel_id"
            )
        return CollectiveOpGroupMode.CROSS_REPLICA
    if use_global_device_ids is None:
        return CollectiveOpGroupMode.CROSS_PARTITION
    if use_global_device_ids:
        return CollectiveOpGroupMode.FLATTENED_ID
    return CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION


# Ops that store use_global_device_ids as a plain bool (absent reads as false) ...
PLAIN_BOOL_OPCODES = frozenset(
    {"all-gather", "all-gather-start", "all-reduce", "all-reduce-start", "reduce-scatter"}
)
# ... and ops that always pass it as absent.
ABSENT_FLAG_OPCODES = frozenset(
    {
        "all-to-all",
        "collective-broadcast",
        "collective-permute",
        "collective-permute-start",
        "ragged-all-to-all",
    }
)


def group_mode_for_opcode(
    opcode: str, has_channel_id: bool, use_global_device_ids: bool | None
) -> CollectiveOpGroupMode:
    """XLA's per-instruction rule (``GetCollectiveOpGroupMode(const HloInstruction*)``).

    all-reduce, all-gather and reduce-scatter hold the flag as a plain bool, so with a channel
    they are never ``kCrossPartition``; all-to-all, collective-broadcast, collective-permute and
    ragged-all-to-all ignore it. Any other opcode is an ``InternalError``.
    """
    if not isinstance(opcode, str):
        raise InvalidArgumentError(f"opcode must be a string like 'all-reduce', got {opcode!r}")
    if opcode in PLAIN_BOOL_OPCODES:
        return group_mode(has_channel_id, bool(use_global_device_ids))
    if opcode in ABSENT_FLAG_OPCODES:
        return group_mode(has_channel_id, None)
    raise InternalError(f"Unexpected instruction type: {opcode} has no collective group mode")
