"""Python tooling for aotrt: export models to AOTInductor `.pt2` packages that aotrt can run.

- `aotrt_tools.export`: `export_package(...)` and the `python -m aotrt_tools.export` CLI.
- `aotrt_tools.zoo`: small reference models with their example inputs and tolerances.
- `aotrt_tools.discover`: exports the whole zoo and reports what the compiled `.so` files import.
- `aotrt_tools.demo`: export one model, run it with `build/aotrt`, compare against eager.

Only `export` and `zoo` import torch at module level; nothing here needs a GPU.
"""
