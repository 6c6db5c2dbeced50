"""Texts XLA's own parser (jaxlib's ``hlo_module_from_text``) refuses are refused here at the
line and column XLA reports, and texts it accepts are read."""

from __future__ import annotations

import io

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._text import ADD
from ._xla_agreement import (
    agrees_in_xla_words,
    agrees_with_xla,
    module_text,
    xla_message,
    xla_position,
)

pytestmark = pytest.mark.jax


CASES = {
    "type name as a name": module_text("%c64 = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%c64)"),
    "pred as the root's name": module_text("ROOT %pred = f32[8]{0} copy(%p)"),
    "bare type name": module_text("f32 = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)"),
    "tuple is a name": module_text("%tuple = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%tuple)"),
    "s3 is a name": module_text("%s3 = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%s3)"),
    "undefined operand": module_text("ROOT %r = f32[8]{0} add(%p, %q)"),
    "undefined operand on the next line": module_text("ROOT %r = f32[8]{0} add(%p,", "   %q)"),
    "undefined operand with its shape": module_text(
        "ROOT %r = f32[8]{0} add(f32[8]{0} %p, f32[8]{0} q)"),
    "undefined callee": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%nothere"),
    "control predecessor defined before": module_text(
        "%a = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p), control-predecessors={%a}"),
    "control predecessor undefined": module_text(
        "ROOT %r = f32[8]{0} copy(%p), control-predecessors={%zz}"),
    "control predecessor defined later": module_text(
        "%a = f32[8]{0} copy(%p), control-predecessors={%r}", "ROOT %r = f32[8]{0} copy(%a)"),
    "control predecessor itself": module_text(
        "ROOT %r = f32[8]{0} copy(%p), control-predecessors={%r}"),
    "second control predecessor undefined, across lines": module_text(
        "%a = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p), control-predecessors={%a,",
        "    /* later */ %b  }"),
    "callee after a comment": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=/* c */ %add"),
    "control predecessor after a comment": module_text(
        "%a = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p), control-predecessors={/* c */%a}"),
    "control predecessor undefined, before a token no list takes": module_text(
        "ROOT %r = f32[8]{0} copy(%p), control-predecessors={cr[1,4]<=[4](s}}"),
    "control predecessor defined, before a token no list takes": module_text(
        "%a = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p), control-predecessors={a b}"),
    "control predecessor naming a computation": module_text(
        "ROOT %r = f32[8]{0} copy(%p), control-predecessors={%add}"),
    "a keyword as a name": module_text("true = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)"),
    "a keyword with % as a name": module_text("%ENTRY = f32[8]{0} copy(%p)",
                                          "ROOT %r = f32[8]{0} copy(%ENTRY)"),
    "ROOT as the name": module_text("ROOT = f32[8]{0} copy(%p)"),
    "a name right before =": module_text("b= f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(b)"),
    "a name with % right before =": module_text("%b= f32[8]{0} copy(%p)",
                                            "ROOT %r = f32[8]{0} copy(%b)"),
    "parameter of a name": module_text("%q = f32[8]{0} parameter(a)", "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter of nothing": module_text("%q = f32[8]{0} parameter()", "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter of two numbers": module_text("%q = f32[8]{0} parameter(1, 2)",
                                        "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter below 0": module_text("%q = f32[8]{0} parameter(-1)", "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter number with a comment": module_text("%q = f32[8]{0} parameter(/* one */ 1)",
                                               "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter number twice": module_text("%q = f32[8]{0} parameter( 0 )",
                                      "ROOT %r = f32[8]{0} copy(%p)"),
    # XLA adds a parameter by its number before it adds it by its name; one written as an
    # operand, as it reads it (a number repeated there is no operand it can read).
    "parameter line written twice": module_text("%p = f32[8]{0} parameter(0)",
                                                "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter name twice, another number": module_text("%p = f32[8]{0} parameter(1)",
                                                        "ROOT %r = f32[8]{0} copy(%p)"),
    "parameter number twice, as the root": module_text("ROOT %p = f32[8]{0} parameter(0)"),
    "parameter number twice, in an operand": module_text(
        "ROOT %r = f32[8]{0} add(%p, f32[8]{0} parameter(0))"),
    "parameter number twice, in two operands": module_text(
        "ROOT %r = f32[8]{0} add(f32[8]{0} parameter(1), f32[8]{0} parameter(1))"),
    "a computation with no instruction": module_text("ROOT %r = f32[8]{0} copy(%p)")
    + "%none () -> f32[8] {\n}\n",
    "a computation with no instruction on one line": module_text("ROOT %r = f32[8]{0} copy(%p)")
    + "%none () -> f32[8] { }\n",
    "two ENTRY computations": module_text("ROOT %r = f32[8]{0} copy(%p)")
    + "\n  ENTRY %again {\n  ROOT %p = f32[8]{0} parameter(0)\n}\n",
    "defined callee": module_text("ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=%add"),
    "attributes continued on the next line": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), to_apply=%add, replica_groups={}",
        "    ,channel_id=1, use_global_device_ids=true"),
    "a comment between tokens": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), /* c */ to_apply=%add, replica_groups={}"),
    "prose in a computation": module_text("this is not an instruction", "ROOT %r = f32[8]{0} copy(%p)"),
    "two roots": module_text("ROOT %a = f32[8]{0} copy(%p)", "ROOT %r = f32[8]{0} copy(%a)"),
    "junk after the operands": module_text("ROOT %r = f32[8]{0} copy(%p) junk"),
    "duplicate attribute": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), to_apply=%add, to_apply=%add"),
    "collective-broadcast without groups": module_text(
        "ROOT %r = f32[8]{0} collective-broadcast(%p)"),
    "a constant named like an operand": module_text(
        "%c = f32[] constant(inf)", "ROOT %r = f32[8]{0} broadcast(%c), dimensions={}"),
    # XLA's lexer reads ``name=`` as one token: nothing between the name and '=', anything
    # after it.
    "a space before an attribute's '='": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups ={}, to_apply=%add"),
    "a comment before an attribute's '='": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups/* c */={}, to_apply=%add"),
    "a line break before an attribute's '='": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), channel_id", "    =1, to_apply=%add"),
    "an attribute name without '='": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups, to_apply=%add"),
    "white space and comments after an attribute's '='": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), channel_id= /* c */ 1, replica_groups=",
        "    {}, to_apply=%add"),
    "a misspelt collective": module_text(
        "ROOT %r = f32[8]{0} all-duce(%p), replica_groups={}, to_apply=%add"),
    "a capitalised opcode": module_text("ROOT %r = f32[8]{0} All-reduce(%p), to_apply=%add"),
    "a collective's attributes on a copy": module_text(
        "ROOT %r = f32[8]{0} copy(%p), channel_id=2, replica_groups={}"),
    "an attribute fusion does not take": module_text(
        "ROOT %r = f32[8]{0} fusion(%p), kind=kLoop, calls=%add, dimensions={0}"),
    "a conditional's branches in both forms": module_text(
        "%i = s32[] constant(0)",
        "ROOT %r = f32[8]{0} conditional(%i, %p), branch_computations={%add}, "
        "true_computation=%add"),
    "a tuple root of other shapes": (
        "HloModule m\n%c (p: f32[8]) -> (f32[8], s32[2]) {\n  %p = f32[8]{0} parameter(0)\n"
        "  %i = s32[] constant(0)\n  ROOT %t = (f32[8]{0}, s32[]) tuple(%p, %i)\n}\n\n"
        "ENTRY %main (p: f32[8]) -> f32[8] {\n  ROOT %p = f32[8]{0} parameter(0)\n}\n"),
    "duplicate name": module_text("%a = f32[8]{0} copy(%p)", "%a = f32[8]{0} copy(%p)",
                              "ROOT %r = f32[8]{0} copy(%a)"),
    "a root of another shape than the signature's": module_text("ROOT %r = f32[16]{0} copy(%p)"),
    "a root of another layout than the signature's": module_text("ROOT %r = f32[8]{1} copy(%p)"),
    "a dynamic root": module_text("ROOT %r = f32[<=8]{0} copy(%p)"),
    "a root of another element type": module_text("ROOT %r = s32[8]{0} convert(%p)"),
    # The decoder's refusals, where XLA's parser is when it makes them.
    "a required attribute missing": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}"),
    "a required attribute missing, space before the list": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p)  , replica_groups={}"),
    "a required attribute missing, the list on the next line": module_text(
        "ROOT %r = f32[8]{0} all-gather(%p)", "    /* c */ , replica_groups={}"),
    "pairs missing": module_text("ROOT %r = f32[8]{0} collective-permute(%p), channel_id=1"),
    "global ids without a channel": module_text(
        "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, use_global_device_ids=true, "
        "to_apply=%add"),
    "global ids without a channel, a line before another": module_text(
        "%r = f32[8]{0} reduce-scatter( %p ), replica_groups={}, dimensions={0}, "
        "use_global_device_ids=true, to_apply=%add", "ROOT %s = f32[8]{0} copy(%r)"),
}
# An instruction's metadata, read as XLA reads OpMetadata (the same message, too).
METADATA = {
    "metadata with an unknown key": '{op_nam="x"}',
    "metadata with a key twice": '{op_name="a" op_name="b"}',
    "metadata with a number for a string": "{op_name=3}",
    "metadata with a string for a number": '{source_line="3"}',
    "metadata with a decimal": "{source_line=3.5}",
    "metadata past int32": "{stack_frame_id=2147483648}",
    "metadata past int64": "{source_line=9223372036854775808}",
    "metadata of uint64's bits": "{source_line=18446744073709551615}",  # XLA reads it as -1
    "metadata past uint64": "{source_line=18446744073709551616}",
    "metadata below int64": "{source_line=-9223372036854775809}",
    "metadata with a profile type of other high bits": "{profile_type={4294967297}}",
    "metadata of 5,000 digits": "{source_line=" + "1" * 5000 + "}",
    "metadata at the int32 limits": "{source_line=2147483647 source_column=-2147483648}",
    "metadata with a key alone": '{op_type="x" op_name}',
    "metadata with tokens run together": '{source_line=3op_type="y"}',
    "metadata with a leading comma": '{,op_name="x"}',
    "metadata with a trailing comma": '{op_name="x",}',
    "metadata over two lines with a comment": '{op_name="x" /* c */\n    source_line=3}',
    "metadata with profile types": "{profile_type={0,3}}",
    "metadata with an unknown profile type": "{profile_type={4}}",
    "metadata with profile types not braced": "{profile_type=1}",
    "metadata that is no list": "3",
    "metadata with '//' in its strings": '{op_name="http://x" source_file="//third_party/a.py"}',
    "metadata with a comment's opener and closer in two strings": '{op_name="a/*" op_tpe="*/"}',
    "metadata of every kind": '{op_type="t" op_name="n" source_file="f.py" source_line=1 '
                              'source_end_line=2 source_column=3 source_end_column=4 '
                              'deduplicated_name="d" scheduling_name="s" stack_frame_id=1 '
                              'metadata_payload="p"}',
}
for _name, _value in METADATA.items():  # last, and on a line the fast path reads
    CASES[_name] = module_text(f"ROOT %r = f32[8]{{0}} copy(%p), metadata={_value}")
    CASES[_name + ", not the root"] = module_text(
        f"%c = f32[8]{{0}} copy(%p), metadata={_value}", "ROOT %r = f32[8]{0} copy(%c)")


# Instructions written without a shape: XLA infers it where the opcode allows.
CASES["shape left out where XLA infers it"] = module_text(
    "%t = tuple(%p, %p)", "%g = get-tuple-element(%t), index=1", "ROOT %r = negate(%g)")
CASES["shape left out of a convert"] = module_text("ROOT %r = convert(%p)")
CASES["shape left out of an all-reduce"] = module_text(
    "ROOT %r = all-reduce(%p), replica_groups={}, to_apply=%add")
CASES["shape left out, unknown opcode"] = module_text("ROOT %r = fancy(%p)")
CASES["shape left out, root of another shape"] = module_text("ROOT %r = tuple(%p)")
# XLA's shorthand for async wrappers: <op>-start, <op>-update, <op>-done.
_START = "%s = ((f32[8]{0}), f32[8]{0}) negate-start(%p)"
for _name, _lines in (
    ("a start and its done", (_START, "ROOT %d = f32[8]{0} negate-done(%s)")),
    ("a start, update and done", (_START, "%u = ((f32[8]{0}), f32[8]{0}) negate-update(%s)",
                                  "ROOT %d = f32[8]{0} negate-done(%u)")),
    ("a done by its generic name", (_START, "ROOT %d = f32[8]{0} async-done(%s)")),
    ("an unknown op", ("ROOT %s = ((f32[8]{0}), f32[8]{0}) fancy-start(%p)",)),
    ("a start of an array shape", ("ROOT %s = f32[8]{0} negate-start(%p)",)),
    ("a start of a flat tuple", ("ROOT %s = (f32[8]{0}, f32[8]{0}) negate-start(%p), "
                                 "metadata={}",)),
    ("a start without its shape", ("ROOT %s = negate-start(%p)",)),
    ("a done of another op", (_START, "ROOT %d = f32[8]{0} abs-done(%s)")),
    ("a done of no start", ("ROOT %d = f32[8]{0} negate-done(%p)",)),
    ("a done of two operands", (_START, "ROOT %d = f32[8]{0} negate-done(%s, %s)")),
    ("a start naming its computation", (_START + ", calls=%add",)),
    ("a done with a channel", (_START, "ROOT %d = f32[8]{0} negate-done(%s), channel_id=1")),
    ("a done on another thread", (_START, 'ROOT %d = f32[8]{0} negate-done(%s), '
                                          'async_execution_thread="t"')),
    ("an update on another thread", (
        _START + ', async_execution_thread="t"',
        '%u = ((f32[8]{0}), f32[8]{0}) negate-update(%s), async_execution_thread="main"',
        "ROOT %d = f32[8]{0} negate-done(%u)")),
    ("an update of another shape", (
        _START, "%u = ((f32[8]{0}), f32[4]{0}) negate-update(%s)",
        "ROOT %d = f32[8]{0} negate-done(%u)")),
    ("a done of another computation", (
        "%s = ((f32[], f32[]), f32[]) async-start(%x, %x), calls=%add",
        "%d = f32[] async-done(%s), calls=%add2", "ROOT %r = f32[8]{0} copy(%p)")),
    ("a done of its computation", (
        "%s = ((f32[], f32[]), f32[]) async-start(%x, %x), calls=%add",
        "%d = f32[] async-done(%s), calls=%add", "ROOT %r = f32[8]{0} copy(%p)")),
    ("a done of a computation not defined", (
        "%s = ((f32[], f32[]), f32[]) async-start(%x, %x), calls=%add",
        "%d = f32[] async-done(%s), calls=%nothere", "ROOT %r = f32[8]{0} copy(%p)")),
    ("a done on its start's thread", (
        _START + ', async_execution_thread="t"',
        'ROOT %d = f32[8]{0} negate-done(%s), async_execution_thread="t"')),
    ("a reduce-scatter", ("%s = ((f32[8]{0}), f32[4]{0}) reduce-scatter-start(%p), "
                          "replica_groups={{0,1}}, dimensions={0}, to_apply=%add, channel_id=2",
                          "ROOT %d = f32[4]{0} reduce-scatter-done(%s)")),
    ("a reduce-scatter without to_apply", (
        "ROOT %s = ((f32[8]{0}), f32[4]{0}) reduce-scatter-start(%p), dimensions={0}",)),
    ("an all-to-all with calls", (
        "ROOT %s = ((f32[8]{0}), f32[8]{0}) all-to-all-start(%p), calls=%add",)),
):
    CASES[f"async shorthand, {_name}"] = module_text(*_lines).replace(
        "ENTRY", ADD.replace("%add", "%add2") + "ENTRY").replace(
        "{0} parameter(0)\n", "{0} parameter(0)\n  %x = f32[] constant(1)\n", 1)
