"""The place a launcher gives this process: torchrun, srun or mpirun, read from the
environment each sets, so ``meshtopo run|replay --backend torch`` needs no flags of its own
under them.

- torchrun: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``; its agent already
  serves a TCPStore there (``TORCHELASTIC_USE_AGENT_STORE=True``), which the job then joins;
- srun: ``SLURM_PROCID``, ``SLURM_NTASKS``;
- mpirun: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE`` (Open MPI) or ``PMI_RANK``,
  ``PMI_SIZE`` (MPICH, Intel MPI);

srun and mpirun name no store: ``MASTER_ADDR`` and ``MASTER_PORT`` must be exported to every
task (as for torch.distributed's ``env://``; ``mpirun -x MASTER_ADDR -x MASTER_PORT``). Each
launched process is one node of the run (``--nnodes`` = the world size, ``--node-rank`` = its
rank), running the devices that fall to it, so local ranks (``LOCAL_RANK``,
``OMPI_COMM_WORLD_LOCAL_RANK``, ``SLURM_LOCALID``) are not read: the gloo backend needs no
device per local rank.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

from ..._errors import InvalidArgumentError
from .._options import is_decimal

# (launcher, rank variable, world size variable), first found wins.
_LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE"),
    ("srun", "SLURM_PROCID", "SLURM_NTASKS"),
    ("mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("mpirun", "PMI_RANK", "PMI_SIZE"),
)


class Launched(NamedTuple):
    """This process's place in a launched job."""

    launcher: str
    rank: int
    world_size: int
    master_addr: str
    master_port: int
    store_served: bool


def launched(environ: Mapping[str, str] = os.environ) -> Launched | None:
    """This process's place when a launcher started it, else None; a launcher's variables
    that are not numbers, or srun/mpirun without ``MASTER_ADDR``/``MASTER_PORT``, are an
    ``InvalidArgumentError`` naming them."""
    for launcher, rank_name, size_name in _LAUNCHERS:
        if rank_name not in environ or size_name not in environ:
            continue
        values = {name: environ[name] for name in (rank_name, size_name)}
        missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if not environ.get(name)]
        if missing:
            raise InvalidArgumentError(
                f"{launcher} started this process ({rank_name}={values[rank_name]}) but "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: "
                "export the address and a free port of the first task's host to every task")
        values["MASTER_PORT"] = environ["MASTER_PORT"]
        bad = [f"{name}={value!r}" for name, value in values.items() if not is_decimal(value)]
        if bad:
            raise InvalidArgumentError(f"{launcher}'s environment is not numbers: {', '.join(bad)}")
        rank, size = int(values[rank_name]), int(values[size_name])
        if not 0 <= rank < size:
            raise InvalidArgumentError(f"{launcher}'s {rank_name}={rank} is not below "
                                       f"{size_name}={size}")
        return Launched(launcher, rank, size, environ["MASTER_ADDR"], int(environ["MASTER_PORT"]),
                        environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True")
    return None
