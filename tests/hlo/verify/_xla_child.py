"""Child process: programs through the XLA in jaxlib, and each one's error.

``python _xla_child.py stablehlo|hlo`` reads ``[{"text", "replicas", "partitions"}]`` as JSON
on stdin and prints ``[error text or null]``. StableHLO text is compiled by XLA's client (with
SPMD partitioning when there are partitions); HLO text is first parsed by XLA's HLO parser
(``hlo_module_from_text``) and imported to StableHLO, so any layer's rejection is the error.
Run in its own interpreter (XLA may abort the process on bad input).
"""

from __future__ import annotations

import json
import sys


def main(language: str) -> None:
    import jax
    import jaxlib._hlo as hlo
    import numpy as np
    from jax._src.lib import _jax
    from jax._src.lib import xla_client as xc

    results: list[str | None] = []
    for case in json.loads(sys.stdin.read()):
        replicas, partitions = case["replicas"], case["partitions"]
        options = xc.CompileOptions()
        options.num_replicas = replicas
        options.num_partitions = partitions
        options.device_assignment = xc.DeviceAssignment.create(
            np.arange(replicas * partitions).reshape(replicas, partitions))
        if language == "stablehlo":
            options.executable_build_options.use_spmd_partitioning = partitions > 1
        devices = jax.devices()[: replicas * partitions]
        try:
            program = case["text"]
            if language == "hlo":
                module = hlo.hlo_module_from_text(program)
                program = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
            devices[0].client.compile_and_load(
                program, executable_devices=xc.DeviceList(tuple(devices)),
                compile_options=options)
            results.append(None)
        except Exception as error:  # any layer's rejection is the measurement
            results.append(str(error))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
