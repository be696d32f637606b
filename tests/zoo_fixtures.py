"""tests/e2e's zoo fixtures (zoo_exports, exported) for the suites that run zoo packages through
another front end: tests/python (the installed package) and tests/wheel (the wheel). Their
conftests import this module (the repository root on sys.path) rather than tests/e2e/conftest.py,
which pytest would otherwise collect once more under the same name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_NAME = "aotrt_e2e_conftest"


def e2e_conftest():
    """tests/e2e/conftest.py as a module of its own name, loaded once per process."""
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).parent / "e2e" / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]