# Attributes after a computation's closing brace: execution_thread alone.
for _name, _tail in (("its thread", ', execution_thread="t"'), ("another", ', foo="x"'),
                     ("a thread not a string", ", execution_thread=1"),
                     ("its thread twice", ', execution_thread="a", execution_thread="b"'),
                     ("a comma alone", ","), ("its thread on the next line",
                                              '\n  , /* c */ execution_thread= "t"'),
                     ("its thread in single quotes", ", execution_thread='t\\'s'"),
                     ("its thread unterminated", ', execution_thread="t'),
                     ("its thread unterminated in single quotes", ", execution_thread='t\"")):
    CASES[f"computation attributes, {_name}"] = (
        "HloModule m\n%c {\n  ROOT %p = f32[] parameter(0)\n}" + _tail
        + "\nENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n")
# Operands written as instructions (no attributes): XLA reads and names them.
for _name, _line in (
    ("with shapes", "ROOT %r = f32[8]{0} add(f32[8] parameter(1), add(%p, f32[8] constant("
                    "{1,2,3,4,5,6,7,8})))"),
    ("inferred", "ROOT %r = add(negate(%p), negate(negate(%p)))"),
    ("of two operands for one", "ROOT %r = f32[8]{0} add(%p, negate(%p, %p))"),
    ("of none for one, with its shape", "ROOT %r = f32[8]{0} add(%p, f32[8] negate())"),
    ("across lines", "ROOT %r = f32[8]{0} add(\n    f32[8] copy(%p) ,\n    %p)"),
    ("with an attribute", "ROOT %r = f32[8]{0} add(%p, negate(%p), sharding={replicated})"),
    ("that cannot infer its shape", "ROOT %r = f32[8]{0} add(%p, constant(1))"),
    ("of an unknown operand", "ROOT %r = f32[8]{0} add(%p, f32[8] copy(%q))"),
    ("a tuple", "ROOT %r = get-tuple-element(\n    (f32[8], f32[8]) tuple(f32[8] "
                "parameter(1), %p)\n  ), index=0"),
    # a shape alone is no operand XLA reads: it reads on from the ',' and leaves it out
    ("a shape alone", "ROOT %r = f32[8]{0} add(%p, f32[8], %p)"),
    ("a tuple shape alone", "ROOT %r = f32[8]{0} add(%p, (f32[8], s32[]), %p)"),
    ("a shape alone, last", "ROOT %r = f32[8]{0} add(%p, f32[8])"),
    ("a shape alone, with a layout in error", "ROOT %r = f32[8]{0} add(%p, f32[8]{}, %p)"),
    ("a shape against its name", "ROOT %r = f32[8]{0} add(f32[8]{0}%p, %p)"),
    ("a shape alone on a collective", "ROOT %r = f32[8]{0} all-reduce(%p, f32[8]), "
                                      "replica_groups={}, to_apply=%add"),
    ("nothing first", "ROOT %r = f32[8]{0} add(,%p)"),
    ("nothing last", "ROOT %r = f32[8]{0} add(%p,)"),
    ("nothing between", "ROOT %r = f32[8]{0} add(%p,,%p)"),
    ("nothing on lines of its own", "ROOT %r = f32[8]{0} add(%p,\n  ,%p)"),
    ("nothing first on a collective", "ROOT %r = f32[8]{0} all-reduce(,%p), "
                                      "replica_groups={}, to_apply=%add"),
    ("two names without a comma", "ROOT %r = f32[8]{0} add(%p %p)"),
    # What XLA records in a nested instruction comes after its error for the operand, or is
    # dropped with the instruction read.
    ("nothing first in a nested one", "ROOT %r = f32[8]{0} add(%p, add(, %p))"),
    ("nothing first two deep", "ROOT %r = (f32[8], f32[8]) tuple(%p, negate(add(, %p)))"),
    ("nothing first in a nested one, read", "ROOT %r = (f32[8], (f32[8])) tuple(%p, tuple(, %p))"),
):
    CASES[f"nested operand, {_name}"] = module_text(_line)
# Lexical rules: strings span lines; a '//' comment ends at a line feed or a carriage return.
CASES["string across lines"] = module_text('ROOT %r = f32[8]{0} copy(%p), backend_config="{\n  a: 1}"')
CASES["comments ended by carriage returns"] = (
    "HloModule m // c\r// d\rENTRY %e {\r  ROOT %p = f32[] parameter(0) // e\r}\r")

# A custom call's literal: a shape and its value.
for _name, _value in (("a scalar", "f32[] 0.1"), ("an array", "f32[2]{0} {1, 2}"),
                      ("an array across lines", "f32[2]{0}\n   {1, 2}, api_version=API_VERSION_ORIGINAL")):
    CASES[f"custom-call literal, {_name}"] = module_text(
        f'ROOT %r = f32[8]{{0}} custom-call(%p), custom_call_target="t", literal={_value}')

# Computations written inline as attribute values: XLA names them _, _.1, ...
_SUM = "{\n    %x = f32[] parameter(0)\n    %y = f32[] parameter(1)\n    ROOT %s = add(%x, %y)\n  }"
for _name, _lines in (
    ("a reduction", ("ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply=" + _SUM,)),
    ("nested", ("ROOT %r = f32[8]{0} call(%p), to_apply={\n  %a = f32[8]{0} parameter(0)\n"
                "  ROOT %b = f32[8]{0} all-reduce(%a), replica_groups={}, to_apply=" + _SUM
                + "\n  }",)),
    ("a list", ("%i = s32[] constant(0)", "ROOT %r = f32[8]{0} conditional(%i, %p, %p), "
                "branch_computations={\n{\n  ROOT %a = f32[8]{0} parameter(0)\n},\n{\n  "
                "ROOT %b = f32[8]{0} parameter(0)\n}}")),
    ("of another shape", ("ROOT %r = f32[8]{0} call(%p), to_apply={\n  %a = f32[8]{0} "
                          "parameter(0)\n  ROOT %b = f32[4]{0} slice(%a), slice={[0:4]}\n}",)),
):
    CASES[f"inline computation, {_name}"] = module_text(*_lines)
CASES["undefined operand, in a computation written inline"] = module_text(  # position only
    "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply="
    + _SUM.replace("(%x, %y)", "(%x, %z)"))

# A text that is one instruction: XLA's module _, its operands' definitions made parameters.
for _name, _text in (
    ("named", "%m = f32[8]{0} multiply(f32[8]{0} %a, f32[8]{0} %b)"),
    ("unnamed operands", "f32[8]{0} multiply(f32[8]{0}, f32[8]{0})"),
    ("an operand without a shape", "m = multiply(x, x)"),
    ("a second operand without a shape", "m = multiply(f32[2] x, y)"),
    ("text after it", "m = f32[2] multiply(f32[2] x, f32[2] y) junk"),
    ("a collective", "%ar = f32[8] all-reduce(f32[8] %x), replica_groups={{0,1}}, to_apply={\n"
                     "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = add(a, b)\n}"),
    ("a nested operand", "ROOT r = add(f32[8] negate(f32[8] x), f32[8] x)"),
    ("a parameter replicated too often", "p = (f32[3], f32[]) parameter(0), "
                                         "parameter_replication={true,false,true}"),
    ("a parameter replicated", "p = (f32[3], f32[]) parameter(0), "
                               "parameter_replication={true,false}"),
    ("an unnamed operand before a brace", "m = f32[2] multiply(f32[2] x, f32[2]{,1} y)"),
    ("an operand of two names", "m = f32[2] add(f32[2] x y, f32[2] z)"),
):
    CASES[f"single instruction, {_name}"] = "\n" + _text  # line 1: XLA counts columns from 0

# A conditional's attributes follow its predicate's type: pred, or an s32 branch index; any
# other predicate is refused.
for _type, _value in (("pred", "false"), ("s32", "0"), ("f32", "0"), ("s32[2]{0}", "{0, 1}")):
    for _attributes in ("true_computation=%add, false_computation=%add",
                        "branch_computations={%add, %add}"):
        CASES[f"conditional on {_type}, {_attributes.split('=')[0]}"] = module_text(
            f"%i = {_type if '[' in _type else _type + '[]'} constant({_value})",
            "%z = f32[] constant(0)",
            f"%c = f32[] conditional(%i, %z, %z), {_attributes}", "ROOT %r = f32[8]{0} copy(%p)")

# Attributes an opcode requires (_opcodes.REQUIRED_ATTRIBUTES).
for _name, _line in (("none written", "ROOT %r = f32[8]{0} broadcast(%p)"),
                     ("others written", "ROOT %r = f32[8]{0} broadcast(%p), metadata={}"),
                     ("across lines", "ROOT %r = f32[8]{0} broadcast(%p)\n  , sharding={replicated}"),
                     ("of a nested operand", "ROOT %r = sqrt(f32[8] broadcast(%p))"),
                     ("by a scalar's broadcast", "ROOT %r = sqrt(f32[8] broadcast(f32[] %x))"),
                     ("by a scalar's broadcast, written", "ROOT %r = f32[8]{0} broadcast(%x)"),
                     ("of an async shorthand", "ROOT %r = ((f32[8]{0}), f32[4]{0}) "
                                               "reduce-scatter-start(%p), dimensions={0}"),
                     ("of a collective", "ROOT %r = f32[8]{0} all-reduce(%p)")):
    CASES[f"required attribute missing, {_name}"] = module_text(
        "%x = f32[] constant(0)", _line)

# result_accuracy, as XLA reads it (_accuracy).
for _value in ("{mode=highest}", "{mode=Default}", "{tolerance={atol=1,rtol=2e-3, ulps=3}}",
               "{tolerance={}}", "{mode=high}", "{0.5}", "{foo=10.0}", "highest", "{}",
               "{mode=highest, tolerance={atol=0.1}}", "{ mode = highest }",
               "{tolerance={foo=1}}", "{tolerance={atol=x}}", "{\n   mode=tolerance}",
               "{mode=55}", "{mode=}", '{mode="x"}', "{tolerance={atol=1 rtol=2}}",
               "{tolerance={atol=inf}}", "{tolerance=x}", "{tolerance={atol=1,}}",
               "{tolerance={,}}", "{mode=highest x}", "{tolerance={atol=, ulps=2}}",
               "{tolerance={rtol=}}"):
    for _where in ("", ", not the root"):
        _lines = [f"%e = f32[8]{{0}} exponential(%p), result_accuracy={_value}",
                  "ROOT %r = f32[8]{0} copy(%e)"]
        CASES[f"result_accuracy {_value}{_where}"] = module_text(
            *(_lines if _where else [_lines[0].replace("%e =", "ROOT %e =")]))
# A number XLA's lexer ends before a '.' (which starts no number): the '.' is no literal token.
for _literal in ("{{2.02.0}, {2.0, 2.0}}", "{{2.02.0 ,}, {2.0, 2.0}}", "{{.5, 1}, {1, 1}}",
                 "{{-.5, 1}, {1, 1}}", "{{1., 1}, {1, 1.e1}}"):
    CASES[f"literal {_literal}"] = module_text(
        f"%c = f32[2,2] constant({_literal})", "ROOT %r = f32[8]{0} copy(%p)")

# A computation is looked up as its name is read: before what is wrong after it.
for _name, _line in (
        ("in a list, before a syntax error", "%b = s32[] constant(0)\n  ROOT %r = f32[8]{0} "
         "conditional(%b, %p, %p), branch_computations={ff ,, %add}"),
        ("before a later attribute's error", "ROOT %r = f32[8]{0} call(%p), to_apply=nope, "
         "backend_config=, x=1"),
        ("before a later value's error", "ROOT %r = f32[] reduce(%p, %p), to_apply=nope, "
         "dimensions={x}")):
    CASES[f"computation that does not exist, {_name}"] = module_text(_line)

# A tolerance without its number is recorded and read past: reported if the text is refused.
CASES["result_accuracy, a number left out, an error later"] = module_text(
    "%e = f32[8]{0} exponential(%p), result_accuracy={tolerance={atol=, ulps=2}}",
    "ROOT %r = f32[8]{0} negate(%nope)")

