"""Result shapes (``CheckShape``) of collectives, their -done forms and the async wrappers;
-done instructions whose operand is no start, found through the structural model."""

from __future__ import annotations

import pytest

import meshtopo as mt
import meshtopo.hlo as hlo

from ._modules import SUM, module_text

ARS = "%ars = f32[8]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add"
AGS = "%ags = (f32[8]{0}, f32[16]{0}) all-gather-start(%p), replica_groups={{0,1}}, dimensions={0}"
CPS = ("%cps = (f32[8]{0}, f32[8]{0}) collective-permute-start(%p), "
       "source_target_pairs={{0,1},{1,0}}")


def found(body: str, r: int = 2, params: str = "%p = f32[8]{0} parameter(0)"
          ) -> list[tuple[str, int, int, str, str]]:
    module = hlo.parse_module(module_text(body, r=r, params=params))
    return [(f.instruction, f.line, f.column, f.check, f.message) for f in hlo.verify(module)]


CASES = [
    ("all_reduce_done_shape", f"{ARS}\nROOT %ard = f32[4]{{0}} all-reduce-done(%ars)",
     [("ard", 10, 8, "shapes", "Expected instruction to have shape equal to f32[8], actual "
       "shape is f32[4]:\n%ard = f32[4]{0} all-reduce-done(%ars)")]),
    ("all_reduce_start_shape",
     "%ars = f32[4]{0} all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%add\n"
     "ROOT %ard = f32[4]{0} all-reduce-done(%ars)",
     [("ars", 9, 3, "shapes", "Expected instruction to have shape equal to f32[8], actual "
       "shape is f32[4]:\n%ars = f32[4]{0} all-reduce-start(%p), replica_groups={{0,1}}, "
       "to_apply=%add")]),
    ("all_reduce_two_operands_shape",
     "ROOT %ar = f32[8]{0} all-reduce(%p, %p), replica_groups={{0,1}}, to_apply=%add",
     [("ar", 9, 8, "shapes", "Expected instruction to have shape equal to (f32[8], f32[8]), "
       "actual shape is f32[8]:\n%ar = f32[8]{0} all-reduce(%p, %p), replica_groups={{0,1}}, "
       "to_apply=%add")]),
    ("all_reduce_done_operand_is_tuple",
     f"{ARS}\n%t = (f32[8]{{0}}) tuple(%ars)\nROOT %ard = f32[8]{{0}} all-reduce-done(%t)",
     [("ars", 9, 3, "async_pairs", "The consumer of a all-reduce-start instruction needs to be "
       "one of (all-reduce-done), found tuple"),
      ("ard", 11, 8, "async_pairs", "The operand of a all-reduce-done instruction needs to be "
       "all-reduce-start, found tuple")]),
    ("all_gather_start_done_ok", f"{AGS}\nROOT %agd = f32[16]{{0}} all-gather-done(%ags)", []),
    ("all_gather_done_shape", f"{AGS}\nROOT %agd = f32[8]{{0}} all-gather-done(%ags)",
     [("agd", 10, 8, "shapes", "Expected instruction to have shape equal to f32[16], actual "
       "shape is f32[8]:\n%agd = f32[8]{0} all-gather-done(%ags)")]),
    ("all_gather_start_input_shape",
     "%ags = (f32[4]{0}, f32[16]{0}) all-gather-start(%p), replica_groups={{0,1}}, "
     "dimensions={0}\nROOT %agd = f32[16]{0} all-gather-done(%ags)",
     [("ags", 9, 3, "shapes", "Expected instruction to have shape equal to (f32[8], f32[16]), "
       "actual shape is (f32[4], f32[16]):\n%ags = (f32[4]{0}, f32[16]{0}) all-gather-start(%p), "
       "replica_groups={{0,1}}, dimensions={0}")]),
    ("all_gather_element_type",
     "ROOT %ag = s32[16]{0} all-gather(%p), replica_groups={{0,1}}, dimensions={0}",
     [("ag", 9, 8, "shapes", "Expected instruction to have shape equal to f32[16], actual "
       "shape is s32[16]:\n%ag = s32[16]{0} all-gather(%p), replica_groups={{0,1}}, "
       "dimensions={0}")]),
    ("permute_done_shape", f"{CPS}\nROOT %cpd = f32[4]{{0}} collective-permute-done(%cps)",
     [("cpd", 10, 8, "shapes", "Expected instruction to have shape equal to f32[8], actual "
       "shape is f32[4]:\n%cpd = f32[4]{0} collective-permute-done(%cps)")]),
    ("permute_start_with_context_ok",
     "%cps = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(%p), "
     "source_target_pairs={{0,1},{1,0}}\nROOT %cpd = f32[8]{0} collective-permute-done(%cps)",
     []),
    ("permute_start_shape",
     "%cps = (f32[8]{0}, f32[4]{0}) collective-permute-start(%p), "
     "source_target_pairs={{0,1},{1,0}}\nROOT %cpd = f32[4]{0} collective-permute-done(%cps)",
     [("cps", 9, 3, "shapes", "Expected instruction to have shape equal to (f32[8], f32[8]), "
       "actual shape is (f32[8], f32[4]):\n%cps = (f32[8]{0}, f32[4]{0}) "
       "collective-permute-start(%p), source_target_pairs={{0,1},{1,0}}")]),
    ("permute_shape", "ROOT %cp = f32[4]{0} collective-permute(%p), source_target_pairs={{0,1}}",
     [("cp", 9, 8, "shapes", "Expected instruction to have shape equal to f32[8], actual "
       "shape is f32[4]:\n%cp = f32[4]{0} collective-permute(%p), source_target_pairs={{0,1}}")]),
    ("permute_done_of_parameter",
     "ROOT %cpd = f32[8]{0} collective-permute-done(%p)",
     [("cpd", 9, 8, "async_pairs", "The operand of a collective-permute-done instruction needs "
       "to be collective-permute-start, found parameter")]),
    ("all_to_all_ok", "ROOT %a = f32[8]{0} all-to-all(%p), replica_groups={{0,1}}, "
     "dimensions={0}", []),
    ("all_to_all_split_shape",
     "ROOT %a = f32[4]{0} all-to-all(%p), replica_groups={{0,1}}, dimensions={0}",
     [("a", 9, 8, "shapes", "Expected instruction to have shape equal to f32[8], actual shape "
       "is f32[4]:\n%a = f32[4]{0} all-to-all(%p), replica_groups={{0,1}}, dimensions={0}")]),
    ("all_to_all_operand_count",
     "ROOT %a = (f32[8]{0}, f32[8]{0}, f32[8]{0}) all-to-all(%p, %p, %p), replica_groups={{0,1}}",
     [("a", 9, 8, "shapes", "hlo->operand_count() == split_count")]),
    ("all_to_all_split_operand_count",
     "ROOT %a = f32[8]{0} all-to-all(%p, %p), replica_groups={{0,1}}, dimensions={0}",
     [("a", 9, 8, "shapes", "hlo->operand_count() == 1")]),
    ("all_to_all_tuple_ok",
     "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %p), replica_groups={{0,1}}", []),
]


