"""The protobuf messages meshtopo reads from XLA's binary files, defined for the fields read.

XLA writes a module as ``HloProto`` (``--xla_dump_hlo_as_proto``: ``*.hlo.pb``), which wraps
an ``HloModuleProto`` (Neuron's ``*.hlo_module.pb``), itself wrapped with the arguments by
``HloSnapshot`` (``--xla_dump_hlo_snapshots``); the options a module was compiled with are a
``CompileOptionsProto`` (``compile_options.pb``). The field numbers below are XLA's
(``xla/service/hlo.proto``, ``xla/xla_data.proto``, ``xla/pjrt/proto/compile_options.proto``);
only the fields meshtopo reads are declared, so protobuf skips the others. A ``map<K, V>``
field is declared as the repeated ``{key = 1; value = 2}`` entry it is on the wire. An
instruction's ``shape``, ``metadata``, ``literal`` and ``frontend_attributes`` are declared as the bytes
they are on the wire (a message's serialized form): the same few values repeat across a
module, so each distinct one is decoded once (``decoded``), by its own message class. A nested
message is named ``Outer.Inner``, as in XLA; a ``oneof`` is declared in ``ONEOFS``.

The descriptors are built here from ``MESSAGES`` (no protoc), in a pool of their own:
``message_class(name)`` gives the class of a message.

>>> module = message_class("HloModuleProto")()
>>> module.ParseFromString(bytes.fromhex("0a056a69745f66"))
7
>>> module.name
'jit_f'
"""

from __future__ import annotations

import functools

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

PACKAGE = "meshtopo.xla"

_F = descriptor_pb2.FieldDescriptorProto
INT64, INT32, BOOL, STRING, BYTES = _F.TYPE_INT64, _F.TYPE_INT32, _F.TYPE_BOOL, _F.TYPE_STRING, _F.TYPE_BYTES
REPEATED = True