for _pairs in ("{{0,1}{1,0}}", "{{0,1},,{1,0}}", "{,{0,1}}", "{{0,1},}", "{{0,1},1}", "{1}",
               "{ {0,1} , {1,0} }", "{{0,1},\n   {1,0}}", "{}"):
    CASES[f"pairs punctuation {_pairs}"] = module_text(
        f"ROOT %r = f32[8]{{0}} collective-permute(%p), channel_id=1, "
        f"source_target_pairs={_pairs}")

for _shape, _literal in (
        ("u4[]", "16"), ("u4[]", "-1"), ("s4[]", "-9"), ("s32[]", "2147483648"), ("u64[]", "-1"),
        ("u64[]", "18446744073709551615"), ("u8[]", "18446744073709551615"),
        ("f8e4m3fn[]", "464"), ("f8e4m3fn[]", "465"), ("bf16[]", "3.39e38"),
        ("f16[]", "-65520"), ("f16[]", "65519"), ("bf16[]", "1e100"), ("f64[]", "1.8e308"),
        ("f8e4m3fn[]", "449"), ("f8e4m3fn[]", "1000"), ("c64[]", "(1e100, 0)"),
        ("c64[]", "(0, -1e100)"), ("f32[2]", "{1,{2}}"), ("f32[2,3]", "{1, 2, 3, 4, 5, 6}"),
        ("f32[2,3,2]", "{{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}}}"),
        ("f32[2]", "{1,2,3}"), ("f32[2]", "{1}"), ("f32[2]", "1"), ("bf16[1]", "{nan(0x3ff)}"),
        ("f16[1]", "{nan(0x400)}"), ("f8e5m2[1]", "{nan(0x7)}"), ("f8e4m3fn[1]", "{nan(0x1)}"),
        ("f32[1]", "{-nan(0x3ff)}"), ("f32[1]", "{nan (0x3)}"), ("s32[]", "1.5"), ("f32[]", "abc"),
        ("f32[]", "1 2"), ("f32[]", "{1}"), ("f32[]", ""), ("pred[]", "2"), ("pred[]", "1.5"),
        ("f32[2,2]", "{{1,2},{...}}"), ("f32[2,2]", "{...}"), ("(f32[], s32[])", "(1, 2.5)"),
        ("(f32[], s32[])", "(1)"), ("f32[2]", " { 1 , /* x */ 2 } "), ("f32[2,0]", "{{},{}}"),
        # past the finite range, at and beside the halfway point to the next magnitude up:
        # rounded to nearest, ties to even (bf16 by way of f32)
        ("bf16[]", "3.3961775292304597e38"), ("bf16[]", "3.396177e38"), ("f8e4m3fn[]", "463.99"),
        ("f8e4m3fn[]", "464.01"), ("f8e5m2[]", "61440"), ("f8e5m2[]", "61439.9"),
        ("f8e4m3b11fnuz[]", "31"), ("f8e4m3b11fnuz[]", "30.99"), ("f8e3m4[]", "15.75"),
        ("f8e3m4[]", "15.74"), ("f4e2m1fn[]", "1e300"), ("f4e2m1fn[]", "-7"),
        ("f8e8m0fnu[]", "5.8e-39"), ("f8e8m0fnu[]", "1e-300"), ("f8e8m0fnu[]", "0"),
        ("f8e8m0fnu[]", "-1"), ("f8e8m0fnu[]", "2.5521177519070385e38"),
        ("f8e8m0fnu[]", "2.552117751907038e38")):
    CASES[f"literal {_shape} {_literal}"] = module_text(
        f"%c = {_shape} constant({_literal})", "ROOT %r = f32[8]{0} copy(%p)")
for _shape, _name, _literal in (
        ("s32[]", "5,000 digits", "9" * 5000), ("s32[]", "leading zeros", "0" * 40 + "7"),
        ("f32[]", "past uint64", "18446744073709551616"),
        ("f32[]", "below int64", "-9223372036854775809"),
        ("pred[]", "past uint64", "99999999999999999999999"),
        ("u64[]", "int64's least", "-9223372036854775808")):
    CASES[f"literal {_shape} of {_name}"] = module_text(
        f"%c = {_shape} constant({_literal})", "ROOT %r = f32[8]{0} copy(%p)")
for _shape, _literal in (("c64[]", "(0 -1)"), ("c64[]", "(0, 1 2)"), ("c64[2]", "{(1, 2), (3 4)}")):
    CASES[f"literal {_shape} {_literal}, a complex's punctuation"] = module_text(
        f"%c = {_shape} constant({_literal})", "ROOT %r = f32[8]{0} copy(%p)")


# An attribute list refused where a value is cut (its brackets do not balance, or text after
# it is no attribute): XLA's parser judges the attributes before the cut, and reads the cut
# value token by token, first; it may stop in one of them.
for _name, _attributes in (
        ("sharding with a stray bracket", "sharding={devices=[2,1]0,1 ]}"),
        ("sharding with an unclosed bracket", "sharding={devices=[2,1]0,1 metadata={}"),
        ("sharding against a list", "sharding={devices=[8,1]},1,2"),
        ("sharding refused before a cut", "sharding={replicated device=1}, junk"),
        ("sharding list of types refused before a cut",
         "sharding={devices=[2,2]0,1,2,3 last_tile_dims={foo}}, metadata={op_name=\"a\"]}"),
        ("metadata profile type before a stray bracket",
         "metadata={op_name=\"a\" profile_type={9}]}"),
        ("sharding across lines with a stray bracket",
         "sharding={devices=[2,1]0,1\n   metadata={op_name=\"a\"} ]}"),
        ("window on an opcode without one, before a cut", "window={size=3 pad=1_1_0}, junk"),
        ("sharding metadata of an unknown profile type",
         "sharding={devices=[2,1]0,1 metadata={profile_type={9}}}")):
    CASES[f"attribute list cut, {_name}"] = module_text(f"ROOT %r = f32[8]{{0}} negate(%p), {_attributes}")
# The module header's entry_computation_layout, read as XLA's ParseComputationLayout reads it
# (written on the header's second line: XLA counts the first line's columns from 0).
for _layout in ("{(f32[8]{0})->f32[8]{0}}", "{()->f32[8]}", "{(f32[8]{0}, )->f32[8]}",
                "{(f32[8]{0}) f32[8]}", "{(f32[8]{0} f32[])->f32[8]}", "{(f32[8]{0,})->f32[8]}",
                "{(f32[8])->[f32]}", "{(f32[8])->true}", "{(f32[8])->}", "(f32[8])->f32[8]",
                "{f32[8]->f32[8]}", "{(f32[8]{0})c64->[8]}", "{(f32[8]{0})->f32[8]{0}",
                "{(f32[8]{0})->f32[8]{0}}}", "{(f32[8,8]{0})->f32[8]}",
                "{(f32[8]{0})->(f32[8]{0} s32[])}", "{(f32[8]{0})->(f32[8]{0}, )}",
                "{(f32[8]{0})->((f32[8]{0}), (s32[], f33[]))}", "{(f32[8]{0})->(f32[8,8]{0})}",
                "{((f32[8]{0}, s32[]))->(f32[8]{0}, s32[])}"):
    CASES[f"entry_computation_layout {_layout}"] = module_text(
        "ROOT %r = f32[8]{0} negate(%p)").replace(
        "HloModule m\n", f"HloModule m,\n  entry_computation_layout={_layout}\n", 1)
# An operand list whose ')' is missing: XLA reads the operands token by token past it.
CASES["operand list without its ')', before the computation's '}'"] = module_text(
    "ROOT %r = f32[8]{0} negate(%p").replace("\n}", "\n\n}")
CASES["operand list without its ')', before an attribute"] = module_text(
    "ROOT %r = f32[8]{0} all-reduce(%p, to_apply=%add")
CASES["nested operand list without its ')'"] = module_text(
    "ROOT %r = f32[8]{0} add(%p, f32[8]{0} negate(%p)")
CASES["nested operand read, then the end of the text"] = (
    f"HloModule m\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
    "  ROOT %r = f32[8]{0} add(%p, f32[8]{0} negate(%p)")
# An operand that is no name defined: XLA tries it as an instruction. An opcode with ',' or
# ')' after it stops that attempt there: XLA records it and reads on without the operand.
for _name, _root in (("first", "(f32[8]{0}) tuple(copy, %p)"), ("last", "(f32[8]{0}) tuple(%p, copy)"),
                     ("with a shape", "(f32[8]{0}) tuple(%p, f32[8]{0} copy)"),
                     ("the only one", "f32[8]{0} negate(copy)"), ("written %", "(f32[8]{0}) tuple(%p, %copy)"),
                     ("a keyword", "f32[8]{0} negate(true)"), ("a name after it", "(f32[8]{0}) tuple(%p, copy x)")):
    CASES[f"nested operand, an opcode no name defines, {_name}"] = module_text(f"ROOT %r = {_root}")
CASES["operand shape differs, the same name written before"] = module_text(
    "ROOT %r = f32[8]{0} add(%p, f32[2]{0} %p)")
CASES["operand shape differs, found before the async update is checked"] = module_text(
    '%s = ((f32[4]{0}), f32[8]{0}, s32[]) custom-call-start(%p), custom_call_target="foo"',
    "%u = ((f32[8]{0}), f32[8]{0}, s32[]) custom-call-update(((f32[8]{0}), f32[8]{0}, s32[]) %s)",
    "ROOT %d = f32[8]{0} custom-call-done(((f32[8]{0}), f32[8]{0}, s32[]) %u)")
# An operand whose shape XLA refuses: neither a named operand nor a nested instruction to it.
for _operand in ("f32[ [] %p", "(%p, %p)", "f32[8]{0 %p", "f33[8] %p"):
    CASES[f"operand shape refused, {_operand}"] = module_text(f"ROOT %r = f32[8]{{0}} negate({_operand})")
# A layout's items after ':', in XLA's order, each read by a parser whose failure XLA records
# and reads on from: the layout is refused only at its '}', with the first error recorded.
for _items in ("T(8)", "T(8", "T(8)L(", "Q(1)", "L(2)T(8)", "T(8)(2)", "T(*)", "T(x)",
               "E(4)S(1)", "S(1)E(4)", "E()", "E(4", "#(u32)", "#(f32)", "*(u16)",
               "#(u32)*(u8)", "SC(0:1,2)", "SC(0:)", "M(8)", "D(D)", "D(X)", "T(8)T(2)", "",
               "T()", "TT(8)", "#(u32", "#u32)", "SC(0:1)(1:2)", "SC(x)", "D(D,X)T(8)"):
    CASES[f"layout items {_items!r}"] = module_text(f"ROOT %r = f32[8]{{0:{_items}}} negate(%p)")
# A constant without its ')': XLA reads the literal token by token and stops in it or after.
for _constant in ("f32[2]{0} constant({1, 2}", "f32[2]{0} constant({1, 2", "f32[] constant(1",
                  "(f32[], s32[]) constant((1, 2)", "f32[2]{0} constant({1, (2}"):
    CASES[f"constant without its ')', {_constant}"] = module_text(
        f"%c = {_constant}", "ROOT %r = f32[8]{0} negate(%p)")
# A signature's parameter list, read as XLA's ParseParamList reads it.
for _signature in ("(p: f32[8]) -> f32[8]", "(p f32[8]) -> f32[8]", "(%p: f32[8]) -> f32[8]",
                   "( f32[8]) -> f32[8]", "(p: [8]) -> f32[8]", "(p: f32[8 8]) -> f32[8]",
                   "(p: f32[8] ]) -> f32[8]", "(p: f32[8], ) -> f32[8]", "(p: f32[8]",
                   "(p: f32[8] -> f32[8]", "(p: f32[8]{1,0}) -> f32[8]",
                   "(p: (f32[8]{1,0}, s32[])) -> f32[8]", "(p: f32[8], q: (f32[], s33[])) -> f32[8]",
                   "(p: f32[8]{0:T(2)L(}) -> f32[8]"):
    CASES[f"signature {_signature}"] = module_text("ROOT %r = f32[8]{0} negate(%p)").replace(
        "ENTRY %main (p: f32[8]) -> f32[8] {", f"ENTRY %main {_signature} {{")
for _header in ("replica_count=x", "num_partitions=2.5", "is_scheduled=1",
                "alias_passthrough_params=yes", "replica_count=4, is_scheduled=true"):
    CASES[f"header {_header}"] = module_text("ROOT %r = f32[8]{0} negate(%p)").replace(
        "HloModule m\n", f"HloModule m,\n  {_header}\n", 1)
# A text that ends inside an instruction (a dump cut off): XLA stops at its own token.
for _cut in ("%q = f32[8]{0} parameter(1", "%c = f32[2]{0} constant({1, 2}", "%c = f32[] constant(1",
             "%q = f32[8]{0} negate(%p", "%q = f32[8]{0} add(%p, f32[8]{0} %p",
             "%q = f32[8]{0} all-reduce(%p), to_apply=%add, replica_groups={{0,1},{2",
             "%q = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1},",
             "%q = f32[8]{0} negate("):
    CASES[f"text ending in {_cut}"] = module_text(_cut).removesuffix("\n}\n")
