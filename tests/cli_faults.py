#!/usr/bin/env python3
"""Device and cache faults through the `gkrt` command (docs/errors.md).

    python tests/cli_faults.py GKRT_BINARY EXAMPLES_DIR WORK_DIR

Each case breaks one thing the way a real machine does and checks the message, the exit
code and what is left on disk:
  - no OpenCL platform (OCL_ICD_VENDORS=/nonexistent: the ICD loader finds no driver);
  - no CUDA driver (GKRT_CUDA_DRIVER=/nonexistent.so);
  - a truncated and a corrupted OpenCL program-cache entry (rebuilt, same outputs);
  - a read-only and a full cache directory, and a file where it should be (GKRT_FAULT
    hooks and a real file: a warning, the run succeeds, nothing half-written is left);
  - an --output-dir that cannot be created, and a full disk under it (non-zero exit, the
    file named, no truncated .npy left).
Cases that need a working OpenCL driver are skipped (and said so) without one."""
import os
import shutil
import subprocess
import sys

import numpy as np

gkrt, examples, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
model = os.path.join(examples, "mynet.gkm")
x = "x=" + os.path.join(examples, "mynet_x.npy")
failures = []


def run(args, env_extra=None):
    env = dict(os.environ)
    env.pop("GKRT_FAULT", None)
    env["GKRT_LOG"] = "warning"
    env.update(env_extra or {})
    r = subprocess.run([gkrt] + args, capture_output=True, text=True, env=env, timeout=300)
    return r.returncode, r.stdout + r.stderr


def check(name, ok, text):
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        print("  output: " + text.replace("\n", "\n  "))
        failures.append(name)


def expect_error(name, args, env, *needles):
    rc, out = run(args, env)
    check(name, rc != 0 and all(n in out for n in needles), f"rc={rc}\n{out}")
    if "Segmentation" in out or "Aborted" in out or rc < 0:
        failures.append(name + " (crashed)")


def outputs(d):
    return {f: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))}


# The reference answer, on cpu.
ref_dir = os.path.join(work, "ref")
rc, out = run(["run", model, "--input", x, "--backend", "cpu", "--output-dir", ref_dir])
if rc != 0:
    sys.exit("the cpu run itself failed:\n" + out)
want = outputs(ref_dir)

# 1. No OpenCL platform: a clear error naming the fix, and `available` leaves opencl out.
expect_error("no OpenCL platform", ["run", model, "--input", x, "--backend", "opencl"],
             {"OCL_ICD_VENDORS": "/nonexistent"}, "opencl: no OpenCL platform found", "--backend cpu")
rc, out = run(["run", model, "--input", x, "--backend", "nonsense"], {"OCL_ICD_VENDORS": "/nonexistent"})
check("no OpenCL platform: opencl not listed as available",
      rc != 0 and "available: reference, cpu" in out and "opencl" not in out.split("available:")[-1], out)

# 2. No CUDA driver.
rc, out = run(["run", model, "--input", x, "--backend", "cuda"], {"GKRT_CUDA_DRIVER": "/nonexistent.so"})
check("no CUDA driver", rc != 0 and ("cuda: unavailable: cannot load the NVIDIA driver library /nonexistent.so" in out
                                     or "not built into this gkrt" in out), out)

# 3-5 need a working OpenCL device.
rc, out = run(["run", model, "--input", x, "--backend", "opencl", "--cache-dir", ""])
if rc != 0:
    print("skip the OpenCL program-cache cases: no usable OpenCL device here:\n  " + out.strip())
else:
    cache = os.path.join(work, "cache")

    def cached_run(name, env=None, cache_dir=cache, warn=None):
        d = os.path.join(work, name.replace(" ", "_"))
        rc, out = run(["run", model, "--input", x, "--backend", "opencl", "--cache-dir", cache_dir,
                       "--output-dir", d], env)
        same = rc == 0 and set(os.listdir(d)) == set(want) and all(
            np.allclose(v, want[k], rtol=1e-4, atol=1e-5) for k, v in outputs(d).items())
        check(name, same and (warn is None or warn in out), f"rc={rc}\n{out}")
        return out

    def entries():
        return sorted(os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs)

    cached_run("cold cache")
    stored = entries()
    check("cold cache: one entry stored", len(stored) == 1 and stored[0].endswith(".clbin"), str(stored))
    good = open(stored[0], "rb").read() if stored else b""
    if stored:
        with open(stored[0], "r+b") as f:
            f.truncate(len(good) // 2)
        cached_run("truncated entry rebuilt", warn="is corrupt; rebuilding it")
        check("truncated entry: rewritten whole", entries() == stored and open(stored[0], "rb").read() == good,
              str(entries()))
        with open(stored[0], "r+b") as f:
            f.seek(len(good) - 3)
            f.write(b"\xff\x00\xff")
        cached_run("corrupted entry rebuilt", warn="is corrupt; rebuilding it")
        check("corrupted entry: rewritten whole", open(stored[0], "rb").read() == good, "")
    for fault, why in (("cache_read_only", "Read-only file system"), ("cache_full", "No space left on device")):
        shutil.rmtree(cache, ignore_errors=True)
        cached_run(fault + ": runs and warns", {"GKRT_FAULT": fault}, warn=why)
        check(fault + ": nothing left in the cache", entries() == [], str(entries()))
    blocked = os.path.join(work, "blocked")
    open(blocked, "w").write("a regular file where the cache directory should be")
    cached_run("cache dir is a file: runs and warns", cache_dir=blocked, warn="cannot write the program cache")

# 6. Output faults: a directory that cannot be created, a full disk.
blocker = os.path.join(work, "file")
open(blocker, "w").write("x")
expect_error("--output-dir under a regular file", ["run", model, "--input", x, "--output-dir", blocker + "/out"], {},
             "--output-dir: cannot create '" + blocker + "/out'", "give a directory you can write to")
full_dir = os.path.join(work, "full")
expect_error("--output-dir on a full disk", ["run", model, "--input", x, "--output-dir", full_dir],
             {"GKRT_FAULT": "output_full"}, "No space left on device", "failed", "--output-dir")
check("full disk: no truncated .npy left", os.path.isdir(full_dir) and os.listdir(full_dir) == [],
      str(os.listdir(full_dir) if os.path.isdir(full_dir) else "no dir"))
if os.geteuid() != 0:  # root writes anywhere: the read-only case is the GKRT_FAULT one above then
    ro = os.path.join(work, "ro")
    os.makedirs(ro)
    os.chmod(ro, 0o500)
    expect_error("read-only --output-dir", ["run", model, "--input", x, "--output-dir", ro], {}, "Permission denied")
    os.chmod(ro, 0o700)
else:
    print("skip read-only --output-dir: running as root, who may write anywhere")

if failures:
    sys.exit(f"{len(failures)} fault case(s) failed: " + ", ".join(failures))
print("all fault cases passed")
