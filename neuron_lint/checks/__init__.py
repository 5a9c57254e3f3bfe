"""Python matchers, one module per rule (or per family of closely related ones).

Each module registers its matchers in :data:`neuron_lint.catalog.registry.MATCHERS` when imported; importing
this package imports them all. A matcher uses only the public API of
:class:`neuron_lint.engine.semantic.SemanticModel`.
"""

from . import (  # noqa: F401  (each registers its matchers)
    compile_settings,
    complex_dtype,
    cuda_environment,
    cuda_extension,
    cuda_module_reference,
    cuda_string_indirect,
    cuda_tensor_type,
    ddp_device_ids,
    device_comparison,
    device_strings,
    float64,
    generate_cache,
    grad_scaler,
    inductor_options,
    int64_range,
    tensor_is_cuda,
    xla,
)
