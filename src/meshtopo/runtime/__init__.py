"""The runtime layer: cliques, communicators, a factory, a rendezvous, and backends that move
bytes, so a module's collectives really execute.

Layering: imports the math layer, ``hlo`` and ``order`` (for issue orders; never a front
end); torch is imported only by the ``torch`` backend modules (``_torch``, ``_worker``,
``_bridge``), when used.

- XLA's vocabulary: ``CliqueKey`` (devices in rank order, never sorted), ``Clique``
  (communicators by rank; a rank elsewhere is None), ``Communicator`` (all_reduce, into an
  ``out`` buffer or in place when asked, all_gather, reduce_scatter, broadcast,
  collective_permute, all_to_all, ragged_all_to_all, send, recv, barrier, split, abort,
  health_check; each returns an ``Event`` meaning *launched*),
  ``CommunicatorFactory`` (create from a key, split by colour: ``split_ranks``,
  ``clique_split_color``).
- ``Rendezvous`` / ``RendezvousError``: membership first; a stuck warning, then an error naming
  the collective, the clique and the devices that never arrived.
- Backends: ``LocalFactory`` (threads, numpy); ``TorchFactory`` (torch.distributed gloo,
  one process per device; membership met once per clique or before every operation).
- ``execute(module, inputs, backend="local", device_assignment=None, timeout=None)``: the
  entry computation on every device, send/recv, ragged-all-to-all, bf16 and f8 included
  (``Plan`` checks it first, XLA's verifier too; ``generated_inputs``, ``load_inputs``,
  ``save_values``).
- torch bridge: ``device_mesh_to_torch``, ``device_mesh_from_torch``, ``mesh_process_groups``
  (meshtopo's groups in its rank order); these and ``TorchFactory``/``TorchCommunicator``
  import torch on first use.
- ``replay(module, backend="local", ...)``: every device issues the collectives in
  ``issue_order`` (``meshtopo.order.issue_order``: the order layer's walk, into the branch a
  device takes) with zero buffers of the real shapes; seconds per collective and device
  (send/recv waited for after the last collective; ragged-all-to-all listed as skipped).

>>> import numpy as np
>>> import meshtopo as mt
>>> module = mt.hlo.parse_module('''HloModule m, num_partitions=4
... %add (x: s32[], y: s32[]) -> s32[] {
...   %x = s32[] parameter(0)
...   %y = s32[] parameter(1)
...   ROOT %s = s32[] add(%x, %y)
... }
... ENTRY %main (p: s32[2]) -> s32[2] {
...   %p = s32[2] parameter(0)
...   ROOT %ar = s32[2] all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
... }
... ''')
>>> out = mt.runtime.execute(module, {d: [np.array([d, 10 * d], np.int32)] for d in range(4)})
>>> {d: v.tolist() for d, v in out.items()}
{0: [1, 10], 1: [1, 10], 2: [5, 50], 3: [5, 50]}
"""

from ._clique_key import CliqueKey as CliqueKey
from ._clique_key import StreamKind as StreamKind
from ._clique_key import clique_split_color as clique_split_color
from ._communicator import Clique as Clique
from ._communicator import Communicator as Communicator
from ._communicator import Event as Event
from ._communicator import ReductionKind as ReductionKind
from ._execute import BACKENDS as BACKENDS
from ._execute import execute as execute
from ._execute import generated_inputs as generated_inputs
from ._execute import load_inputs as load_inputs
from ._execute import replay as replay
from ._execute import save_values as save_values
from ._factory import CommunicatorFactory as CommunicatorFactory
from ._factory import split_ranks as split_ranks
from ._local import LocalCommunicator as LocalCommunicator
from ._local import LocalFactory as LocalFactory
from ._plan import Plan as Plan
from ._rendezvous import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._rendezvous import Rendezvous as Rendezvous
from ._rendezvous import RendezvousError as RendezvousError
from ._replay import Replay as Replay
from ._replay import ReplayResult as ReplayResult
from ._replay import issue_order as issue_order

# Names whose modules import torch, loaded on first use so that ``import meshtopo`` does not.
_TORCH_NAMES = {
    "TorchCommunicator": "_torch", "TorchFactory": "_torch",
    "device_mesh_to_torch": "_bridge", "device_mesh_from_torch": "_bridge",
    "mesh_process_groups": "_bridge",
}


def __getattr__(name: str) -> object:
    """``TorchFactory``, ``TorchCommunicator`` and the DeviceMesh bridge, imported on use."""
    if name in _TORCH_NAMES:
        import importlib

        return getattr(importlib.import_module(f".{_TORCH_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
