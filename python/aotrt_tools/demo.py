"""Demo: export one small model, run it with aotrt, compare with PyTorch eager.

    PYTHONPATH=python python3 -m aotrt_tools.demo [--model linear_chunk_cat_last_dim] [--aotrt build/aotrt]

Exits 0 if every output is within the model's tolerance (numpy allclose semantics), 1 if
not, 2 if aotrt is missing or fails. The default model is the seed case: a Linear whose
output is chunked along the last dim (non-packed views at an offset), each chunk through
another Linear writing into one cat buffer.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="linear_chunk_cat_last_dim", help="zoo model name")
    parser.add_argument("--aotrt", default=os.environ.get("AOTRT_BIN", str(REPO / "build" / "aotrt")))
    parser.add_argument("--workdir", help="keep files here (default: a temporary directory)")
    args = parser.parse_args(argv)

    aotrt = Path(args.aotrt)
    if not (aotrt.is_file() and os.access(aotrt, os.X_OK)):
        print(f"aotrt not found at {aotrt}; build it or pass --aotrt / set AOTRT_BIN", file=sys.stderr)
        return 2

    import numpy as np

    from . import export, zoo

    with tempfile.TemporaryDirectory(prefix="aotrt_demo_") as tmp:
        work = Path(args.workdir or tmp)
        info = export.export_model(work, name=args.model)
        print(f"exported {args.model} in {info['total_s']} s -> {info['package']}")
        print(f"  shims imported: {len(info['undefined']['shim'])}, fallback ops: "
              f"{[s for s in info['undefined']['shim'] if s.startswith('aoti_torch_cpu_')]}")

        out_dir = work / "out"
        cmd = [str(aotrt), "run", info["package"]]
        k = 0
        while (p := work / f"{args.model}.input_{k}.npy").exists():
            cmd += ["--input", str(p)]
            k += 1
        cmd += ["--output-dir", str(out_dir)]
        print("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env={**os.environ, "AOTI_RUNTIME_CHECK_INPUTS": "1"})
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            print(f"aotrt run exited with {proc.returncode}", file=sys.stderr)
            return 2

        tol = zoo.entry(args.model)
        ok = True
        k = 0
        while (p := work / f"{args.model}.expected_{k}.npy").exists():
            want = np.load(p)
            got_path = out_dir / f"output_{k}.npy"
            if not got_path.exists():
                print(f"output_{k}: missing ({got_path})")
                ok = False
            else:
                got = np.load(got_path)
                if got.shape != want.shape or got.dtype != want.dtype:
                    print(f"output_{k}: got {got.dtype}{list(got.shape)}, eager {want.dtype}{list(want.shape)}")
                    ok = False
                else:
                    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
                    close = bool(np.allclose(got, want, rtol=tol.rtol, atol=tol.atol))
                    print(f"output_{k}: max abs diff {diff:.3g} vs eager (atol {tol.atol:g}, rtol {tol.rtol:g}): "
                          f"{'OK' if close else 'TOO LARGE'}")
                    ok &= close
            k += 1
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
