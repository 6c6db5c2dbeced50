"""XLA's parser rejections and bad input: HloParseError with line and column, or LimitError."""

from __future__ import annotations

import io

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._text import entry_head

HEAD = entry_head("HloModule m, replica_count=4")


def error_for(line: str) -> mt.HloParseError:
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(HEAD + line + "\n}\n")
    return info.value


@pytest.mark.parametrize(
    ("line", "message", "column"),
    [
        ("  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={}, use_global_device_ids=true, to_apply=%add",
         "Invalid combination of has_channel_id and use_global_device_ids", 33),
        ("  ROOT %a = f32[2]{0} reduce-scatter(%p), replica_groups={}, use_global_device_ids=true, dimensions={0}, to_apply=%add",
         "Invalid combination of has_channel_id and use_global_device_ids", 37),
        ("  ROOT %a = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1}}, slice_sizes={{4}}",
         "CollectivePermute and CollectivePermuteStart must have exactly four operands", 8),
        ("  ROOT %a = f32[8]{0} all-to-all(%p), replica_groups={}, dimensions={0,1}",
         "error parsing attribute dimensions", 8),
        ("  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={}", "attribute to_apply is expected", 37),
        # XLA says so at the next token (the '}' on the next line); here just past the
        # instruction, the end of what the decoder sees.
        ("  ROOT %a = f32[8]{0} collective-permute(%p), channel_id=1",
         "attribute source_target_pairs is expected", 45),  # at the attribute list, as XLA
        ("  ROOT %a = f32[8]{0} all-reduce(%p), channel_id=1, channel_id=2, to_apply=%add",
         "attribute channel_id already exists", 53),
        ("  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},}, to_apply=%add",
         "expects a list to end with kRbrace", 61),
        ("  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups=[2,2,2]<=[8], to_apply=%add",
         "error parsing attribute replica_groups", 39),  # XLA's, at the name
        ("  ROOT %a = f32[8]{0} all-reduce(%p), channel_id=99999999999999999999999, to_apply=%add",
         "expects integer", 50),
        ("  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={{0,99999999999999999999999}}, to_apply=%add",
         "expects integer", 58),
    ],
    ids=["mode-all-reduce", "mode-reduce-scatter", "in-place-operands", "a2a-dims",
         "no-to_apply", "no-pairs", "duplicate", "trailing-comma", "iota-rank",
         "int64-channel", "int64-group"],
)
def test_rejections(line: str, message: str, column: int) -> None:
    error = error_for(line)
    assert error.line == 9
    assert message in error.message
    assert error.column == column


@pytest.mark.jax
@pytest.mark.parametrize("opcode", ["all-gather", "all-gather-start", "reduce-scatter"])
def test_a_gather_or_scatter_naming_no_dimension_is_refused_as_xla_refuses_it(opcode: str) -> None:
    """XLA reads the first of the dimensions: of none, its parser fails out of range."""
    from jaxlib._hlo import hlo_module_from_text  # type: ignore[import-not-found]

    line = f"  ROOT %a = f32[8]{{0}} {opcode}(%p), dimensions={{}}" + (
        ", to_apply=%add" if opcode == "reduce-scatter" else "")
    with pytest.raises(Exception, match="range"):
        hlo_module_from_text(HEAD + line + "\n}\n")
    error = error_for(line)
    assert (error.line, error.column) == (9, 8)
    assert error.message == (f"error parsing attribute dimensions: {opcode} needs a dimension, "
                             "got {}")


def test_all_gather_mode_error_is_left_for_the_verifier() -> None:
    module = hlo.parse_module(HEAD + "  %a = f32[32]{0} all-gather(%p), replica_groups={}, "
                              "dimensions={0}, use_global_device_ids=true\n"
                              "  ROOT %r = f32[8]{0} copy(%p)\n}\n")
    with pytest.raises(mt.InvalidArgumentError, match="Invalid combination of has_channel_id"):
        _ = module.collectives[0].mode


def test_mode_attribute_turns_the_check_off() -> None:
    module = hlo.parse_module(HEAD + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={}, "
                              "use_global_device_ids=true, mode=cross_replica, to_apply=%add\n}\n")
    assert module.collectives[0].use_global_device_ids is True


