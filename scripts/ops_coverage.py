#!/usr/bin/env python3
"""Which of torch's generated C-shim functions aotrt serves: docs/ops/coverage.md.

Reads torch's generated headers (c_shim_{cpu,cuda,aten}.h of the installed torch; another
torch version's with --headers VERSION=DIR, whose names and signatures are then kept in
docs/ops/torch-VERSION-shims.txt and read from there on machines without them), the op rows of src/shim/ops/*.cpp
(Note [Op rows] in src/shim/ops/op_row.h) and what a built libaotrt.so exports, then:
  - checks every row's C signature against the header that declares its name, token for
    token (a row is the header's parameter list copied as it is);
  - checks every row names a function of some header (no typo reaches the ABI);
  - checks the library exports exactly the rows of the devices it was built for: a
    CPU-only build exports no aoti_torch_cuda_* op (aotrt info would call it provided);
  - writes (or with --check compares) docs/ops/coverage.md: every shim of every header,
    served or not, and why not.
Prints what is missing. Exit status 1 on any failed check.

    python3 scripts/ops_coverage.py --build build            # rewrite the doc
    python3 scripts/ops_coverage.py --build build --check    # CI: fail if it is stale
    python3 scripts/ops_coverage.py --build build --headers 2.11=/path/to/generated
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ops" / "coverage.md"
HEADERS = ("c_shim_cpu.h", "c_shim_cuda.h", "c_shim_aten.h")
PREFIX = {"cpu": "aoti_torch_cpu_", "cuda": "aoti_torch_cuda_", "aten": "aoti_torch_aten_",
          "generic": "aoti_torch_"}

# Why a shim is not served: src/shim/ops/not_served.def, which the loader reads too (a package
# importing one is refused with that reason). The first matching pattern (searched in the name
# after the device prefix) wins.
NOT_SERVED_DEF = REPO / "src" / "shim" / "ops" / "not_served.def"


def read_not_served(path: Path = NOT_SERVED_DEF) -> list[tuple[str, str]]:
    """(pattern, reason) of every AOTRT_NOT_SERVED entry: a raw-string pattern, then the reason's
    string literals, concatenated."""
    text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//"))
    out = []
    for m in re.finditer(r'AOTRT_NOT_SERVED\(\s*R"\((.*?)\)"\s*,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)', text, re.S):
        reason = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2)))
        out.append((m.group(1), reason.replace('\\"', '"')))
    if not out:
        raise SystemExit(f"ops_coverage: no AOTRT_NOT_SERVED entry read from {path}")
    return out


NOT_SERVED = read_not_served()


def torch_generated_dir() -> Path:
    import torch  # noqa: PLC0415  (only this function needs torch)

    return Path(torch.__file__).parent / "include/torch/csrc/inductor/aoti_torch/generated"


def norm(params: str) -> str:
    """A parameter list as tokens joined by single spaces, so layout does not matter."""
    return " ".join(re.findall(r"[A-Za-z_]\w*|\d+|\S", params))


def parse_header(path: Path) -> dict[str, dict]:
    """name -> {params, since}: every AOTI_TORCH_EXPORT function of a generated header."""
    out: dict[str, dict] = {}
    since = None
    for line in path.read_text().splitlines():
        m = re.match(r"#if TORCH_FEATURE_VERSION >= TORCH_VERSION_(\d+)_(\d+)_\d+", line)
        if m:
            since = f"{m.group(1)}.{m.group(2)}"
            continue
        if line.startswith("#endif"):
            since = None
            continue
        m = re.match(r"AOTI_TORCH_EXPORT AOTITorchError (\w+)\((.*)\);", line)
        if m:
            out[m.group(1)] = {"params": norm(m.group(2)), "since": since}
    return out


def parse_c_shim(path: Path) -> dict[str, dict]:
    """name -> {params, since}: the functions of torch's c/shim.h (declarations span lines)."""
    text = re.sub(r"//[^\n]*", "", path.read_text())
    out = {}
    for m in re.finditer(r"AOTI_TORCH_EXPORT\s+AOTITorchError\s+(\w+)\s*\(", text):
        params, _ = balanced(text, m.end() - 1)
        out[m.group(1)] = {"params": norm(params), "since": None}
    return out