CASES["transpose without its shape or dimensions"] = module_text("ROOT %t = transpose(%p)")
# Values XLA reads as one name of a fixed set (some without regard to case).
for _key, _line, _values in (
    ("direction", "%c = pred[8]{0} compare(%p, %p), direction=VALUE", ("GT", "gt", "XX", "1")),
    ("type", "%c = pred[8]{0} compare(%p, %p), direction=GT, type=VALUE",
     ("TOTALORDER", "float", "PARTIALORDER", '"FLOAT"')),
    ("kind", "%s = f32[] constant(0)\n  %c = f32[] fusion(%s, %s), kind=VALUE, calls=%add",
     ("kLoop", "kScatter", "KLOOP", "1")),
    ("distribution", "%s = f32[] constant(0)\n  %c = f32[8]{0} rng(%s, %s), distribution=VALUE",
     ("rng_normal", "RNG_UNIFORM", "uniform", "1")),
    ("fft_type", "%c = c64[8]{0} convert(%p)\n  %f = c64[8]{0} fft(%c), fft_type=VALUE, "
     "fft_length={8}", ("IFFT", "ifft", "1")),
    ("operand_precision", "%c = f32[] dot(%p, %p), lhs_contracting_dims={0}, "
     "rhs_contracting_dims={0}, operand_precision=VALUE", ("{high,DEFAULT}", "{packed_nibble}",
                                                        "{1}", "{high", "high")),
    ("algorithm", "%c = f32[] dot(%p, %p), lhs_contracting_dims={0}, rhs_contracting_dims={0}, "
     "algorithm=VALUE", ("dot_f32_f32_f32", "UNSET", "alg_unset", "1")),
    ("schedule", '%c = f32[8]{0} custom-call(%p), custom_call_target="t", schedule=VALUE',
     ("SCHEDULE_LATEST", "schedule_none", "none", "1")),
    ("padding_type", '%c = f32[8]{0} custom-call(%p), custom_call_target="t", padding_type=VALUE',
     ("PADDING_SAME", "valid", "1")),
):
    for _value in _values:
        CASES[f"a name of a kind: {_key}={_value}"] = module_text(
            _line.replace("VALUE", _value), "ROOT %r = f32[8]{0} copy(%p)")

# A value that is none of its attribute's kind, or missing (the next attribute's name, a ','
# or the line's end where it should be): refused by what XLA's reader of that kind wants first.
for _name, _line in (
    ("a direction, the next attribute", "%c = pred[8]{0} compare(%p, %p), direction= type=FLOAT"),
    ("a computation, a number", "%a = f32[8]{0} all-reduce(%p), to_apply=1"),
    ("a computation, the line's end", "%a = f32[8]{0} all-reduce(%p), to_apply="),
    ("a computation, the next attribute",
     "%a = f32[8]{0} all-reduce(%p), to_apply= replica_groups={}"),
    ("replica groups, a word", "%a = f32[8]{0} all-reduce(%p), replica_groups=x, to_apply=%add"),
    ("replica groups, a ','", "%a = f32[8]{0} all-reduce(%p), replica_groups=, to_apply=%add"),
    ("replica groups, the next attribute",
     "%a = f32[8]{0} all-reduce(%p), replica_groups= to_apply=%add"),
    ("pairs, a word", "%a = f32[8]{0} collective-permute(%p), source_target_pairs=x"),
    ("pairs, the next attribute",
     "%a = f32[8]{0} collective-permute(%p), source_target_pairs= channel_id=1"),
    ("a computation list, the next attribute", '%a = f32[8]{0} custom-call(%p), '
     'custom_call_target="x", called_computations= metadata={}'),
    ("a backend config, a number",
     '%a = f32[8]{0} custom-call(%p), custom_call_target="x", backend_config=1'),
    ("frontend attributes, a word", "%a = f32[8]{0} copy(%p), frontend_attributes=x"),
    ("an unknown attribute's, the line's end", "%a = f32[8]{0} copy(%p), trueis_host=\n"),
    ("a backend config, the next attribute", '%a = f32[8]{0} custom-call(%p), '
     'custom_call_target="x", backend_config= backend_config={}'),
    ("a backend config, the line's end",
     '%a = f32[8]{0} custom-call(%p), custom_call_target="x", backend_config=\n'),
    ("pairs, a list of integers and one more list", "%a = f32[8]{0} collective-permute(%p), "
     "source_target_pairs={1,0}, {0,1}}"),
    ("replica groups, a list of integers and one more list",
     "%a = f32[8]{0} all-reduce(%p), replica_groups={0,1}, {2,3}}, to_apply=%add"),
):
    CASES[f"a value none of its kind: {_name}"] = module_text(_line, "ROOT %r = f32[8]{0} copy(%p)")

# A literal's number ends where XLA's lexer ends it: a word written against it is the token
# after the literal.
for _literal, _shape in (("0operand\n  ", "f32[]"), ("1.5x", "f32[]"), ("1e5abc", "f32[]"),
                         ("-infROOT\n  ", "f32[]"),
                         ("-0foo", "f32[]"), ("3abc", "s32[]"), ("{1, 2operand}", "f32[2]")):
    CASES[f"literal {_literal.strip()!r} of {_shape}"] = module_text(
        f"%k = {_shape} constant({_literal})", "ROOT %r = f32[8]{0} copy(%p)")

# An array's literal written as one value without braces: XLA records that the rank differs
# and reads on (refused later, it reports that first); a tuple's operands are as many as its
# written shape has elements; an op whose '-done' is an opcode of its own has no async
# shorthand ('recv-start' is no opcode).
for _name, _lines in (
    ("array literal without braces", ("%k = f32[2,2] constant(0)",)),
    ("array literal without braces, refused later",
     ("%k = f32[2] constant(0)", "ROOT %r = f32[8]{0} copy(%q)")),
    ("tuple literal without its ',', refused later",
     ("%k = (f32[], f32[]) constant((1 2))", "ROOT %r = f32[8]{0} copy(%q)")),
    ("tuple of fewer operands than its shape", ("%r = (f32[8], f32[8]) tuple(%p)",)),
    ("tuple of more operands than its shape", ("%r = (f32[8]) tuple(%p, %p)",)),
    ("tuple of an empty shape", ("%r = () tuple(%p)",)),
    ("tuple of as many operands as its shape", ("%r = (f32[8], f32[8]) tuple(%p, %p)",)),
    ("tuple nested as an operand", ("%r = (f32[8]) tuple((f32[8], f32[8]) tuple(%p))",)),
    ("recv-start", ("%t = token[] after-all()",
                    "%s = (f32[8], u32[], token[]) recv-start(%t), channel_id=1")),
    ("send-start", ("%t = token[] after-all()",
                    "%s = (f32[8], u32[], token[]) send-start(%p, %t), channel_id=1")),
    ("copy-update", ("%s = (f32[8], f32[8], u32[]) copy-start(%p)",
                     "%u = (f32[8], f32[8], u32[]) copy-update(%s)")),
    ("all-reduce-update", ("%s = f32[8] all-reduce-start(%p), to_apply=%add",
                           "%u = f32[8] all-reduce-update(%s)")),
):
    CASES[f"operands and literals: {_name}"] = module_text(*_lines, "ROOT %z = f32[8]{0} copy(%p)")

# An operand is read token by token: a shape (read whole), one name token (a name written
# 'p:' is one), then ',' or ')'; XLA refuses anything else at the operand's first token.
for _name, _operands in (
    ("a name written 'p:'", "p:, %p"),
    ("an operand's shape refused", "f32[,8] %p, %p"),
    ("an operand's shape refused, names without '%'", "f32[,8] p, f32[8] p"),
    ("an operand's shape refused in a tuple", "(f32[8], f32[8 8]) %p, %p"),
    ("two names after a shape", "f32[8] %p %p"),
    ("two names after a shape, then one more", "f32[8] %p %p, %p"),
    ("a name and a shape", "%p f32[8], %p"),
    ("a name '%' and a digit", "%p, %0p"),
):
    CASES[f"operands: {_name}"] = module_text(f"ROOT %r = f32[8]{{0}} add({_operands})")
for _name, _operands in (("an operand", "%p"), ("none read", ","), ("two names", "x y")):
    CASES[f"operands of an iota: {_name}"] = module_text(
        f"%i = s32[8]{{0}} iota({_operands}), iota_dimension=0", "ROOT %r = f32[8]{0} copy(%p)")
# Names listed by a value are read token by token: a computation (or one written inline,
# which starts as an instruction list does), a braced list of computations, and control
# predecessors (at least one); each list's ',' and '}' where XLA's parser wants them.
_COND = "%b = s32[] constant(0)", "%c = f32[8]{0} conditional(%b, %p, %p), branch_computations="
for _name, _lines in (
    ("control predecessors, none", ("%a = f32[8]{0} copy(%p), control-predecessors={}",)),
    ("control predecessors, no ','", ("%a = f32[8]{0} copy(%p), control-predecessors={%p %p}",)),
    ("control predecessors, no braces", ("%a = f32[8]{0} copy(%p), control-predecessors=%p",)),
    ("control predecessors, a trailing ','",
     ("%a = f32[8]{0} copy(%p), control-predecessors={%p,}",)),
    ("control predecessors, names written '%p' and 'p:'",
     ("%a = f32[8]{0} copy(%p), control-predecessors={%p, p:}",)),
    ("control predecessors never closed", ("%a = f32[8]{0} copy(%p), control-predecessors={%p",)),
    ("branch computations, no ','", (_COND[0], _COND[1] + "{%add %add, %add}")),
    ("branch computations, a trailing ','", (_COND[0], _COND[1] + "{%add, }")),
    ("a computation written inline without a name", (
        "%a = f32[8]{0} all-reduce(%p), to_apply={ f32[] add(%p, %p) }",)),
    ("a computation written inline, empty", ("%a = f32[8]{0} all-reduce(%p), to_apply={}",)),
    ("a computation written inline without '='", (
        "%a = f32[8]{0} all-reduce(%p), to_apply={ x y }",)),
    ("a computation written inline, 'ROOT' alone", (
        "%a = f32[8]{0} all-reduce(%p), to_apply={ ROOT }",)),
    ("a computation written 'add:'", ("%a = f32[8]{0} all-reduce(%p), to_apply=add:",)),
):
    CASES[f"name lists: {_name}"] = module_text(*_lines, "ROOT %z = f32[8]{0} copy(%p)")
# statistics={...}: the index first (an integer), then names and numbers; XLA gives the
# attribute up, at its name, where a number is of another kind.
for _value in ("{}", "{visualizing_index=1,stat-1=33,stat-2=4.5}", "{visualizing_index=1,s=4 4}",
               "{visualizing_index=x}", "{visualizing_index=1.5}", "{visualizing_index=1 s=2}",
               "{visualizing_index=1,}", "{visualizing_index=1,a=b}", "x", "{1}",
               "{visualizing_index=1, a=inf}", "{visualizing_index=99999999999999999999}",
               '{visualizing_index=1, a="2"}'):
    CASES[f"statistics={_value}"] = module_text(f"%a = f32[8]{{0}} copy(%p), statistics={_value}",
                                            "ROOT %z = f32[8]{0} copy(%p)")
# The stack-frame index after the header: its four sections in order, each name a string
# (a missing one recorded), each location and frame all of its integer fields once.
_FILE_NAMES, _FUNCTION_NAMES = 'FileNames\n1 "a.py"\n', 'FunctionNames\n1 "main"\n'
_LOCATIONS = ("FileLocations\n1 {file_name_id=1 function_name_id=1 line=1 end_line=1 column=2 "
              "end_column=3}\n")
_FRAMES = "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
for _name, _index in (
    ("whole", _FILE_NAMES + _FUNCTION_NAMES + _LOCATIONS + _FRAMES),
    ("empty sections", "FileNames\nFunctionNames\nFileLocations\nStackFrames\n"),
    ("a section twice", "FileNames FileNames\n"),
    ("file names alone", _FILE_NAMES),
    ("no frames", _FILE_NAMES + _FUNCTION_NAMES + _LOCATIONS),
    ("sections swapped", _FUNCTION_NAMES + _FILE_NAMES + _LOCATIONS + _FRAMES),
    ("a name that is a number", "FileNames\n1 2\n" + _FUNCTION_NAMES + _LOCATIONS + _FRAMES),
    ("a name that is a word", "FileNames\n1 x\n" + _FUNCTION_NAMES + _LOCATIONS + _FRAMES),
    ("a name without its number", 'FileNames\n"a"\n' + _FUNCTION_NAMES + _LOCATIONS + _FRAMES),
    ("a location's unknown field", _FILE_NAMES + _FUNCTION_NAMES
     + "FileLocations\n1 {file_name_id=1 foo=2}\n" + _FRAMES),
    ("a location's fields left out", _FILE_NAMES + _FUNCTION_NAMES
     + "FileLocations\n1 {file_name_id=1, function_name_id=1}\n" + _FRAMES),
    ("a location's field not an integer", _FILE_NAMES + _FUNCTION_NAMES
     + 'FileLocations\n1 {file_name_id="x"}\n' + _FRAMES),
    ("a location never closed", _FILE_NAMES + _FUNCTION_NAMES
     + "FileLocations\n1 {file_name_id=1\n" + _FRAMES),
    ("a frame that is a string", _FILE_NAMES + _FUNCTION_NAMES + _LOCATIONS
     + 'StackFrames\n1 "x"\n'),
    ("a frame's field twice", _FILE_NAMES + _FUNCTION_NAMES + _LOCATIONS
     + "StackFrames\n1 {file_location_id=1 file_location_id=1 parent_frame_id=1}\n"),
    ("a frame of no fields", _FILE_NAMES + _FUNCTION_NAMES + _LOCATIONS + "StackFrames\n1 {}\n"),
):
    _text = f"HloModule m\n\n{_index}\nENTRY %e () -> pred[] {{\n  ROOT %c = pred[] constant(true)\n}}\n"
    CASES[f"stack frames, {_name}"] = _text
    CASES[f"stack frames, {_name}, refused later"] = _text.replace("constant(true)",
                                                                   "constant(true)\n  %z = junk")
CASES["operands: a shape refused, on an op whose operand shapes are checked"] = module_text(
    "%z = s32[] constant(0)",
    "ROOT %r = f32[8]{0} dynamic-update-slice(f32[,8] p, f32[8] p, s32[] z)")
for _name, _shape in (("an empty layout item", "f32[8]{,0}"), ("a layout of another rank", "f32[8]{1,0}")):
    CASES[f"operands: {_name} in an operand's shape as XLA prints it"] = module_text(
        "%z = s32[] constant(0)",
        f"ROOT %r = f32[8]{{0}} dynamic-update-slice({_shape} %p, f32[8]{{0}} %p, s32[] %z)")
# A value is one token or bracketed group but for those XLA reads as several (an iota's or
# a mesh's groups, a literal's shape and value): a '{' after a line break starts no value.
CASES["a header value and a brace on a later line"] = (
    "HloModule m, is_scheduled=true\n\n {\n  ROOT %p = f32[] parameter(0)\n}\n")
