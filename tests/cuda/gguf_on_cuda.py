#!/usr/bin/env python3
"""GGUF decoders on cuda against the cpu backend (a step of tests/cuda/gpu_suite.sh).

The files are ctest gguf_import's 2-layer decoders from SmolLM2-135M's real weights
(vocabulary cut to 8192; tests/models/check_gguf.py writes them in build/gguf_import/,
tests/cuda/gpu_bundle.sh carries two of them within the device tool's 64 MiB): Q4_1
(unsigned 4-bit values with offsets) and Q6_K (ffn_down as int8 blocks of 16, the other
matrices Q4_0's signed 4-bit values). Each runs `gkrt generate` for 8 greedy tokens after
"The capital of France is" on cuda and on cpu, with float32 activations (the exact dequantization: the
logits must agree within 1e-4 of the largest, the ids equal) and with llama.cpp's int8
activations (both backends quantize each block of 32 the same way; within 5e-2, compared
up to the first step where the ids part, since later steps then see other tokens).

    python3 tests/cuda/gguf_on_cuda.py GKRT DIR

Prints a line a file and activation form, then "gguf on cuda: N of M passed"; exit 1 on
any failure."""
import glob
import os
import subprocess
import sys

import numpy as np

PROMPT = "504,3575,282,4649,314"
STEPS = 8


def generate(gkrt, model, backend, activations, out):
    cmd = [gkrt, "generate", model, "--input-ids", PROMPT, "--max-tokens", str(STEPS), "--max-context", "64",
           "--backend", backend, "--gguf-activations", activations, "--logits-out", out]
    env = dict(os.environ, GKRT_LOG="info")  # the cpu-fallback lines
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{backend}: {r.stderr.strip()[-400:]}")
    fallback = [l for l in r.stderr.splitlines() if "; it runs on the " in l]
    logits = np.load(out)
    return [int(x) for x in r.stdout.split()], logits.reshape(-1, logits.shape[-1]), fallback


def main():
    gkrt, folder = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(folder, "*.gguf")))
    if not files:
        sys.exit(f"no .gguf files in {folder}")
    passed = total = 0
    for path in files:
        tag = os.path.basename(path)[:-5]
        for act, tol in (("float32", 1e-4), ("int8", 5e-2)):
            total += 1
            try:
                ids_cpu, cpu, _ = generate(gkrt, path, "cpu", act, os.path.join(folder, f"{tag}_{act}_cpu.npy"))
                ids_cuda, cuda, fallback = generate(gkrt, path, "cuda", act, os.path.join(folder, f"{tag}_{act}_cuda.npy"))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{tag:12s} {act:7s}: FAIL {e}")
                continue
            same = next((k for k, (a, b) in enumerate(zip(ids_cpu, ids_cuda)) if a != b), min(len(ids_cpu), len(ids_cuda)))
            steps = max(1, same) if act == "int8" else len(cpu)
            err = float(np.max(np.abs(cuda[:steps] - cpu[:steps])) / np.max(np.abs(cpu[:steps])))
            ok = err <= tol and (act == "int8" or ids_cpu == ids_cuda)
            passed += ok
            print(f"{tag:12s} {act:7s}: ids cpu {ids_cpu} cuda {'same' if ids_cpu == ids_cuda else ids_cuda}; "
                  f"max |cuda - cpu| / max |cpu| {err:.2e} over {steps} steps (tolerance {tol:g})"
                  + ("" if ok else "  FAIL") + (f"; {len(fallback)} nodes on the cpu fallback, first: {fallback[0][-160:]}" if fallback else ""))
    print(f"gguf on cuda: {passed} of {total} passed")
    sys.exit(0 if passed == total else 1)


if __name__ == "__main__":
    main()
