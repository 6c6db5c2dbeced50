"""The compiled parts: XLA's tokenizer (``hlo/_lexer.c``, its kinds and spellings from
``hlo/_tokens.h``, which ``hlo/_tokens.py`` writes), the readers of XLA's printed forms
(``hlo/_explicit_scan.c``, explicit replica groups, and ``hlo/_line_scan.c``, instructions one
a line; both read the groups' form from ``hlo/_explicit_form.h``) and ``order/_flight_scan.c``,
the decoder of Flight Recorder dumps, and ``order/_trace_scan.c``, the reader of profiler
traces' collective events.

Each is optional: without a C compiler the install goes on without them and the reader uses
its pure-Python stand-ins (``hlo/_native.py``; for dumps, Python's unpickler as
``order/_flight_columns.py`` restricts it; for traces, ``order/_trace_events.py``'s cut), with
the same answers, more slowly.
``meshtopo --version`` says which are in use.
"""

from setuptools import Extension, setup

_HLO = "src/meshtopo/hlo/"
_FORM = [_HLO + "_explicit_form.h"]

setup(ext_modules=[
    Extension("meshtopo.hlo._lexer", [_HLO + "_lexer.c"],
              depends=[_HLO + "_tokens.h", _HLO + "_lexer_scan.h"], extra_compile_args=["-O3"],
              optional=True),
    Extension("meshtopo.hlo._explicit_scan", [_HLO + "_explicit_scan.c"], depends=_FORM,
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.hlo._line_scan", [_HLO + "_line_scan.c"], depends=_FORM,
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.order._flight_scan", ["src/meshtopo/order/_flight_scan.c"],
              extra_compile_args=["-O3"], optional=True),
    Extension("meshtopo.order._trace_scan", ["src/meshtopo/order/_trace_scan.c"],
              extra_compile_args=["-O3"], optional=True),
])
