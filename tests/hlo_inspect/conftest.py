"""Give JAX 8 CPU devices before it is imported, as the oracle tests do."""

from oracle.conftest import ORACLE_DEVICE_COUNT as ORACLE_DEVICE_COUNT