CASES["a shape as a value (outfeed_shape)"] = module_text(
    "%t = token[] after-all()", "%o = token[] outfeed(%p, %t), outfeed_shape=f32[8]{0}",
    "ROOT %z = f32[8]{0} copy(%p)")
for _shape in ("x", "f32[x]", "(f32[8], s32[])", "f32[8]{1,0}", "f32[8]{0:T(2}", "1"):
    for _after, _root in (("", "ROOT %z = f32[8]{0} copy(%p)"),
                          (", refused later", "ROOT %z = f32[8]{0} junk(%p)")):
        CASES[f"a shape as a value, outfeed_shape={_shape}{_after}"] = module_text(
            "%t = token[] after-all()", f"%o = token[] outfeed(%p, %t), outfeed_shape={_shape}",
            _root)
CASES["an instruction's value and a brace on a later line"] = module_text(
    "%a = f32[8]{0} copy(%p), sharding={replicated}", "{", "ROOT %z = f32[8]{0} copy(%p)")
# Lists of booleans: parameter_replication's (braced; one per leaf buffer, checked once the
# instruction is made) and the header's (one boolean, or braced).
for _value in ("{true}", "{}", "{true true}", "{,true}", "{true,}", "x", "true", "{1}", "{{true}}"):
    CASES[f"parameter_replication={_value}"] = module_text(
        "%a = f32[8]{0} parameter(0), parameter_replication=" + _value,
        "ROOT %z = f32[8]{0} copy(%p)").replace("%p = f32[8]{0} parameter(0)", "%p = f32[8]{0} parameter(1)")
for _value in ("true", "{}", "{true,false}", "{true,true true}", "{,true}", "{true,}", "x", "TRUE",
               "{true\n", "{{true}}"):
    CASES[f"allow_spmd_sharding_propagation_to_output={_value.strip()}"] = (
        f"\nHloModule m, allow_spmd_sharding_propagation_to_output={_value}\n\n"
        "ENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n")
# An instruction's name is one token of XLA's (an identifier, '%name' or 'name:'), and a
# second ROOT is refused at its keyword before the right side is read.
for _name, _lines in (
    ("written 'p:'", ("a: = f32[8]{0} copy(%p)", "ROOT %z = f32[8]{0} copy(%a)")),
    ("'ROOT' alone", ("ROOT = f32[8]{0} copy(%p)",)),
    ("'true'", ("true = f32[8]{0} copy(%p)",)),
    ("a second ROOT, its right side refused", (
        "ROOT %a = f32[8]{0} copy(%p)", "ROOT %b = f32[8]{ {0} copy(%p)")),
):
    CASES[f"instruction name {_name}"] = module_text(*_lines)
# An iota list of replica groups is read by XLA's tokens: its tile's two dimensions, '<=',
# then the iota a sharding's is (reshape dimensions, and 'T(...)' when there are several).
for _groups in ("[2,4<=[8]", "[2,4]<=[ [8]", "[2,4]", "[2,4][8]", "[2,2,2]<=[8]", "[2,4]<=[2,4]",
                "[2,4]<=[2,4]T(1,0", "[8]<=[8]", "[]<=[8]", "[2,4]<=[]", "[2,4]<=[4,2]T(2,0)",
                "[x]<=[8]", "[2,4]<=[8] x", "[2,4]<=[8]T(0)", "[2,4]<=[2,4]T(1,0) x",
                "[2,2] ]<=[2,2]T(1,0)", "[2,2]<=[2,2] ]T(1,0)"):
    CASES[f"iota groups read by tokens {_groups}"] = module_text(
        f"%a = f32[8]{{0}} all-reduce(%p), replica_groups={_groups}, to_apply=%add",
        "ROOT %z = f32[8]{0} copy(%p)")
# A convolution's dim_labels is one token of XLA's lexer (which reads the pattern); each
# side's labels are unique ('?' aside), its spatial ones below its count of labels, and each
# side has as many spatial dimensions.
for _labels in ("b01f_01io->b01f", "\n", "x", "b01f_01io", "b0z_0io->b0f", "1", "bf_io->bf",
                "f0b_i0o->00f", "bb0f_0io->b0f", "b0f_0io->b0ff", "b0?f_0?io->b0f",
                "b21f_01io->b01f", "b41f_01io->b01f", "b0f_04io->b0f", "b0f_0io->bf"):
    CASES[f"dim_labels={_labels.strip()}"] = module_text(
        "%k = f32[1,1]{1,0} constant({{1}})", "%x = f32[1,8]{1,0} reshape(%p)",
        f"%c = f32[1,8]{{1,0}} convolution(%x, %k), window={{size=1}}, dim_labels={_labels}",
        "ROOT %z = f32[8]{0} copy(%p)")
# An instruction's original value (origin={...}): '[synthetic_call]', or a tree of tuples and
# arrays (a name and an index each).
for _value in ('{{"v1"}}', "{[synthetic_call]}", "{[synthetic]}", '{({"v1"}, {"v2"})}',
               '{({"v1"}, {"v2"}\n', '{({"v1"}, {"v2")}', "{}", "{x}", "x",
               "{[synthetic_call synthetic_call]}", '{{"v1" {0,}}}', '{{"v1" {x}}}', "{{v1}}",
               '{({"v1"} {"v2"})}', '{[synthetic_call] x}', '{{"v1" {0 1}}}', "{(,)}"):
    CASES[f"origin={_value.strip()}"] = module_text(
        f"%a = f32[8]{{0}} copy(%p), origin={_value}", "ROOT %z = f32[8]{0} copy(%p)")
# The header's recovery table: entries of two original arrays joined by ':', each maybe with
# a module's text, which XLA reads (one it refuses gives the attribute up). (On line 2: XLA
# counts the first line's columns from 0.)
_RECOVERY = "HloModule r\nENTRY %r (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0} parameter(0)\n}\n"
for _name, _table in (
        ("a module", f'{{{{"a"}} : {{"b"}}, "{_RECOVERY}"}}'),
        ("two entries", f'{{{{"a"}}: {{"b"}}, "{_RECOVERY}" {{"c"}}: {{"d" {{0}}}}}}'),
        ("no module", '{{"a"} : {"b"}}'),
        ("a module XLA refuses", '{{"a"} : {"b"}, "' + _RECOVERY.replace("%p =", "%p: =") + '"}'),
        ("entries joined by ','", '{{"a"}: {"b"}, {"c"}: {"d"}}'),
        ("no ':'", '{{"a"} {"b"}}'), ("a number for a module", '{{"a"}: {"b"}, 5}'),
        ("an array without braces", '{"a": {"b"}}'), ("left open", '{{"a"}: {"b"}')):
    CASES[f"origin_recovery_table, {_name}"] = module_text(
        "ROOT %z = f32[8]{0} copy(%p)").replace(
        "HloModule m\n", f"\nHloModule m, origin_recovery_table={_table}\n", 1)
# A text that ends right after an attribute's '=': the value's reader refuses the end.
for _tail in ("fusion(%p), kind=kLoop, calls=", "all-reduce(%p), to_apply=",
              "copy(%p), control-predecessors=", "call(%p), to_apply=%add, metadata=",
              "conditional(%p), branch_computations="):
    CASES[f"name list cut at the end of the text, {_tail}"] = (
        f"HloModule m\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
        f"  %p = f32[8]{{0}} parameter(0)\n  ROOT %r = f32[8]{{0}} {_tail}")
# Scalars and names of a fixed set by their attribute's type: booleans, an int32, a float
# (within float's range; a NaN is one), a collective's mode, a convolution's kind, and an
# enumeration (transpose_a: an identifier; one XLA does not know aborts its parser).
_SOLVE = ("%s = f32[4,4]{1,0} parameter(1)", "%t = f32[4,4]{1,0} triangular-solve(%s, %s), "
          "left_side=LEFT, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE")
for _key, _values, _lines in (
    ("left_side", ("true", "x", "1", '"true"'), _SOLVE),
    ("transpose_a", ("NO_TRANSPOSE", "1"), _SOLVE),
    ("epsilon", ("0.001", "1", "x", "-1e-3", "inf", "-inf", '"1"', "nan", "-nan", "1e39",
                 "3.4e38", "3.40282357e38", "99999999999999999999"), (
        "%s = f32[4]{0} parameter(1)", "%b = f32[8,4]{1,0} parameter(2)",
        "%t = f32[8,4]{1,0} batch-norm-inference(%b, %s, %s, %s, %s), epsilon=EPSILON, "
        "feature_index=1")),
    ("cross_program_prefetch_index", ("0", "x", "1.5", "99999999999"), (
        "%t = (f32[8]{0}, f32[8]{0}, u32[]) copy-start(%p), "
        "cross_program_prefetch_index=VALUE",)),
    ("mode", ("cross_replica", "flattened_id", "x", "1", "CROSS_REPLICA"), (
        "%t = f32[8]{0} all-reduce(%p), to_apply=%add, mode=VALUE",)),
    ("convolution_kind", ("fprop", "wgrad", "dense", "FPROP", "unknown", "1"), (
        "%k = f32[1,1]{1,0} constant({{1}})", "%x = f32[1,8]{1,0} reshape(%p)",
        "%c = f32[1,8]{1,0} convolution(%x, %k), window={size=1}, dim_labels=bf_io->bf, "
        "convolution_kind=VALUE")),
):
    for _value in _values:
        _given = {"LEFT": "true", "TRANSPOSE": "NO_TRANSPOSE", "EPSILON": "0.001"}
        _given[{"left_side": "LEFT", "transpose_a": "TRANSPOSE", "epsilon": "EPSILON"}.get(
            _key, "VALUE")] = _value
        _written = [line.replace("=LEFT", "=" + _given["LEFT"])
                    .replace("=TRANSPOSE", "=" + _given["TRANSPOSE"])
                    .replace("=EPSILON", "=" + _given["EPSILON"])
                    .replace("=VALUE", "=" + _given.get("VALUE", "")) for line in _lines]
        CASES[f"typed value {_key}={_value}"] = module_text(*_written,
                                                       "ROOT %z = f32[8]{0} copy(%p)")
# An operand list ends at the ')' after an operand, whatever brackets come before it: an
# operand's shape whose layout item XLA records an error in and reads past leaves a '('
# open that no ')' closes.
for _name, _operands, _root in (
    ("read", "f32[8]{0:T(8} %p, f32[8]{0} %p)", "copy(%a)"),
    ("refused later", "f32[8]{0:T(8} %p, f32[8]{0} %p)", "copy(%q)"),
    ("never closed", "f32[8]{0:T(8} %p, f32[8]{0} %p", "copy(%a)"),
    ("closed by ']'", "%p, %p]", "copy(%a)"),
):
    CASES[f"operands: a '(' left open in a shape, {_name}"] = module_text(
        f"%a = f32[8]{{0}} add({_operands}", f"ROOT %z = f32[8]{{0}} {_root}")
# A backend_config written as a JSON dictionary ends where XLA's lexer ends it: braces alone
# count (strings aside), whatever other brackets it holds.
for _config in ('{"a": [1}', '{"a": [{"b": 1]}', '{"a": {"b": [}}', "{a: (}", '{"a" 1}}'):
    CASES[f"backend_config={_config}"] = module_text(
        f'%c = f32[8]{{0}} custom-call(%p), custom_call_target="x", backend_config={_config}',
        "ROOT %z = f32[8]{0} copy(%c)")
# A JSON dictionary whose braces never close, or with a '"' that opens no string, is no JSON
# dictionary to XLA's lexer: refused at its '{'.
for _name, _value in (("left open at the end of the text", '{"a": {"b":'),
                      ("a string left open", '{"a": "}\n}\n')):
    for _key, _text in (("backend_config", f"backend_config={_value}"),
                        ("frontend attribute", f'frontend_attributes={{a="x", b={_value}')):
        CASES[f"{_key}, a JSON dict {_name}"] = (
            f"HloModule m\n{ADD}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            f"  %p = f32[8]{{0}} parameter(0)\n"
            f"  ROOT %r = f32[8]{{0}} copy(%p), metadata={{op_name=\"x\"}}, {_text}")
for _attributes in ('{b={"x": [1}}', '{b={"x": [1}, c="("}', '{b={"x": (}, c=1}', '{b={"x": [}'):
    CASES[f"frontend_attributes={_attributes}"] = module_text(
        f"%a = f32[8]{{0}} copy(%p), frontend_attributes={_attributes}",
        "ROOT %z = f32[8]{0} copy(%a)")
    CASES[f"header frontend_attributes={_attributes}"] = (
        f"\nHloModule m, frontend_attributes={_attributes}\n\n"
        "ENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n")
# A computation written inline whose brackets do not balance is read instruction by
# instruction, as XLA reads it, and refused where XLA stops in it.
CASES["inline computation with a bracket left open"] = module_text(
    "%z = f32[] constant(0)", "ROOT %r = f32[] reduce(%p, %z), dimensions={0}, to_apply={",
    "  %x = f32[] parameter(0)", "  %y = f32[] parameter(1)", "  ROOT %a = f32[] add(%x, f32] %y)",
    "}")
# XLA judges each attribute as it comes to it: those before a computation written inline,
# then the computation, then those after it.
for _name, _before, _after in (
        ("an unexpected attribute", "bogus=1, ", ""),
        ("a repeated attribute", "channel_id=1, channel_id=2, ", ""),
        ("a value refused", "replica_groups={{0,x}}, ", ""),
        ("an unexpected attribute after it", "", ", bogus=1")):
    CASES[f"inline computation after {_name}"] = module_text(
        f"ROOT %r = f32[8]{{0}} all-reduce(%p), {_before}to_apply={{",
        "  %x = f32[] parameter(0)", "  ROOT %a = f32[] add(%x)", f"}}{_after}")
CASES["single instruction, an inline computation with a bracket left open"] = (
    "\nr = f32[] reduce(f32[10], f32[]), dimensions={1}, to_apply=\n{\n"
    "  result = f32[] add(f32[] x, f32] y)\n}\n")
