"""Runs a command only where the cuda backend is usable; else prints why and exits 77
(ctest SKIP_RETURN_CODE).

    run_if_cuda.py GKRT EXAMPLES_DIR -- COMMAND ARGS...
"""
import subprocess
import sys

gkrt, examples, sep, *command = sys.argv[1:]
if sep != "--" or not command:
    sys.exit("usage: run_if_cuda.py GKRT EXAMPLES_DIR -- COMMAND ARGS...")
probe = subprocess.run([gkrt, "run", f"{examples}/mynet.gkm", "--input", f"x={examples}/mynet_x.npy", "--backend", "cuda"],
                       capture_output=True, text=True)
said = probe.stdout + probe.stderr
if "cuda: unavailable:" in said:
    print("skipped: " + said[said.index("cuda: unavailable:"):].strip())
    sys.exit(77)
if probe.returncode != 0:
    sys.exit("gkrt run --backend cuda failed:\n" + said)
sys.exit(subprocess.run(command).returncode)