def test_device_limit() -> None:
    with mt.device_limit(16), pytest.raises(mt.LimitError, match="9:54"):
        hlo.parse_module(HEAD + "  ROOT %a = f32[8]{0} all-reduce(%p), "
                         "replica_groups=[4,8]<=[32], to_apply=%add\n}\n")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1), ("\x00\x01garbage", 1), ("HloModule m, replica_count=0\n", 1),
        ("HloModule m, replica_count=x\n", 1), ("HloModule m, num_partitions={\n", 1),
        (HEAD + "  %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1}", 9),
        (HEAD + '  %a = f32[8]{0} all-reduce(%p), metadata={op_name="abc', 9),
    ],
    ids=["empty", "binary", "zero-replicas", "bad-int", "open-brace", "truncated-groups",
         "truncated-string"],
)
def test_bad_input(text: str, line: int) -> None:
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert info.value.line == line and info.value.column >= 1


def test_structure_errors_are_raised_by_every_reading_path() -> None:
    """A module XLA's parser refuses is refused when read, by parse_module and the stream."""
    for text, where, message in [
        # XLA reads the operands on past the missing ')' and stops at '}'; its words, its place
        (HEAD + "  %q = f32[8]{0} negate(%p\n}\n", (9, 25),
         "cannot parse as an instruction name or as a nested instruction:"),
        (HEAD + "  %q = f32[8]{0} negate(%p", (9, 25),  # XLA's, as above
         "cannot parse as an instruction name or as a nested instruction:"),
        (HEAD + "  %q = f32[8]{0} negate(%p)\n", (10, 1), "computation main is never closed"),
    ]:
        with pytest.raises(mt.HloParseError) as info:
            hlo.parse_module(text)
        assert ((info.value.line, info.value.column), info.value.message[:len(message)]) == (
            where, message)
        with pytest.raises(mt.HloParseError) as streamed:
            list(hlo.iter_collectives(io.StringIO(text), progress=False))
        assert (streamed.value.line, streamed.value.column) == where


def test_unknown_opcodes_are_refused_and_collectives_take_what_xla_allows() -> None:
    """An opcode XLA does not know is refused at it, in XLA's words (a misspelt collective
    is not silently no collective); a collective takes only the attributes XLA's parser
    allows it."""
    for line in ("  %q = f32[8]{0} fancy-new-op(%p), wibble={a{b}c}\n",
                 "  %q = f32[8]{0}\n    fancy-new-op(\n%p)\n"):
        with pytest.raises(mt.HloParseError) as unknown:
            hlo.parse_module(HEAD + line + "  ROOT %a = f32[8]{0} copy(%q)\n}\n")
        assert unknown.value.message == (
            "expects opcode but sees: fancy-new-op, error: Unknown opcode: fancy-new-op")
        assert (unknown.value.line, unknown.value.column) == (
            (9, 18) if line.count("\n") == 1 else (10, 5))
    module = hlo.parse_module(HEAD + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={}, "
                              "to_apply=%add, sharding={replicated}\n}\n")
    (a,) = module.collectives
    assert a.attributes["sharding"] == "{replicated}"
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(HEAD + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={}, "
                         "to_apply=%add, new_attr=[1,2]<=[2]\n}\n")
    assert (info.value.line, info.value.column) == (9, 73)
    assert info.value.message.startswith(
        'unexpected attribute "new_attr". Allowed attributes: backend_config, channel_id, '
        "constrain_layout, control-predecessors, frontend_attributes, metadata, mode, origin")


def test_load_errors(tmp_path: object) -> None:
    with pytest.raises(mt.InvalidArgumentError, match="cannot read"):
        hlo.load(tmp_path / "missing.hlo")  # type: ignore[operator]
    bad = tmp_path / "bad.hlo.gz"  # type: ignore[operator]
    bad.write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(mt.InvalidArgumentError, match=r"bad\.hlo\.gz is not a readable gzip file"):
        hlo.load(bad)
    with pytest.raises(mt.InvalidArgumentError, match=r"bad\.hlo\.gz is not a readable gzip file"):
        list(hlo.iter_collectives(bad, progress=False))


def test_an_empty_operand_is_left_out() -> None:
    # XLA's parser reads on past an operand it reads neither as a name nor as an instruction,
    # and leaves it out (jaxlib reads this text: test_xla_parser_agreement's "nothing first").
    module = hlo.parse_module(HEAD + "  ROOT %a = f32[8]{0} all-reduce(,%p), "
                              "replica_groups={}, to_apply=%add\n}\n")
    assert module.entry.instruction("a").operands == ("p",)
