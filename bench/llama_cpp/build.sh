#!/usr/bin/env bash
# Builds llama.cpp, the peer of `bench/llm_bench.py --llama-cpp`, from the llama.cpp that
# the llama-cpp-python sdist on PyPI vendors (pinned, sha256 checked; CMake, CPU only,
# tuned for this machine), once, into a cache folder. A documented benchmark step: not
# part of set-up or CI. About 8 minutes on 2 cores.
#
#   bash bench/llama_cpp/build.sh [CACHE_DIR]     # default ~/.cache/gkrt/llama.cpp-0.3.36
#
# Leaves CACHE_DIR/build/bin/{llama-bench,llama-greedy} (llama-greedy: bench/llama_cpp/
# greedy.cc, greedy token ids and speeds through llama.cpp's C API).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=0.3.36
cache=${1:-${HOME}/.cache/gkrt/llama.cpp-${version}}
mkdir -p "$cache"
src="$cache/src"
if [ ! -f "$src/CMakeLists.txt" ]; then
  python3 "$here/fetch_sdist.py" "$version" "$cache"
fi
cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DBUILD_SHARED_LIBS=ON -DLLAMA_OPENSSL=OFF >"$cache/configure.log"
cmake --build "$cache/build" -j"$(nproc)" --target llama llama-bench >"$cache/build.log"
c++ -O2 -std=c++17 "$here/greedy.cc" -I"$src/include" -I"$src/ggml/include" -L"$cache/build/bin" \
  -Wl,-rpath,"$cache/build/bin" -lllama -lggml -lggml-base -o "$cache/build/bin/llama-greedy"
echo "$cache/build/bin"