def read_names_file(path: Path) -> dict[str, dict[str, dict]]:
    """header -> name -> {params, since} from a docs/ops/torch-VERSION-shims.txt."""
    out: dict[str, dict[str, dict]] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        header, name, params = line.split("\t")
        out.setdefault(header, {})[name] = {"params": params, "since": None}
    return out


def write_names_file(path: Path, version: str, headers: dict[str, dict[str, dict]]) -> None:
    lines = [f"# The aoti_torch_* functions of torch {version}'s generated C-shim headers: header, name and",
             "# parameter list (tokens), tab-separated. Written by scripts/ops_coverage.py --headers."]
    for h, funcs in headers.items():
        lines += [f"{h}\t{n}\t{f['params']}" for n, f in sorted(funcs.items())]
    path.write_text("\n".join(lines) + "\n")


def balanced(text: str, start: int) -> tuple[str, int]:
    """The text inside the parentheses opening at text[start], and the index after them."""
    assert text[start] == "("
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i], i + 1
    raise ValueError("unbalanced parentheses")


def parse_rows(shim_dir: Path) -> dict[str, dict]:
    """Full entry-point name -> {params, file, alias_of}, from the op rows."""
    rows: dict[str, dict] = {}
    pat = re.compile(r"^\s*AOTRT_OP(_CPU|_CUDA|_ATEN|_GENERIC|_ALIAS|_ALIAS_CPU|_ALIAS_CUDA)?\(\s*(\w+)\s*,\s*(\w+\s*,\s*)?\(",
                     re.M)
    for f in sorted(shim_dir.glob("*.cpp")):
        text = f.read_text()
        for m in pat.finditer(text):
            kind, name = m.group(1) or "", m.group(2)
            target = m.group(3).strip(" ,") if m.group(3) else None
            params, _ = balanced(text, m.end() - 1)
            if "ALIAS" in kind:
                devices = {"_ALIAS": ["cpu", "cuda"], "_ALIAS_CPU": ["cpu"], "_ALIAS_CUDA": ["cuda"]}[kind]
            else:
                devices = {"": ["cpu", "cuda"], "_CPU": ["cpu"], "_CUDA": ["cuda"], "_ATEN": ["aten"],
                           "_GENERIC": ["generic"]}[kind]
            for d in devices:
                full = PREFIX[d] + name
                if full in rows:
                    raise SystemExit(f"{f}: {full} has two rows")
                rows[full] = {"params": norm(params), "file": f.relative_to(REPO).as_posix(),
                              "alias_of": PREFIX[d] + target if target else None}
    return rows


# Families that need no kernels of their own (views, broadcast copies): served on every device.
KERNEL_FREE = {"views", "shape"}


def cuda_kernel_families() -> set[str]:
    """Families whose CUDA kernel file registers a table (Note [Op dispatch])."""
    out = set()
    for f in list((REPO / "src" / "cuda" / "ops").glob("*.cu")) + list((REPO / "src" / "cuda" / "ops").glob("*.cpp")):
        if re.search(r"AOTRT_REGISTER_KERNELS\(\s*\w+\s*,\s*cuda\b", f.read_text()):
            out.add(f.stem)
    return out


def has_kernels(name: str, row: dict, cuda_families: set[str]) -> bool:
    if not name.startswith(PREFIX["cuda"]):
        return True
    family = Path(row["file"]).stem
    return family in KERNEL_FREE or family in cuda_families


