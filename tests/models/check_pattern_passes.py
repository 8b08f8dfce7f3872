#!/usr/bin/env python3
"""The Appendix 3 pattern passes on the zoo's transformer block and MiniLM (cpu backend):
`gkrt dump --json` must list the attention, add+LayerNorm and matmul-epilogue passes as
fired under the cpu profile's defaults (the attention passes are on there since session 9,
docs/fusion-and-flags.md), and the kernel count with them must be at most half the count without them.

    python tests/models/check_pattern_passes.py GKRT ZOO_DIR"""
import json
import os
import subprocess
import sys
import tempfile

GKRT, ZOO = sys.argv[1], sys.argv[2]
PATTERNS = ("FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion,add_layer_norm_v3_fusion,"
            "add_layer_norm_ext_fusion,matmul_elem_biasadd_fusion,matmul_elem_add_fusion,matmul_elem_relu_fusion,"
            "matmul_elem_gelu_fusion,inference_matmul_split_fusion,inference_swiglu_fusion")
EXPECTED = {"transformer_block": {"FlashAttentionFusionV2", "add_layer_norm_fusion", "matmul_elem_biasadd_fusion",
                                  "matmul_elem_gelu_fusion"},
            "minilm": {"FlashAttentionFusionV1", "add_layer_norm_fusion", "matmul_elem_biasadd_fusion",
                       "matmul_elem_gelu_fusion"}}


def dump(gkm, flags):
    cmd = [GKRT, "dump", gkm, "--backend", "cpu", "--json"] + (["--flags", flags] if flags else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


ok = True
with tempfile.TemporaryDirectory() as d:
    for name, want in EXPECTED.items():
        gkm = os.path.join(d, name + ".gkm")
        subprocess.run([GKRT, "convert", os.path.join(ZOO, name + ".onnx"), "-o", gkm], check=True,
                       stdout=subprocess.DEVNULL)
        on = dump(gkm, "")
        off = dump(gkm, "--disable_pass=" + PATTERNS)
        fired = set(on["pattern_passes_fired"])
        good = want <= fired and not off["pattern_passes_fired"] and 2 * on["kernels"] <= off["kernels"]
        ok = ok and good
        print(f"{name}: {off['kernels']} kernels without the pattern passes, {on['kernels']} with; fired "
              f"{sorted(fired)}{'' if good else '  <-- FAIL (need ' + str(sorted(want)) + ' and at most half)'}")
sys.exit(0 if ok else 1)
