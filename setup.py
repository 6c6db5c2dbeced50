"""The compiled parts: the readers of XLA's printed forms (``hlo/_explicit_scan.c``, explicit
replica groups, and ``hlo/_line_scan.c``, instructions one a line; both read the groups' form
from ``hlo/_explicit_form.h``)."""

from setuptools import Extension, setup

_HLO = "src/meshtopo/hlo/"
_FORM = [_HLO + "_explicit_form.h"]

setup(ext_modules=[
    Extension("meshtopo.hlo._explicit_scan", [_HLO + "_explicit_scan.c"], depends=_FORM,
              extra_compile_args=["-O3"]),
    Extension("meshtopo.hlo._line_scan", [_HLO + "_line_scan.c"],
              depends=[*_FORM, _HLO + "_slots.h"], extra_compile_args=["-O3"]),
    Extension("meshtopo.hlo._decoded_copy", [_HLO + "_decoded_copy.c"],
              depends=[_HLO + "_slots.h"], extra_compile_args=["-O3"]),
])
