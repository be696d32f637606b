"""Turns the wheel `pip wheel .` built with AOTRT_CUDA=ON into the aotrt-cu13 distribution.

scripts/build_wheel.sh --cuda runs it before auditwheel. The CUDA build is a distribution of
its own (pyproject.toml's [tool.aotrt.cuda-wheel] says why), and a [project] table has one
name: this writes the same files under that table's name, description, classifiers and
dependencies (the nvidia-* wheels), with the .dist-info folder renamed and RECORD's hashes
and sizes recomputed. File modes (bin/aotrt is executable) are kept.

    python3 scripts/cuda_wheel_metadata.py build-wheels/raw/aotrt-0.1.0-cp312-abi3-linux_x86_64.whl OUT_DIR
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _metadata(text: str, table: dict) -> str:
    lines = text.split("\n")
    # Headers end at the first blank line; the README (the long description) follows.
    end = lines.index("")
    headers, body = lines[:end], lines[end:]
    out = []
    for line in headers:
        if line.startswith("Name: "):
            line = f"Name: {table['name']}"
        elif line.startswith("Summary: "):
            line = f"Summary: {table['description']}"
        out.append(line)
    last = max(i for i, line in enumerate(out) if line.startswith(("Requires-Dist: ", "Requires-Python: ")))
    out[last + 1:last + 1] = [f"Requires-Dist: {d}" for d in table["dependencies"]]
    last = max(i for i, line in enumerate(out) if line.startswith("Classifier: "))
    out[last + 1:last + 1] = [f"Classifier: {c}" for c in table["classifiers"]]
    return "\n".join(out + body)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def convert(wheel: Path, out_dir: Path) -> Path:
    table = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["aotrt"]["cuda-wheel"]
    name, version, rest = wheel.name.split("-", 2)
    new_name = re.sub(r"[-_.]+", "_", table["name"])
    old_info, new_info = f"{name}-{version}.dist-info/", f"{new_name}-{version}.dist-info/"
    target = out_dir / f"{new_name}-{version}-{rest}"
    record = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            path = info.filename
            if path.startswith(old_info):
                path = new_info + path[len(old_info):]
            if path == new_info + "RECORD":
                continue
            if path == new_info + "METADATA":
                data = _metadata(data.decode(), table).encode()
            new = zipfile.ZipInfo(path, info.date_time)
            new.external_attr = info.external_attr
            new.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(new, data)
            record.append(_record_line(path, data))
        record.append(f"{new_info}RECORD,,")
        info = zipfile.ZipInfo(new_info + "RECORD", (1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        dst.writestr(info, "\n".join(record) + "\n", zipfile.ZIP_DEFLATED)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(convert(Path(sys.argv[1]), Path(sys.argv[2])))