@pytest.mark.parametrize("body,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_result_shapes(body: str, expected: list[tuple[str, int, int, str, str]]) -> None:
    assert found(body) == expected


def test_all_to_all_split_not_divisible() -> None:
    body = "ROOT %a = f32[7]{0} all-to-all(%q), replica_groups={{0,1}}, dimensions={0}"
    assert found(body, params="%q = f32[7]{0} parameter(0)") == [
        ("a", 9, 8, "shapes", "AllToAll split dimension size 7 must be dividable by split_count "
         "2.\n\t, for instruction %a = f32[7]{0} all-to-all(%q), replica_groups={{0,1}}, "
         "dimensions={0}")]


def test_all_to_all_tuple_operands_differ() -> None:
    body = "ROOT %a = (f32[8]{0}, f32[4]{0}) all-to-all(%p, %q), replica_groups={{0,1}}"
    params = "%p = f32[8]{0} parameter(0)\n%q = f32[4]{0} parameter(1)"
    assert found(body, params=params) == [
        ("a", 10, 8, "shapes", "HLO all-to-all has operands with different shapes: the 0th "
         "operand shape f32[8], but the 1th operand has shape f32[4].\n\t, for instruction "
         "%a = (f32[8]{0}, f32[4]{0}) all-to-all(%p, %q), replica_groups={{0,1}}")]


ASYNC = """HloModule m, replica_count=2
{sum}
%wrapped (p0: f32[8]) -> f32[8] {{
  %p0 = f32[8]{{0}} parameter(0)
  ROOT %ar = f32[8]{{0}} all-reduce(%p0), replica_groups={{{{0,1}}}}, to_apply=%add
}}
ENTRY %main (p: f32[8]) -> {done} {{
  %p = f32[8]{{0}} parameter(0)
  %as = {start} async-start(%p), calls=%wrapped
  ROOT %ad = {done} async-done(%as)
}}
"""


def async_found(start: str, done: str) -> list[tuple[str, int, int, str]]:
    module = hlo.parse_module(ASYNC.format(sum=SUM, start=start, done=done))
    return [(f.instruction, f.line, f.column, f.message) for f in hlo.verify(module)]


def test_async_wrapper_shapes_ok() -> None:
    assert async_found("((f32[8]{0}), f32[8]{0}, u32[])", "f32[8]{0}") == []


def test_async_start_root_shape_differs() -> None:
    assert async_found("((f32[8]{0}), f32[4]{0}, u32[])", "f32[4]{0}") == [
        ("as", 13, 3, "The async-start expects the async shape at index {1} to match the async "
         "computation root shape (f32[4]{0} vs f32[8]{0})."),
        ("ad", 14, 8, "The async-done expects the async shape at index {1} to match the async "
         "computation root shape (f32[4]{0} vs f32[8]{0}).")]


def test_async_start_parameter_shape_differs() -> None:
    assert async_found("((f32[4]), f32[8], u32[])", "f32[8]")[0] == (
        "as", 13, 3, "The async-start expects the async shape at index {0} to match async "
        "computation parameter shape ((f32[4]{0}) vs (f32[8]{0})).")


def test_async_start_not_a_tuple() -> None:
    # XLA's parser refuses it before any verifier runs (jaxlib 0.10.2), at the token after
    # the operands.
    with pytest.raises(mt.HloParseError) as info:
        async_found("f32[8]{0}", "f32[8]{0}")
    assert (info.value.line, info.value.column, info.value.message) == (
        13, 34, "AsyncStart expects the op shape to be in the form of ((async-operands), "
        "async-outputs, state).")


def test_async_done_output_differs() -> None:
    assert async_found("((f32[8]{0}), f32[8]{0}, u32[])", "f32[4]{0}") == [
        ("ad", 14, 8, "The async-done expects the shape of output to match the async shape at "
         "index {1} (f32[4]{0} vs f32[8]{0}).")]


@pytest.mark.parametrize("body,expected", [
    (f"{ARS}\n%t = (f32[8]{{0}}) tuple(%ars)\nROOT %ard = f32[8]{{0}} all-reduce-done(%t)",
     "The operand of a all-reduce-done instruction needs to be all-reduce-start, found tuple"),
    ("ROOT %agd = f32[8]{0} all-gather-done(%p)",
     None),  # XLA has no pairing rule for all-gather; its shape check needs a tuple operand
    (f"{ARS}\nROOT %ard = f32[4]{{0}} all-reduce-done(%ars)",
     "Expected instruction to have shape equal to f32[8], actual shape is f32[4]:\n"
     "%ard = f32[4]{0} all-reduce-done(%ars)"),
])
def test_dones_are_found_through_the_structural_model(body: str, expected: str | None) -> None:
    # A reader may leave a -done whose operand is no start out of module.collectives; the
    # verifier reads -done instructions from module.computations, so it checks them anyway.
    module = hlo.parse_module(module_text(body, r=2))
    module.collectives[:] = [c for c in module.collectives if not c.opcode.endswith("-done")]
    found = [f.message for f in hlo.verify(module) if f.opcode.endswith("-done")]
    assert found == ([] if expected is None else [expected])


def test_collective_broadcast_and_ragged_all_to_all_results() -> None:
    broadcast = "ROOT %cb = f32[4]{0} collective-broadcast(%p), replica_groups={{0,1}}"
    assert found(broadcast) == [
        ("cb", 9, 8, "shapes", "Expected instruction to have shape equal to f32[8], actual "
         "shape is f32[4]:\n%cb = f32[4]{0} collective-broadcast(%p), replica_groups={{0,1}}")]
    params = ("%p = f32[8]{0} parameter(0)\n%o = f32[16]{0} parameter(1)\n"
              "%a = s64[2]{0} parameter(2)\n%b = s64[2]{0} parameter(3)\n"
              "%c = s64[2]{0} parameter(4)\n%d = s64[2]{0} parameter(5)")
    ragged = ("ROOT %r = f32[{n}]{{0}} ragged-all-to-all(%p, %o, %a, %b, %c, %d), "
              "replica_groups={{{{0,1}}}}")
    assert found(ragged.format(n=16), params=params) == []
    ((name, _, _, check, message),) = found(ragged.format(n=8), params=params)
    assert (name, check) == ("r", "shapes")
    assert message.startswith("Expected instruction to have shape equal to f32[16], actual "
                              "shape is f32[8]:\n%r = f32[8]{0} ragged-all-to-all(")


def test_dynamic_dimensions_and_layouts_do_not_take_part() -> None:
    # ShapeUtil::Compatible ignores layouts and which dimensions are dynamic.
    assert found("ROOT %ar = f32[<=8]{0} all-reduce(%p), replica_groups={{0,1}}, "
                 "to_apply=%add") == []
    assert found("ROOT %ar = f32[8,2]{0,1} all-reduce(%p), replica_groups={{0,1}}, "
                 "to_apply=%add", params="%p = f32[8,2]{1,0} parameter(0)") == []


def test_all_to_all_tuple_operands_compare_layouts_and_dynamic_dimensions() -> None:
    body = "ROOT %a = (f32[8]{0}, f32[8]{0}) all-to-all(%p, %q), replica_groups={{0,1}}"
    same = "%p = f32[8]{0} parameter(0)\n%q = f32[8] parameter(1)"  # default layout {0}
    assert found(body, params=same) == []
    dynamic = "%p = f32[8]{0} parameter(0)\n%q = f32[<=8]{0} parameter(1)"
    ((_, _, _, _, message),) = found(body, params=dynamic)
    assert message.startswith("HLO all-to-all has operands with different shapes: the 0th "
                              "operand shape f32[8], but the 1th operand has shape f32[<=8].")


def test_a_done_written_over_two_lines_is_quoted_whole() -> None:
    from meshtopo.hlo._finding import SourceText

    text = "a\n  %d = f32[4]{0} all-reduce-done(%s)\n      , metadata={op_name=\"x\"}\n}\n"
    assert SourceText(text).instruction_text(2) == (
        '%d = f32[4]{0} all-reduce-done(%s), metadata={op_name="x"}')