# A mesh of replica groups is read by XLA's tokens: the sharding reader's mesh, then the list
# of axes (names, or sub-axes 'a':(pre)size) each group spans; one device per group is
# refused at the token after it.
# (Meshes XLA reads are compared group by group in tests/hlo/test_parse.py.)
for _groups in ("mesh['a'=2,'b'=4] 'a'", "mesh['a'=2,'b'=4] {a}", "mesh['a'=2,'b'=4] {'a' 'b'}",
                "mesh['a'=2,'b'=4]", "mesh['a'=2,'b'=4] {}", "mesh['a'=2,'b'=4] {'a',}",
                "mesh['a'=2,'b'=4] {'a'", "mesh[] {}", "mesh['a'=2,'b'=4] {'b':(2)}",
                "mesh['a'=2,'b'=4] {'b':2}", "mesh'a'[=2] {'a'}", "mesh['a'=2,'b'=4 {'a'}"):
    CASES[f"mesh groups read by tokens {_groups}"] = (
        "\nHloModule m, num_partitions=8\n\nENTRY %e (p: f32[8]) -> f32[8] {\n"
        "  %p = f32[8]{0} parameter(0)\n"
        f"  %a = f32[64]{{0}} all-gather(%p), channel_id=1, replica_groups={_groups}, "
        "dimensions={0}, use_global_device_ids=true\n  ROOT %z = f32[8]{0} copy(%p)\n}\n")
# Explicit groups end at their '}': a bracket after them continues no value.
for _after in (" {{2,3}}", "[2]"):
    CASES[f"explicit groups and{_after}"] = module_text(
        f"%a = f32[8]{{0}} all-reduce(%p), replica_groups={{{{0,1}}}}{_after}, to_apply=%add",
        "ROOT %z = f32[8]{0} copy(%p)")
CASES["a name '%' and a digit, defined"] = module_text("%0p = f32[8]{0} copy(%p)",
                                                   "ROOT %r = f32[8]{0} copy(%p)")

# XLA records an error in a layout's items and reads on; refused later, it reports that one.
_RECORDED = "{0:T(8,128}"
CASES["layout, an item's error recorded in a shape, read"] = module_text(
    f"ROOT %r = f32[8]{_RECORDED} copy(%p)")
CASES["layout, an item's error recorded in a shape, refused later"] = module_text(
    f"%a = f32[8]{_RECORDED} copy(%p)", "ROOT %r = f32[8]{0} copy(%q)")
CASES["layout, an item's error recorded in a signature, refused later"] = (
    f"HloModule m\n\nENTRY %main (p: f32[8]{_RECORDED}) -> f32[8] {{\n"
    "  %p = f32[8]{0} parameter(0)\n  ROOT %r = f32[8]{0} copy(%q)\n}\n")
CASES["layout, an item's error recorded before an error earlier in the text"] = module_text(
    "%a = f32[8]{0} fancy(%p)", f"ROOT %r = f32[8]{_RECORDED} copy(%p)")

for _word in ("ENTRY {", "ROOT {", "f32 {", "true {", "%f32 {", "c: {"):  # XLA's ParseName
    CASES[f"computation named {_word[:-2]!r}"] = (
        f"HloModule m\n\n{_word}\n  ROOT p = f32[] parameter(0)\n}}\n\n"
        "ENTRY e {\n  ROOT q = f32[] parameter(0)\n}\n")


# A value with text written against its end (no white space, no ','): XLA's parser of the
# value stops at the value's last token, the instruction ends there, and the text after it is
# read as the next statement (accepted when it is one, refused at it when not).
_AGAINST_THE_VALUE = {
    f"{value} against {after}": module_text(
        f"%a = f32[8]{{0}} all-reduce(%p), to_apply=%add, {value}{after}",
        "ROOT %r = f32[8]{0} add(%q, %q)" if after.startswith("%q =") else
        "ROOT %r = f32[8]{0} add(%a, %a)")
    for value in ("replica_groups={{0}}", "replica_groups=[1,1]<=[1]", "channel_id=1",
                  "backend_config={}", 'backend_config="x"', 'metadata={op_name="a"}',
                  'frontend_attributes={a="b"}', "sharding={replicated}")
    for after in ("%q = f32[8]{0} negate(%a)", "q")
}


@pytest.mark.parametrize("name", sorted(_AGAINST_THE_VALUE))
def test_a_value_ends_where_xla_s_parser_stops(name: str) -> None:
    agrees_with_xla(_AGAINST_THE_VALUE[name])


_SHAPES = ["f33[8]{0}", "f32[x]{0}", "f32[8,]{0}", "f32[8 8]", "f32[<=x]", "f32[8]{x}",
           "f32[8]{}", "f32[8]{0,}", "f32[8]{1,0}", "f32[8]{:T(2)}", "f32[8]{ 0 }",
           "f32[/* n */8]{0}", "f32 [8]{0}", "f32[8] {0}", "f32[99999999999999999999]",
           "f32[8]{0:T(2)(3)}", "f32[8]{0:zz}", "(f32[8]{0} f32[8])", "(f32[8]{0},)",
           "( f32[8]{0} )", "(f33[8])", "(f32[8]{1,0})", "f32[<=8,?]{1,0}",
           "b(f32[8]{0})", "b (f32[8])", "b(f32[8]", "b(f32[8]{1,0})", "(b(f32[8]), s32[])",
           "b[8]", "b(f32[8]) /* b */", "b(bf16[8]{0})", "b(([bf16[8]]))", "f32[-1 token",
           "f32[4x8]", "f32[8]{1x2}", "f32.5[8]", "(f32[8]{0}, f32:[8])", "b(f32:]",
           "(f32[8], token-1f32[])", "(u8[], predS[1]{0})", "f32]", "f32 f32[8]", "(s32, f32[])"]
for _groups in ("[2,2]<=[2,2]T (1,0)", "[2,2]<=[2,2] T /* t */ (1,0)", "[2,2]<=[2,2]Tx(1,0)"):
    CASES[f"iota groups {_groups}"] = module_text(
        f"ROOT %r = f32[8]{{0}} all-reduce(%p), replica_groups={_groups}, to_apply=%add")
_BODY = " {\n  ROOT %p = f32[8]{0} parameter(0)\n}\n"
for _name, _head in (("junk after its name", "%c junk"), ("no arrow", "%c (p: f32[8])"),
                     ("no result shape", "%c (p: f32[8]) ->"),
                     ("an unknown result type", "%c (p: f32[8]) -> f33[8]"),
                     ("a result layout of another rank", "%c (p: f32[8]) -> f32[8]{1,0}"),
                     ("text after the module", "ENTRY %c" + _BODY + "junk here")):
    CASES[f"computation head with {_name}"] = f"HloModule m\n{_head}{_BODY}"
# A thread is written after the computation's brace, never in its head.
for _thread in ('"t"', "'t'"):
    CASES[f"computation head with execution_thread={_thread}"] = (
        f"HloModule m\n%c (p: f32[8]) -> f32[8], execution_thread={_thread}{_BODY}")
# A text without the header line is a module when it starts with ENTRY or a name and '{'.
# (Each starts on line 2: XLA counts the first line's columns from 0.)
CASES["no header, a computation with a signature first"] = (
    "\n" + ADD + "ENTRY %c" + _BODY)
CASES["no header, a name and '{' first"] = "\n%c" + _BODY
CASES["no header, prose"] = "\nimport jax\nprint(1)\n"
# XLA decides on tokens: a module when the first is ENTRY or the second is '{' (a name
# token ``c:``, even ``ENTRY:``, or no name at all), and ``HloModule:`` is a name.
for _first in ("c:", "ENTRY:", "(", "42"):
    CASES[f"no header, {_first} and '{{' first"] = f"\n{_first}{_BODY}"
CASES["no header, HloModule: as a name"] = "\nHloModule: m\nENTRY %c" + _BODY
# A name starting "__" (the backends' prefix) other than "__xla_": XLA renames it, and
# refuses the name it was given.
for _name in ("__x", "%__", "__xla_x", "_x"):
    CASES[f"instruction name {_name}"] = module_text(
        f"{_name} = f32[8]{{0}} copy(%p)", f"ROOT %r = f32[8]{{0}} copy(%{_name.lstrip('%')})")
CASES["instruction name __r, the root"] = module_text("ROOT __r = f32[8]{0} copy(%p)")
# A constant's literal is read before its name is judged (legal, then not defined before).
for _name in ("%f32", "%token", "%p", "%__x"):
    CASES[f"constant name {_name}, a literal out of range"] = module_text(
        f"ROOT {_name} = bf16[] constant(1e100)")
# A computation written in place whose first instruction is written ``x: = ...`` (a name
# token with its colon) is read as one.
CASES["to_apply in place, first written x:"] = module_text(
    "ROOT %r = f32[8]{0} all-reduce(%p), replica_groups={}, to_apply={ x: = f32[] "
    "parameter(0)\n y: = f32[] parameter(1)\n ROOT z: = f32[] add(x, y) }")
CASES["to_apply in place, first written x:, its operands undefined"] = (
    "\nreduce = f32[] reduce(f32[10], f32[]), dimensions={1}, to_apply=\n{\n"
    "  x: = f32[] add(f32[] x, f32[] y)\n}")
# "{{" is a list of computations written in place only for a key that takes a list; for one
# that takes a computation, it is a computation whose first instruction starts with '{'. A
# list whose first item is no '{' is a list of names.
for _key, _value in (("to_apply", "{{}: (0, {})}"), ("to_apply", "{{ ROOT x = f32[] parameter(0) }}"),
                     ("to_apply", "{{\n"), ("calls", "{{ ROOT x = f32[] parameter(0) }}")):
    CASES[f"inline computation {_key}={_value.strip()}"] = module_text(
        f"ROOT %r = f32[8]{{0}} all-reduce(%p), replica_groups={{}}, {_key}={_value}")
CASES["inline computation branch_computations={ ROOT x = ... }"] = module_text(
    "%i = s32[] constant(0)",
    "ROOT %r = f32[8]{0} conditional(%i, %p), branch_computations={ ROOT x = f32[8]{0} "
    "parameter(0) }")
# The key of a value written as a computation in place is judged before the value is read.
for _case, _line in (
    ("an attribute parameter does not take", "ROOT %r = f32[8]{0} parameter(1), "
     'calls={devices=[2]0,1 metadata={op_name="a"}}'),
    ("an attribute all-gather does not take", "ROOT %r = f32[8]{0} all-gather(%p), "
     "dimensions={0}, to_apply={{0,1},{2,3}}"),
    ("to_apply twice", "ROOT %r = f32[8]{0} all-reduce(%p), to_apply=%add, "
     "to_apply={ ROOT %x = f32[] parameter(0) }"),
):
    CASES[f"inline computation key judged first, {_case}"] = module_text(_line)
# A nested parameter whose number is taken is read whole, then left out: XLA records that it
# reads no operand there and reads on (an all-reduce of what is left; an add short of one).
for _operands in ("f32[8]{0} parameter(0), %p", "%p, f32[8]{0} parameter(0)"):
    CASES[f"nested operand parameter taken, all-reduce({_operands})"] = module_text(
        f"ROOT %r = f32[8]{{0}} all-reduce({_operands}), replica_groups={{}}, "
        "to_apply=%add")
    CASES[f"nested operand parameter taken, add({_operands})"] = module_text(
        f"ROOT %r = f32[8]{{0}} add({_operands})")
# So is one XLA reads to its ')' and then refuses: an attribute it needs and cannot have
# (nested instructions take none), or a channel its done does not share.
for _operand in ("f32[8]{0} all-reduce(%p)", "f32[8]{0} get-tuple-element(%t)"):
    CASES[f"nested operand refused whole, tuple(%p, {_operand})"] = module_text(
        "%t = (f32[8]{0}) tuple(%p)", f"%r = (f32[8]{{0}}) tuple(%p, {_operand})",
        "ROOT %o = f32[8]{0} copy(%p)")
CASES["nested operand with an operand not defined, in a tuple"] = module_text(
    "%r = (f32[8]{0}) tuple(%p, f32[8]{0} all-reduce-done(%zz))", "ROOT %o = f32[8]{0} copy(%p)")
CASES["nested operand refused whole, a send-done in a tuple"] = module_text(
    "%k = token[] after-all()", "%s = (f32[8]{0}, u32[], token[]) send(%p, %k), channel_id=1",
    "%r = (f32[8]{0}) tuple(%p, token[] send-done(%s))", "ROOT %o = f32[8]{0} copy(%p)")
CASES["nested operand refused whole, a send-done of another channel"] = module_text(
    "%k = token[] after-all()", "%s = (f32[8]{0}, u32[], token[]) send(%p, %k), channel_id=1",
    "ROOT %r = (f32[8]{0}, u32[], token[]) send(%p, token[] send-done(%s)), channel_id=2")
# A nested instruction XLA cannot make (its literal out of range) is no operand, where it
# stands among the others.
for _operands in ("%p, f32[8]{0} constant(1e100)", "f32[8]{0} constant(1e100), %zz",
                  "%zz, f32[8]{0} constant(1e100)"):
    CASES[f"nested operand out of range in add({_operands})"] = module_text(
        f"ROOT %r = f32[8]{{0}} add({_operands})")
CASES["nested operand out of range, the text one constant"] = "\nbf16[] constant(1e100)"
# XLA decodes a collective as it makes it: a mode it refuses comes before the
# instruction's name is judged (legal, then not defined before).
for _defined, _collective in (
        ("%p", "all-reduce(%p), replica_groups={}, use_global_device_ids=true, to_apply=%add"),
        ("%f32", "all-reduce(%p), replica_groups={}, use_global_device_ids=true, to_apply=%add")):
    CASES[f"mode refused before {_defined} is judged: {_collective[:10]}"] = module_text(
        f"{_defined} = f32[8]{{0}} {_collective}", "ROOT %r = f32[8]{0} negate(%p)")
# XLA records an undefined operand as it reads it, then judges the instruction's name (legal,
# then not defined before), then its parameter_replication.
for _defined in ("%a", "%f32", "%__a"):
    CASES[f"undefined operand, then {_defined} judged"] = module_text(
        "%a = f32[8]{0} negate(%p)", f"{_defined} = f32[8]{{0}} negate(%zz)",
        "ROOT %r = f32[8]{0} negate(%a)")
