"""Tensor parallelism from the command line, across processes: `gkrt shard` splits the
zoo's transformer block and MiniLM for 2 ranks, `mpirun -np 2 gkrt_tp_run` runs the rank
files over MPI (loopback), and rank 0's outputs equal onnxruntime's on the unsplit model
(the zoo's expected outputs). Rank files run by the wrong number of processes, and a
split into one rank, are clear errors.

    python check_tensor_parallel.py GKRT GKRT_TP_RUN MPIEXEC ZOO_DIR WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np

MODELS = {  # name: extra `gkrt shard` arguments (dynamic dims fixed at the zoo inputs' sizes)
    "transformer_block": [],
    "minilm": ["--input-shape", "input_ids=1,128"],
}


def main():
    gkrt, tp_run, mpiexec, zoo, work = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="1")
    mpi = [mpiexec, "--oversubscribe", "-n"]
    failures = 0
    for name, extra in MODELS.items():
        prefix = os.path.join(work, name)
        r = subprocess.run([gkrt, "shard", os.path.join(zoo, name + ".onnx"), "--ranks", "2", "-o", prefix] + extra,
                           capture_output=True, text=True)
        print(r.stdout.strip())
        if r.returncode != 0:
            print(f"{name}: gkrt shard failed: {r.stderr.strip()}")
            failures += 1
            continue
        inputs = sorted(f for f in os.listdir(zoo) if f.startswith(name + "_input_") and f.endswith(".npy"))
        args = []
        for f in inputs:
            args += ["--input", f"{f[len(name) + 7:-4]}={os.path.join(zoo, f)}"]
        out = os.path.join(work, name + "_out")
        r = subprocess.run(mpi + ["2", tp_run, prefix, "--output-dir", out, "--runs", "3"] + args,
                           capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            print(f"{name}: mpirun -np 2 gkrt_tp_run failed:\n{r.stdout}{r.stderr}")
            failures += 1
            continue
        got = np.load(os.path.join(out, sorted(os.listdir(out))[0]))
        want = np.load(os.path.join(zoo, name + "_expected_0.npy"))
        err = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)
        ok = got.shape == want.shape and err <= 1e-4
        failures += not ok
        timing = r.stdout.strip().splitlines()[0] if r.stdout.strip() else ""
        print(f"{name}: 2 ranks under mpirun, worst error {err:.2e} of the largest output vs onnxruntime "
              f"{'ok' if ok else 'FAILED'} ({timing})")
    # Rank files of 2 ranks run by 3 processes: refused by every rank, naming the files.
    r = subprocess.run(mpi + ["3", tp_run, os.path.join(work, "transformer_block")], capture_output=True, text=True,
                       env=env, timeout=120)
    wrong = r.returncode != 0 and ("not a rank file" in r.stderr or "of 2" in r.stderr or "cannot open" in r.stderr)
    print(f"3 processes on 2 rank files: {'refused' if wrong else 'NOT refused'}: {r.stderr.strip().splitlines()[:1]}")
    failures += not wrong
    r = subprocess.run([gkrt, "shard", os.path.join(zoo, "transformer_block.onnx"), "--ranks", "1", "-o",
                        os.path.join(work, "one")], capture_output=True, text=True)
    one = r.returncode != 0 and "2 or more" in r.stderr
    print(f"--ranks 1: {'refused' if one else 'NOT refused'}: {r.stderr.strip()}")
    failures += not one
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
