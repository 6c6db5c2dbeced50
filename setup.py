"""The one compiled part: the scanner of explicit replica groups (``hlo/_explicit_scan.c``)."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("meshtopo.hlo._explicit_scan", ["src/meshtopo/hlo/_explicit_scan.c"],
              extra_compile_args=["-O3"]),
])