for _defined in ("%token", "%__x", "%p"):
    CASES[f"{_defined} judged, then its replication"] = module_text(
        f"{_defined} = (f32[8]{{0}}, f32[]) parameter(1), "
        "parameter_replication={true,false,true}", "ROOT %r = f32[8]{0} negate(%p)")
# ... nor the name of a computation it calls.
for _name in ("f8e4m3", "true", "pred"):
    for _call in (f"call(%p), to_apply={_name}", f"call(%p), to_apply=%{_name}",
                  f"fusion(%p), kind=kLoop, calls={_name}"):
        CASES[f"called computation name {_call}"] = module_text(
            f"ROOT %r = f32[8]{{0}} {_call}").replace(
            "ENTRY", f"%{_name} (x: f32[8]) -> f32[8] {{\n  ROOT %x = f32[8]{{0}} parameter(0)\n}}"
                     "\n\nENTRY")
# A keyword or type written without '%' is no operand name, even where '%' makes it one.
for _name in ("true", "ROOT", "nan", "inf", "pred"):
    for _operands in (f"%p, {_name}", f"f32[8]{{0}} {_name}, %p", f"%{_name}, %p"):
        CASES[f"operand name {_operands}"] = module_text(
            f"%{_name} = f32[8]{{0}} negate(%p)", f"ROOT %r = f32[8]{{0}} add({_operands})")
CASES["instruction named ROOT: (a name token)"] = module_text(
    "ROOT: = f32[8]{0} copy(%p)")
for _name, _line in (("too many", "negate(%p, %p)"), ("too few", "add(%p)"), ("none", "copy()"),
                     ("across lines", "negate(\n   %p,\n %p)"), ("a done's", "all-reduce-done(%p, %p)")):
    CASES[f"operand count, {_name}"] = module_text(f"ROOT %r = f32[8]{{0}} {_line}")
# The opcode is one identifier token: a name (``copy:``), an attribute name (``copy=``), a
# keyword or a word with '.' is no opcode XLA knows.
for _call in ("copy=(%p)", "copy:(%p)", "true(%p)", "cop.y(%p)", "copy.1(%p)",
              "/*x*/copy(%p)"):
    CASES[f"opcode {_call}"] = module_text(f"ROOT %r = f32[8]{{0}} {_call}")
for _shape in _SHAPES:
    CASES[f"shape {_shape}"] = module_text(f"%q = {_shape} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)")
# Values read by a grammar of their own, and what XLA checks once an instruction is read.
_ZERO = "%z = f32[] constant(0)"
for _name, _lines in (
    ("window, a pad of three numbers", (
        _ZERO, "ROOT %r = f32[8]{0} reduce-window(%p, %z), window={size=1 pad=0_0_1}, "
               "to_apply=%add")),
    ("window, pads for two dimensions of one", (
        _ZERO, "ROOT %r = f32[8]{0} reduce-window(%p, %z), window={size=1 pad=0_0x0_0}, "
               "to_apply=%add")),
    ("window, an unknown field", (
        _ZERO, "ROOT %r = f32[8]{0} reduce-window(%p, %z), window={size=1 step=1}, "
               "to_apply=%add")),
    ("window, a stride cut short", (
        _ZERO, "ROOT %r = f32[8]{0} reduce-window(%p, %z), window={size=1 stride=1x}, "
               "to_apply=%add")),
    ("window across lines", (
        _ZERO, "ROOT %r = f32[8]{0} reduce-window(%p, %z), window={size=1",
        "    pad=0_0}, to_apply=%add")),
    ("padding of one number", (_ZERO, "ROOT %r = f32[8]{0} pad(%p, %z), padding=1")),
    ("padding low_high_interior", (_ZERO, "ROOT %r = f32[8]{0} pad(%p, %z), padding=0_0_0")),
    ("api_version unknown", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", api_version=API_V9',)),
    ("api_version unspecified", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", '
        "api_version=API_VERSION_UNSPECIFIED",)),
    ("api_version in lower case", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", '
        "api_version=api_version_typed_ffi",)),
    ("operand layout constraints, one too many", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", '
        "operand_layout_constraints={f32[8]{0}, f32[8]{0}}",)),
    ("operand layout constraints, not the operand's", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", '
        "operand_layout_constraints={s32[8]}",)),
    ("operand layout constraints, a trailing comma", (
        'ROOT %r = f32[8]{0} custom-call(%p), custom_call_target="f", '
        "operand_layout_constraints={f32[8]{0},}",)),
    ("operand rule, a reduce of three", (
        _ZERO, "ROOT %r = f32[] reduce(%p, %z, %p), dimensions={0}, to_apply=%add")),
    ("operand rule, a dynamic slice without its index", (
        "ROOT %r = f32[2]{0} dynamic-slice(%p), dynamic_slice_sizes={2}",)),
    ("operand rule, a dynamic update of one", ("ROOT %r = f32[8]{0} dynamic-update-slice(%p)",)),
    ("operand rule, a dynamic update with its index", (
        "%i = s32[] constant(0)", "ROOT %r = f32[8]{0} dynamic-update-slice(%p, %p, %i)")),
    ("operand rule, a dynamic reshape of nothing", (
        "ROOT %r = f32[8]{0} dynamic-reshape()",)),
    ("an infeed of an array", (
        "%t = token[] after-all()", "ROOT %r = f32[8]{0} infeed(%t)")),
    ("pairs punctuation, an entry of three", (
        "ROOT %r = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1,2}}",)),
    ("pairs punctuation, an entry of one on the fast path", (
        "%r = f32[8]{0} collective-permute(%p), source_target_pairs={{1}}",
        "ROOT %c = f32[8]{0} copy(%r)")),
    ("operand shape not its own", ("ROOT %r = f32[8]{0} negate(s32[8]{0} %p)",)),
    ("operand shape its own but its layout", ("ROOT %r = f32[8]{0} negate(f32[8]{1} %p)",)),
    ("layout, a dimension level type XLA does not know", (
        "%q = f32[8]{0:D(Q)} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)")),
    ("layout, sparse dimension levels", (
        "%q = f32[8]{0:D(C+)} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)")),
    ("layout, a physical shape on a dense array", (
        "%q = f32[8]{0:P(s32[8])} copy(%p)", "ROOT %r = f32[8]{0} copy(%p)")),
):
    CASES[_name] = module_text(*_lines)
# The header's aliasing values (on line 2: XLA counts the first line's columns from 0).
for _name, _value in (
    ("input_output_alias of one pair", "input_output_alias={ {}: (0, {}, may-alias) }"),
    ("input_output_alias, an index of a name", "input_output_alias={ {x}: (0, {}) }"),
    ("input_output_alias, no colon", "input_output_alias={ {} (0, {}) }"),
    ("input_output_alias, two aliases without a comma",
     "input_output_alias={ {}: (0, {}) {}: (0, {}) }"),
    ("input_output_alias, an unknown kind", "input_output_alias={ {}: (0, {}, no-alias) }"),
    ("buffer_donor of one", "buffer_donor={ (0, {}), }"),
    ("buffer_donor, a parameter of a name", "buffer_donor={ (p, {}) }"),
    ("buffer_donor, an index not braced", "buffer_donor={ (0, 0) }"),
    ("input_output_alias, no parameter number (XLA reads on)",
     "input_output_alias={ {}: (, {}) }"),
    ("buffer_donor, no parameter number (XLA reads on)", "buffer_donor={ (, {}) }"),
):
    CASES[f"header {_name}"] = "\n" + module_text("ROOT %r = f32[8]{0} copy(%p)").replace(
        "HloModule m", f"HloModule m, {_value}", 1)
CASES["header input_output_alias, no parameter number, refused later"] = "\n" + module_text(
    "ROOT %r = f32[8]{0} copy(%q)").replace(
        "HloModule m", "HloModule m, input_output_alias={ {}: (, {}) }", 1)
# The header's entry_computation_layout: a layout's item XLA records and reads past leaves a
# bracket open, which its reader of the layout steps over.
for _name, _line in (("a tile left open", "ROOT %r = f32[8]{0} copy(%p)"),
                     ("a tile left open, refused later", "ROOT %r = f32[8]{0} copy(%q)")):
    CASES[f"header entry_computation_layout, {_name}"] = "\n" + module_text(_line).replace(
        "HloModule m", "HloModule m, entry_computation_layout={(f32[8]{0:T(8S(5)})->f32[8]{0}}",
        1)
# An instruction's output_to_operand_aliasing (XLA's ParseInstructionOutputOperandAliasing).
for _name, _value in (
    ("of one pair", "{{}: (0, {})}"),
    ("of two pairs and a trailing comma", "{{0}: (0, {}), {1}: (0, {}), }"),
    ("without a colon", "{{} (0, {})}"),
    ("two numbers", "{{}: (0 0, {})}"),
    ("no operand number (XLA reads on)", "{{}: (, {})}"),
    ("an operand of a name", "{{}: (x, {})}"),
    ("an index of a name", "{{a}: (0, {})}"),
    ("without its ')'", "{{}: (0, {}}"),
    ("a word before its '}'", "{{}: (0, {})x}"),
    ("a comma alone", "{,}"),
):
    CASES[f"output_to_operand_aliasing {_name}"] = module_text(
        f'%c = f32[8]{{0}} custom-call(%p), custom_call_target="x", '
        f"output_to_operand_aliasing={_value}", "ROOT %r = f32[8]{0} copy(%c)")
CASES["output_to_operand_aliasing, no operand number, refused later"] = module_text(
    '%c = f32[8]{0} custom-call(%p), custom_call_target="x", '
    "output_to_operand_aliasing={{}: (, {})}", "ROOT %r = f32[8]{0} copy(%q)")
_IN_XLA_WORDS = ("none of its kind", "output_to_operand_aliasing", "window", "padding", "api_version", "operand layout", "operand rule",
                 "infeed", "operand shape", "layout,", "header ","result_accuracy", "literal", "pairs punctuation", "required attribute", "conditional on", "single instruction", "inline computation", "nested operand", "computation attributes", "async shorthand", "shape left out", "operand count", "no header", "computation head", "parameter", "ENTRY", "no instruction", "control predecessor", "name", "statistics", "stack frames", "replication", "allow_spmd", "dim_labels", "origin", "typed value", "outfeed_shape", "JSON dict")


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_where_xla_refuses(name: str) -> None:
    """Refused at XLA's line and column (read whole and streamed); read, with the same
    collectives as XLA's, where XLA reads it."""
    agrees_with_xla(CASES[name])


@pytest.mark.parametrize("name", sorted(name for name in CASES if name.startswith("metadata")
                                         or "root of" in name
                                         or name.startswith(("shape ", "opcode "))
                                         or any(word in name for word in _IN_XLA_WORDS)))
def test_refused_in_xla_words(name: str) -> None:
    """Refused with XLA's message (its first line) at XLA's line and column where XLA
    refuses it; read where XLA reads it."""
    agrees_in_xla_words(CASES[name])


@pytest.mark.parametrize("attributes", [", foo=bar", ", replica_count=2, replica_count=2",
                                        ", num_partitions=2, origin=x"])
def test_header_attributes_are_xlas(attributes: str) -> None:
    """The header takes XLA's attributes, each once, refused in XLA's words. (XLA counts the
    columns of the first line from 0, so its column there is one less than the character's.)"""
    text = module_text("ROOT %r = f32[8]{0} copy(%p)").replace("HloModule m", "HloModule m"
                                                            + attributes, 1)
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert info.value.message.split("\n")[0] == xla_message(text)  # its first line
    assert (info.value.line, info.value.column - 1) == xla_position(text)


@pytest.mark.parametrize("name", ['"m"', "5", "f32", "true", "%m", "m:", "m.1-x"])
def test_the_module_s_name_is_xla_s(name: str) -> None:
    """The module's name is one identifier or name token (``%m`` and ``m:`` name ``m``), as
    XLA's ParseName reads it; a string, number or keyword is refused in XLA's words. (XLA
    counts the columns of the first line from 0.)"""
    from jaxlib._hlo import hlo_module_from_text

    text = f"HloModule {name}\nENTRY e {{\n  ROOT p = f32[] parameter(0)\n}}\n"
    expected = xla_position(text)
    if expected is None:
        assert hlo.parse_module(text).name == hlo_module_from_text(text).name
        return
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_module(text)
    assert info.value.message == xla_message(text) == "expects name"
    assert (info.value.line, info.value.column - 1) == expected


_INFERRED = """HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = add(%x, %y)
}
%body (b: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {
  ROOT %b = (s32[], f32[8,4]{0,1}) parameter(0)
}
%cond (c: (s32[], f32[8,4])) -> pred[] {
  %c = (s32[], f32[8,4]{0,1}) parameter(0)
  %i = get-tuple-element(%c), index=0
  ROOT %lt = compare(%i, %i), direction=LT
}
ENTRY %main (p: f32[4,8], q: c64[4,8], k: s32[]) -> (f32[4,8], f32[4,8], f32[]) {
  %p = f32[4,8]{0,1} parameter(0)
  %q = c64[4,8]{1,0} parameter(1)
  %k = s32[] parameter(2)
  %n = negate(%p)
  %a = add(%n, %p)
  %re = real(%q)
  %im = imag(%q)
  %ab = abs(%q)
  %cx = complex(%re, %im)
  %fin = is-finite(%p)
  %sel = select(%fin, %p, %n)
  %cl = clamp(%p, %p, %p)
  %tr = transpose(%p), dimensions={1,0}
  %t = tuple(%k, %tr)
  %w = while(%t), condition=%cond, body=%body
  %g = get-tuple-element(%w), index=1
  %pid = partition-id()
  %rid = replica-id()
  %tok = after-all()
  %cp = copy(%g)
  %one = f32[] constant(1)
  %sum = call(%one, %one), to_apply=%add
  ROOT %r = tuple(%a, %sel, %sum)
}
"""