# message -> fields: (name, number, scalar type or message name[, REPEATED])
Field = tuple[str, int, "int | str"] | tuple[str, int, "int | str", bool]
MESSAGES: dict[str, list[Field]] = {
    "HloSnapshot": [("hlo", 1, "HloProto")],
    "HloProto": [("hlo_module", 1, "HloModuleProto")],
    "HloModuleProto": [
        ("name", 1, STRING), ("entry_computation_name", 2, STRING),
        ("computations", 3, "HloComputationProto", REPEATED), ("id", 5, INT64),
        ("entry_computation_id", 6, INT64), ("schedule", 7, "HloScheduleProto"),
        ("device_assignment", 15, "DeviceAssignmentProto"),
    ],
    "HloComputationProto": [
        ("name", 1, STRING), ("instructions", 2, "HloInstructionProto", REPEATED),
        ("id", 5, INT64), ("root_id", 6, INT64), ("execution_thread", 8, STRING),
    ],
    "HloScheduleProto": [("sequences", 1, "SequenceEntry", REPEATED)],
    "SequenceEntry": [("key", 1, INT64), ("value", 2, "InstructionSequence")],
    "InstructionSequence": [("instruction_ids", 1, INT64, REPEATED)],
    "HloInstructionProto": [
        ("name", 1, STRING), ("opcode", 2, STRING), ("shape", 3, BYTES),  # a ShapeProto
        ("metadata", 7, BYTES), ("literal", 8, BYTES),  # an OpMetadata, a LiteralProto
        ("parameter_number", 9, INT64), ("fusion_kind", 11, STRING),
        ("tuple_index", 13, INT64), ("dimensions", 14, INT64, REPEATED),
        ("slice_dimensions", 17, "SliceDimensions", REPEATED),
        ("dynamic_slice_sizes", 20, INT64, REPEATED), ("channel_id", 26, INT64),
        ("custom_call_target", 28, STRING), ("comparison_direction", 63, STRING),
        ("id", 35, INT64), ("operand_ids", 36, INT64, REPEATED),
        ("control_predecessor_ids", 37, INT64, REPEATED),
        ("called_computation_ids", 38, INT64, REPEATED), ("backend_config", 43, BYTES),
        ("replica_groups", 49, "ReplicaGroup", REPEATED), ("all_reduce_id", 45, INT64),
        ("is_host_transfer", 47, BOOL), ("source_target_pairs", 52, "SourceTarget", REPEATED),
        ("constrain_layout", 56, BOOL),
        ("frontend_attributes", 68, BYTES),  # a FrontendAttributes
        ("use_global_device_ids", 71, BOOL), ("comparison_type", 72, STRING),
        ("collective_device_list", 87, "CollectiveDeviceListProto"),
        ("iota_collective_device_list", 92, "IotaReplicaGroupListProto"),
        ("mesh_axes_replica_group_list", 93, "MeshAxesReplicaGroupListProto"),
    ],
    "SliceDimensions": [("start", 1, INT64), ("limit", 2, INT64), ("stride", 3, INT64)],
    "ShapeProto": [
        ("element_type", 2, INT32), ("dimensions", 3, INT64, REPEATED),
        ("tuple_shapes", 4, "ShapeProto", REPEATED), ("layout", 5, "LayoutProto"),
        ("is_dynamic_dimension", 6, BOOL, REPEATED),
    ],
    "LayoutProto": [("minor_to_major", 1, INT64, REPEATED)],
    "OpMetadata": [
        ("op_type", 1, STRING), ("op_name", 2, STRING), ("source_file", 3, STRING),
        ("source_line", 4, INT32), ("stack_frame_id", 15, INT32),
    ],
    "FrontendAttributes": [("map", 1, "StringEntry", REPEATED)],
    "StringEntry": [("key", 1, STRING), ("value", 2, STRING)],
    "ReplicaGroup": [("replica_ids", 1, INT64, REPEATED)],
    "IotaReplicaGroupListProto": [
        ("num_replica_groups", 1, INT64), ("num_devices_per_group", 2, INT64),
        ("iota_reshape_dims", 3, INT64, REPEATED), ("iota_transpose_perm", 4, INT32, REPEATED),
    ],
    "CollectiveDeviceListProto": [
        ("replica_groups", 1, "ReplicaGroup", REPEATED),
        # Written by XLA before the instruction's iota_collective_device_list (now reserved).
        ("iota_replica_group_list", 2, "IotaReplicaGroupListProto"),
    ],
    "MeshAxesReplicaGroupListProto": [
        ("mesh", 1, "MeshProto"), ("axes", 2, "AxisRefProto", REPEATED),
    ],
    "MeshProto": [
        ("axes", 1, "MeshProto.MeshAxis", REPEATED), ("device_ids", 2, INT64, REPEATED),
        ("iota_transform", 3, "MeshProto.IotaTransform"),
    ],
    "MeshProto.MeshAxis": [("name", 1, STRING), ("size", 2, INT64)],
    "MeshProto.IotaTransform": [
        ("reshape_dims", 1, INT64, REPEATED), ("transpose_perm", 2, INT64, REPEATED),
    ],
    "AxisRefProto": [("mesh_axis_index", 1, INT64), ("sub_axis_info", 2, "AxisRefProto.SubAxis")],
    "AxisRefProto.SubAxis": [("pre_size", 1, INT64), ("size", 2, INT64)],
    "SourceTarget": [("source", 1, INT64), ("target", 2, INT64)],
    "DeviceAssignmentProto": [
        ("replica_count", 1, INT32), ("computation_count", 2, INT32),
        ("computation_devices", 3, "ComputationDevice", REPEATED),
    ],
    "ComputationDevice": [("replica_device_ids", 1, INT64, REPEATED)],
    "LiteralProto": [
        ("shape", 1, "ShapeProto"), ("preds", 2, BOOL, REPEATED), ("s32s", 4, INT32, REPEATED),
        ("s64s", 5, INT64, REPEATED), ("u32s", 6, _F.TYPE_UINT32, REPEATED),
        ("u64s", 7, _F.TYPE_UINT64, REPEATED), ("f32s", 8, _F.TYPE_FLOAT, REPEATED),
        ("f64s", 9, _F.TYPE_DOUBLE, REPEATED),
    ],
    "CompileOptionsProto": [("executable_build_options", 3, "ExecutableBuildOptionsProto")],
    "ExecutableBuildOptionsProto": [
        ("num_replicas", 4, INT64), ("num_partitions", 5, INT64),
        ("device_assignment", 9, "DeviceAssignmentProto"),
    ],
}  # fmt: skip
# message -> oneof -> its fields: XLA keeps at most one of them, the last one on the wire.
ONEOFS: dict[str, dict[str, tuple[str, ...]]] = {
    "HloInstructionProto": {"replica_group_list": (
        "collective_device_list", "iota_collective_device_list", "mesh_axes_replica_group_list")},
}


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    file = descriptor_pb2.FileDescriptorProto(name="meshtopo_xla.proto", package=PACKAGE,
                                              syntax="proto3")
    messages: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name, fields in MESSAGES.items():
        outer, _, nested = name.rpartition(".")
        message = (messages[outer].nested_type if outer else file.message_type).add(name=nested)
        messages[name] = message
        oneofs = ONEOFS.get(name, {})
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        for field_name, number, kind, *repeated in fields:
            field = message.field.add(name=field_name, number=number)
            for index, members in enumerate(oneofs.values()):
                if field_name in members:
                    field.oneof_index = index
            field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if isinstance(kind, str):
                field.type, field.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{kind}"
            else:
                field.type = kind
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return pool


@functools.cache
def message_class(name: str) -> type[Message]:
    """The generated class of message ``name`` (a key of ``MESSAGES``)."""
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{PACKAGE}.{name}"))


def decoded(name: str, data: bytes) -> Message:
    """Message ``name`` read from ``data``, its serialized form (a field declared as bytes)."""
    return message_class(name).FromString(data)


# xla.PrimitiveType value -> the element type as HLO text writes it.
ELEMENT_TYPES: dict[int, str] = {
    1: "pred", 30: "s1", 26: "s2", 21: "s4", 2: "s8", 3: "s16", 4: "s32", 5: "s64",
    31: "u1", 27: "u2", 22: "u4", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 16: "bf16", 12: "f64", 19: "f8e5m2", 28: "f8e4m3", 20: "f8e4m3fn",
    23: "f8e4m3b11fnuz", 29: "f8e3m4", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 32: "f4e2m1fn",
    33: "f8e8m0fnu", 15: "c64", 18: "c128", 13: "tuple", 14: "opaque", 17: "token",
}  # fmt: skip
TUPLE, TOKEN, OPAQUE = 13, 17, 14