def exported(lib: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def reason(short: str) -> str:
    for pat, why in NOT_SERVED:
        if re.search(pat, short):
            return why
    return "not written yet"


def render(versions: dict[str, dict[str, dict[str, dict]]], rows: dict[str, dict],
           cuda_families: set[str]) -> str:
    """Summary per version and header; one table per header of the installed torch (the
    first version), with a column per other version: same signature, absent or differs."""
    lines = ["# C-shim coverage", "",
             "Every function of torch's generated `c_shim_{cpu,cuda,aten}.h`, and whether aotrt serves it.",
             "Generated by `python3 scripts/ops_coverage.py --build build` from the op rows of",
             "`src/shim/ops/*.cpp` (Note [Op rows]); `tests/e2e/test_shim_coverage.py` fails when it is",
             "stale, when a row's signature differs from torch's header, or when the library exports",
             "something else. CUDA rows are compiled only with `-DAOTRT_CUDA=ON`.", ""]
    summary = ["| torch | header | functions | served |", "|---|---|---:|---:|"]
    for ver, headers in versions.items():
        for hname, funcs in headers.items():
            served = [n for n in funcs if n in rows and has_kernels(n, rows[n], cuda_families)]
            entry_only = [n for n in funcs if n in rows and n not in served]
            note = f" (+{len(entry_only)} entry points awaiting CUDA kernels)" if entry_only else ""
            summary.append(f"| {ver} | {hname} | {len(funcs)} | {len(served)}{note} |")
    first, *others = versions
    tables = []
    for hname, funcs in versions[first].items():
        cols = "".join(f" torch {v} |" for v in others)
        t = [f"## torch {first}: {hname}", "", f"| function | served |{cols} where / why not |",
             "|---|---|" + "---|" * len(others) + "---|"]
        for n in sorted(funcs):
            other = ""
            for v in others:
                theirs = versions[v].get(hname, {}).get(n)
                other += " |" + (" absent" if theirs is None else
                                 " same" if theirs["params"] == funcs[n]["params"] else " differs")
            if n in rows and not has_kernels(n, rows[n], cuda_families):
                fam = Path(rows[n]["file"]).stem
                t.append(f"| `{n}` | no{other} | entry point in `{rows[n]['file']}`; no CUDA kernels "
                         f"registered for the {fam} family yet (`src/cuda/ops/{fam}.cu` not written); "
                         "refused with \"no CUDA kernel\" |")
            elif n in rows:
                r = rows[n]
                where = f"`{r['file']}`" + (f" (alias of `{r['alias_of']}`)" if r["alias_of"] else "")
                t.append(f"| `{n}` | yes{other} | {where} |")
            else:
                short = re.sub(r"^aoti_torch_(cpu|cuda|aten)_", "", n)
                t.append(f"| `{n}` | no{other} | {reason(short)} |")
        tables += t + [""]
    generic = sorted(n for n in rows if not any(n.startswith(PREFIX[d]) for d in ("cpu", "cuda", "aten")))
    if generic:
        tables += [f"## torch {first}: c/shim.h fallback ops", "",
                   "Device-generic ops of torch's own `c/shim.h` that generated code may call:", "",
                   "| function | where |", "|---|---|"]
        tables += [f"| `{n}` | `{rows[n]['file']}` |" for n in generic] + [""]
    return "\n".join(lines + summary + [""] + tables + proxy_section())


def proxy_section() -> list[str]:
    """The ops aotrt serves through its proxy executor (ops without a C shim; Note [Proxy
    executor]), from the AOTRT_PROXY_OP rows of src/shim/ops/*.cpp."""
    out = ["## Ops without a C shim (proxy executor)", "",
           "Inductor calls these through `aoti_torch_proxy_executor_call_function`; a package",
           "naming any other is refused at load time, naming it.", "",
           "| op | devices | where |", "|---|---|---|"]
    found = []
    for f in sorted((REPO / "src/shim/ops").glob("*.cpp")):
        for m in re.finditer(r'AOTRT_PROXY_OP\(\s*"([^"]+)",\s*\{[^}]*\},\s*([^,]+),', f.read_text()):
            devices = " + ".join(d for d, k in (("cpu", "Cpu"), ("cuda", "Cuda")) if k in m.group(2))
            found.append(f"| `{m.group(1)}` | {devices} | `{f.relative_to(REPO)}` |")
    return out + sorted(found) + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build dir holding libaotrt.so")
    ap.add_argument("--headers", action="append", default=[],
                    help="VERSION=DIR: generated headers of another torch version (repeatable)")
    ap.add_argument("--check", action="store_true", help="compare with the committed doc instead of writing it")
    a = ap.parse_args()

    import torch  # noqa: PLC0415

    installed = torch.__version__.split("+")[0]
    versions = {installed: {h: parse_header(torch_generated_dir() / h) for h in HEADERS}}
    given = {}
    for spec in a.headers:
        ver, _, d = spec.partition("=")
        given[ver] = {h: parse_header(Path(d) / h) for h in HEADERS if (Path(d) / h).exists()}
        write_names_file(DOC.parent / f"torch-{ver}-shims.txt", ver, given[ver])
    for f in sorted(DOC.parent.glob("torch-*-shims.txt")):
        ver = f.name[len("torch-"):-len("-shims.txt")]
        if ver != installed:
            versions[ver] = given.get(ver) or read_names_file(f)
    rows = parse_rows(REPO / "src" / "shim" / "ops")
    errors: list[str] = []

    # Signatures: each row against every header that declares its name.
    declared: dict[str, list[tuple[str, str]]] = {}
    for ver, headers in versions.items():
        for funcs in headers.values():
            for n, f in funcs.items():
                declared.setdefault(n, []).append((ver, f["params"]))
    c_shim = parse_c_shim(torch_generated_dir().parent / "c" / "shim.h")
    for n, f in c_shim.items():
        if rows.get(n, {}).get("file") and not any(n.startswith(PREFIX[d]) for d in ("cpu", "cuda", "aten")):
            declared.setdefault(n, []).append((installed + " c/shim.h", f["params"]))
    # The hand-written c/shim_cpu.h: the fused oneDNN ops of freezing=True packages.
    for n, f in parse_c_shim(torch_generated_dir().parent / "c" / "shim_cpu.h").items():
        if n in rows and n not in declared:
            declared.setdefault(n, []).append((installed + " c/shim_cpu.h", f["params"]))
    for n, r in sorted(rows.items()):
        if n not in declared:
            errors.append(f"{n} ({r['file']}) is in no torch header given")
        for ver, params in declared.get(n, []):
            if params != r["params"]:
                errors.append(f"{n} ({r['file']}): signature differs from torch {ver}'s header\n"
                              f"  header: ({params})\n  row:    ({r['params']})")

    # Exports.
    lib = Path(a.build) / "libaotrt.so"
    cache = Path(a.build) / "CMakeCache.txt"
    cuda_built = cache.exists() and re.search(r"^AOTRT_CUDA:BOOL=(ON|1|TRUE)", cache.read_text(), re.M)
    syms = exported(lib)
    for n in sorted(rows):
        want = not n.startswith(PREFIX["cuda"]) or cuda_built
        if want and n not in syms:
            errors.append(f"{n} has a row but {lib} does not export it")
        if not want and n in syms:
            errors.append(f"{n} is exported by a build without CUDA")
    for s in sorted(syms):
        if s in declared and s not in rows:
            errors.append(f"{s} is exported but has no op row (entry points come from src/shim/ops)")

    text = render(versions, rows, cuda_kernel_families())
    if a.check:
        if not DOC.exists() or DOC.read_text() != text:
            errors.append(f"{DOC.relative_to(REPO)} is stale: run python3 scripts/ops_coverage.py --build {a.build}")
    else:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text)

    for ver, headers in versions.items():
        for hname, funcs in headers.items():
            missing = sorted(n for n in funcs if n not in rows or not has_kernels(n, rows[n], cuda_kernel_families()))
            short = [re.sub(r"^aoti_torch_(cpu|cuda|aten)_", "", n) for n in missing]
            print(f"torch {ver} {hname}: {len(funcs) - len(missing)}/{len(funcs)} served; missing: "
                  + (" ".join(short) if short else "none"))
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
