"""Python tooling for aotrt: export models to AOTInductor `.pt2` packages that aotrt can run.

- `aotrt_tools.export`: `export_package(...)` and the `python -m aotrt_tools.export` CLI.
- `aotrt_tools.zoo`: reference models (CPU and GPU zoo) with inputs, options and tolerances.
- `aotrt_tools.gpu_models`: the hand-written GPU zoo networks (YOLOv8n, C2PSA, GPT-2).
- `aotrt_tools.wrapper`: reads the generated wrapper .cpp (fallback calls and their views).
- `aotrt_tools.e2e`: export the zoo for a device, run it with `aotrt run`, report a table.
- `aotrt_tools.discover`: exports the CPU zoo and reports what the compiled `.so` files import.
- `aotrt_tools.demo`: export one model, run it with `build/aotrt`, compare against eager.

Modules import torch at module level where they need it; torchvision is imported only when a
torchvision zoo model is built.
"""
