"""A convolution's ``sparsity_config`` is read and refused as XLA's parser (jaxlib's
``hlo_module_from_text``) reads and refuses it: at its line and column, in its words."""

from __future__ import annotations

import pytest

from ._xla_agreement import agrees_in_xla_words

pytestmark = pytest.mark.jax

_VALUES = [
    "{rhs={sparsity=3x4 dimension=0 stride=1}}",
    "{lhs={sparsity=1x4 dimension=1 stride=1} rhs={sparsity=3x4 dimension=0 stride=1}}",
    "{}", "{lhs={}}", "{rhs={sparsity=3x4} rhs={sparsity=0x4 sparsity=3x4}}",
    "{rhs={sparsity=3 dimension=0 stride=1}}", "{rhs={sparsity=3x4x5}}",
    "{rhs={sparsity=3x4 foo=1}}", "{foo={}}", "{rhs={sparsity=3x4}, lhs={sparsity=1x2}}",
    "{rhs={sparsity=3x4, dimension=0}}", "rhs", "{rhs}", "{rhs=1}",
    "{rhs={dimension=x}}", "{rhs={dimension=-1 stride=99999999999}}",
    "{rhs={sparsity= dimension=0 stride=1}}", "{rhs={sparsity=1.5}}", "{rhs={sparsity=}}",
]


@pytest.mark.parametrize("value", _VALUES)
def test_as_xla_reads_it(value: str) -> None:
    text = ("HloModule m\n\nENTRY e {\n  %input = f32[1,2] parameter(0)\n"
            "  %filter = f32[2,2] parameter(1)\n  ROOT %convolution = f32[1,2] convolution("
            f"%input, %filter), dim_labels=bf_io->bf, sparsity_config={value}\n}}\n")
    agrees_in_xla_words(text)
