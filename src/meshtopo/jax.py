"""JAX integration (optional: ``pip install 'meshtopo[jax]'``); JAX is imported on first use.

``inspect(fn, *args)`` compiles a JAX program and returns its HLO module (``mt.hlo.Module``)
placed on the executable's device assignment, so each collective's ``device_groups()`` are JAX
device ids. ``check(fn, *args)`` compiles the same way and returns ``mt.order.analyze`` of
that module: per-device collective schedules and the findings of matching them by arrival
order.
"""

from ._jax import check as check
from ._jax import executable_device_assignment as executable_device_assignment
from ._jax import inspect as inspect
