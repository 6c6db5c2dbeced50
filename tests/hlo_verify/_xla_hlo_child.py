"""Child process: HLO text through the XLA in jaxlib (parse, import, compile); each one's error.

Reads ``[{"text", "replicas", "partitions"}]`` as JSON on stdin and prints
``[error text or null]``. The text is parsed by XLA's HLO parser (``hlo_module_from_text``),
imported to StableHLO and compiled for CPU devices; any layer's rejection is the error. Run in
its own interpreter (XLA may abort the process on bad input).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
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
        devices = jax.devices()[: replicas * partitions]
        try:
            module = hlo.hlo_module_from_text(case["text"])
            stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
            devices[0].client.compile_and_load(
                stablehlo, executable_devices=xc.DeviceList(tuple(devices)),
                compile_options=options)
            results.append(None)
        except Exception as error:  # any layer's rejection is the measurement
            results.append(str(error))
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