def test_inferred_shapes_are_xlas() -> None:
    """Each shape left out is the one XLA infers (as XLA prints the module it read)."""
    from jaxlib._hlo import hlo_module_from_text

    ours = hlo.parse_module(_INFERRED)
    printed = hlo.parse_module(hlo_module_from_text(_INFERRED).to_string())
    for computation in ours.computations.values():
        for instruction in computation.instructions:
            xla = printed.computations[computation.name].instruction(instruction.name)
            assert instruction.shape_text == xla.shape_text, instruction.name


def test_async_shorthand_is_the_async_collective() -> None:
    """``reduce-scatter-start``/``-done`` are XLA's async-start/-done wrapping a
    reduce-scatter: the collective says so, the start carries the op's attributes and the
    done takes them from its start."""
    module = hlo.parse_module(module_text(
        "%s = ((f32[8]{0}), f32[4]{0}) reduce-scatter-start(%p), replica_groups={{0,1}}, "
        "dimensions={0}, to_apply=%add, channel_id=2",
        "%d = f32[4]{0} reduce-scatter-done(%s)",
        "ROOT %r = f32[8]{0} copy(%p)"), replica_count=2)
    start, done = module.collectives
    assert (start.opcode, start.wrapped_opcode, start.underlying_opcode) == (
        "async-start", "reduce-scatter", "reduce-scatter")
    assert (done.opcode, done.wrapped_opcode, done.start) == ("async-done", "reduce-scatter", "s")
    assert start.is_async and start.is_start and done.is_done
    for collective in (start, done):
        assert collective.channel_id == 2 and collective.dimensions == (0,)
        assert collective.replica_groups.replica_groups == [[0, 1]]
        assert str(collective.mode) == "kCrossReplicaAndPartition"
        assert collective.device_groups() == [[0, 1]] and collective.bytes == 32


def test_computation_thread_after_its_brace() -> None:
    module = hlo.parse_module(CASES["computation attributes, its thread on the next line"])
    assert module.computations["c"].execution_thread == "t"
    assert module.computations["e"].execution_thread is None
    quoted = hlo.parse_module(CASES["computation attributes, its thread in single quotes"])
    assert quoted.computations["c"].execution_thread == "t's"


def test_nested_operands_are_instructions_before_their_user() -> None:
    """An operand written as an instruction is one, named as XLA names it, before its user."""
    module = hlo.parse_module(CASES["nested operand, inferred"])
    assert [(i.name, i.shape_text, i.operands) for i in module.entry.instructions] == [
        ("p", "f32[8]{0}", ()), ("negate.anon", "f32[8]{0}", ("p",)),
        ("negate.anon.1", "f32[8]{0}", ("p",)),
        ("negate.anon.2", "f32[8]{0}", ("negate.anon.1",)),
        ("r", "f32[8]{0}", ("negate.anon", "negate.anon.2"))]


def test_a_done_is_linked_to_a_start_of_its_own_computation() -> None:
    """A recv-done whose operand shares its name with a recv of another computation keeps its
    own channel id, as XLA does (the names of different computations are unrelated)."""
    text = """HloModule m
%other (o: f32[8]) -> (f32[8], u32[], token[]) {
  %o = f32[8]{0} parameter(0)
  %t = token[] after-all()
  ROOT %ctx = (f32[8]{0}, u32[], token[]) recv(%t), channel_id=2
}
ENTRY %main (p: (f32[8], u32[], token[])) -> (f32[8], token[]) {
  %ctx = (f32[8]{0}, u32[], token[]) parameter(0)
  ROOT %done = (f32[8]{0}, token[]) recv-done(%ctx), channel_id=1
}
"""
    done = hlo.parse_module(text).collectives_by_name["done"]
    assert (done.channel_id, done.start) == (1, "ctx")
    from jaxlib._hlo import hlo_module_from_text

    assert "channel_id=1\n}" in hlo_module_from_text(text).to_string()  # the done's own


def test_one_computation_per_async_start() -> None:
    """XLA refuses a module where two async starts call one computation (a module check:
    XLA gives no position)."""
    lines = ["%s = ((f32[], f32[]), f32[]) async-start(%x, %x), calls=%add",
             "%d = f32[] async-done(%s)", "ROOT %r = f32[8]{0} copy(%p)"]
    text = CASES["async shorthand, a done of its computation"]
    hlo.parse_module(text)
    twice = text.replace("  ROOT %r", "  " + "\n  ".join(
        line.replace("%s", "%start").replace("%d", "%done") for line in lines[:2]) + "\n  ROOT %r")
    with pytest.raises(mt.HloParseError, match="called by more than one async op"):
        hlo.parse_module(twice)
    from jaxlib._hlo import hlo_module_from_text

    with pytest.raises(Exception, match="called by more than one async op"):
        hlo_module_from_text(twice)


def test_printed_back_as_written() -> None:
    """``to_text`` prints an operand written as an instruction within its user (not as a
    line of its own) and a computation's thread after its brace: XLA reads the print back,
    and so does meshtopo, to the same instructions."""
    from jaxlib._hlo import hlo_module_from_text

    text = (
        "HloModule m\n%c (x: f32[8]) -> f32[8] {\n  ROOT %x = f32[8]{0} parameter(0)\n}, "
        'execution_thread="host"\n' + CASES["nested operand, with shapes"].split("\n", 1)[1])
    module = hlo.parse_module(text)
    printed = module.to_text()
    assert 'execution_thread="host"' in hlo_module_from_text(printed).to_string()
    again = hlo.parse_module(printed)
    for name, computation in module.computations.items():
        assert ([(i.name, i.shape_text) for i in again.computations[name].instructions]
                == [(i.name, i.shape_text) for i in computation.instructions])
    assert again.computations["c"].execution_thread == "host"


def test_inline_computations_are_computations() -> None:
    """A computation written as an attribute's value is one of the module's, named as XLA
    names it, before the one that wrote it; a collective reads its reduction there."""
    module = hlo.parse_module(CASES["inline computation, nested"])
    assert list(module.computations) == ["add", "_", "_.1", "main"]
    (all_reduce,) = module.collectives
    assert (all_reduce.computation, all_reduce.to_apply, all_reduce.reduction) == ("_.1", "_", "sum")
    assert module.entry.root.called_computations == ("_.1",)
    assert list(hlo.parse_module(module.to_text()).computations) == list(module.computations)


def test_inline_computation_starting_with_a_name_token() -> None:
    """``{ x: = ...}`` is a computation written in place (its first name a name token)."""
    module = hlo.parse_module(CASES["to_apply in place, first written x:"])
    assert list(module.computations) == ["add", "_", "main"]
    (all_reduce,) = module.collectives
    assert (all_reduce.to_apply, all_reduce.reduction) == ("_", "sum")


def test_a_nested_parameter_whose_number_is_taken_is_left_out() -> None:
    """As XLA reads it: the all-reduce has the one operand left."""
    module = hlo.parse_module(
        CASES["nested operand parameter taken, all-reduce(f32[8]{0} parameter(0), %p)"])
    assert module.entry.root.operands == ("p",)
    assert [i.name for i in module.entry.instructions] == ["p", "r"]


def test_a_nested_collective_left_out_is_no_collective() -> None:
    """A nested send-done XLA leaves out (its channel is not its send's) is in neither the
    module's instructions nor its collectives."""
    module = hlo.parse_module(CASES["nested operand refused whole, a send-done in a tuple"])
    assert [i.name for i in module.entry.instructions] == ["p", "k", "s", "r", "o"]
    assert [c.name for c in module.collectives] == ["s"]


def test_one_instruction_is_a_module() -> None:
    """A text that is one instruction is XLA's module _ of one computation, the operands
    written with a shape and no definition its parameters."""
    module = hlo.parse_module(CASES["single instruction, a collective"], replica_count=2)
    assert (module.name, module.is_scheduled, list(module.computations)) == (
        "_", True, ["_.1", "_"])
    assert [(i.name, i.opcode) for i in module.entry.instructions] == [
        ("x", "parameter"), ("ar", "all-reduce")]
    (all_reduce,) = module.collectives
    assert (all_reduce.reduction, all_reduce.device_groups()) == ("sum", [[0, 1]])


@pytest.mark.parametrize("shape", _SHAPES)
def test_parse_shape_refuses_as_xla(shape: str) -> None:
    """``mt.hlo.parse_shape`` reads a shape as the module reader does: it refuses exactly
    what XLA refuses as a tuple element's shape (here in an entry's result), in XLA's words,
    at XLA's token."""
    prefix = "ENTRY %e () -> ("
    text = f"HloModule m\n\n{prefix}{shape}) {{\n  ROOT %q = ({shape}) parameter(0)\n}}\n"
    expected = xla_position(text)
    if expected is None or expected[0] != 3:  # read, or refused for what follows the shape
        hlo.parse_shape(shape)
        return
    with pytest.raises(mt.HloParseError) as info:
        hlo.parse_shape(shape)
    column = expected[1] - len(prefix)
    if column > len(shape):  # XLA read on into the ')' around it: refused past its end
        assert info.value.column == len(shape) + 1
    elif info.value.message == "Extra content after shape":  # the ')' XLA wanted is missing
        assert (xla_message(text), info.value.column) == (
            "expects ')' at the end of tuple.", column)
    else:
        assert (info.value.message, info.value.line, info.value.column) == (
            xla_message(text), 1, column)


# Computations written in place whose brackets do not balance, in a text that is one
# instruction: XLA reads them up to where it stops, in a list or in a computation.
_OPEN_BODY = "\n  ROOT p = f32[] parameter(0)\n}"
_LEFT_OPEN = {
    "a list whose '}' is missing": "c = f32[] conditional(s32[] i, f32[] a), "
                                   f"branch_computations={{{{{_OPEN_BODY}",
    "a list whose second computation is left open": "c = f32[] conditional(s32[] i, "
                                                    f"f32[] a), branch_computations={{{{{_OPEN_BODY}, {{",
    "one computation left open": f"c = f32[] call(f32[] a), to_apply={{{_OPEN_BODY[:-1]}",
}


@pytest.mark.parametrize("name", sorted(_LEFT_OPEN))
def test_computations_written_in_place_left_open(name: str) -> None:
    agrees_with_xla(_LEFT_OPEN[name])


# What XLA's parser refuses without words or position (the words are ours): a send-done or
# recv-done whose operand is one of XLA's channel instructions without its channel_id (none
# on both, or the same), and a concatenate or sort of other than one dimension.
_SEND = "%a = token[] after-all()\n  %s = (f32[8]{0}, u32[], token[]) send(%p, %a)"
_RECV = "%a = token[] after-all()\n  %r = (f32[8]{0}, u32[], token[]) recv(%a)"
_LESS = ("%lt (a: f32[], b: f32[]) -> pred[] {\n  %a = f32[] parameter(0)\n"
         "  %b = f32[] parameter(1)\n  ROOT %c = pred[] compare(%a, %b), direction=LT\n}\n")
_WITHOUT_WORDS = {
    "send-done of another channel": (
        module_text(f"{_SEND}, channel_id=2", "ROOT %d = token[] send-done(%s), channel_id=3"),
        "send-done d has channel_id=3 but its operand s has channel_id=2"),
    "send-done without its send's channel": (
        module_text(f"{_SEND}, channel_id=2", "ROOT %d = token[] send-done(%s)"),
        "send-done d has no channel_id but its operand s has channel_id=2"),
    "recv-done with a channel its recv has not": (
        module_text(_RECV, "%d = (f32[8]{0}, token[]) recv-done(%r), channel_id=-12",
                    "ROOT %g = f32[8]{0} get-tuple-element(%d), index=0"),
        "recv-done d has channel_id=-12 but its operand r has no channel_id"),
    "send-done of an all-reduce of another channel": (
        module_text("%x = f32[8]{0} all-reduce(%p), channel_id=4, to_apply=%add",
                    "ROOT %d = token[] send-done(%x), channel_id=5"),
        "send-done d has channel_id=5 but its operand x has channel_id=4"),
    "send-done of its send's channel": (
        module_text(f"{_SEND}, is_host_transfer=true, channel_id=2",
                    "ROOT %d = token[] send-done(%s), channel_id=2, is_host_transfer=true"), None),
    "send-done and send without channels": (
        module_text(_SEND, "ROOT %d = token[] send-done(%s)"), None),
    "send-done of a parameter": (
        module_text("%t = (f32[8]{0}, u32[], token[]) parameter(1)",
                    "ROOT %d = token[] send-done(%t), channel_id=5"), None),
    "concatenate of no dimension": (
        module_text("ROOT %c = f32[16]{0} concatenate(%p, %p), dimensions={}"),
        "concatenate expects exactly one dimension, got 0"),
    "concatenate of two dimensions": (
        module_text("ROOT %c = f32[16]{0} concatenate(%p, %p), dimensions={0,0}"),
        "concatenate expects exactly one dimension, got 2"),
    "sort of no dimension": (
        module_text("ROOT %s = f32[8]{0} sort(%p), dimensions={}, to_apply=%lt").replace(
            "ENTRY", _LESS + "ENTRY", 1), "sort expects exactly one dimension, got 0"),
    "sort of one dimension": (
        module_text("ROOT %s = f32[8]{0} sort(%p), dimensions={0}, to_apply=%lt").replace(
            "ENTRY", _LESS + "ENTRY", 1), None),
}


@pytest.mark.parametrize("name", sorted(_WITHOUT_WORDS))
def test_what_xla_refuses_without_words(name: str) -> None:
    from jaxlib._hlo import hlo_module_from_text

    text, message = _WITHOUT_WORDS[name]
    if message is None:
        agrees_with_xla(text)
        return
    with pytest.raises(Exception) as xla:  # jaxlib raises its own status error
        hlo_module_from_text(text)
    assert "was parsing" not in str(xla.value)  # (no words, no position)
    with pytest.raises(mt.HloParseError, match=f"^[0-9]+:[0-9]+: {message}$"):
        hlo.parse_module(text)
    with pytest.raises(mt.HloParseError, match=message):
        list(hlo.iter_collectives(io.StringIO(text), progress=False, block_size=64))
