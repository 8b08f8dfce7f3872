#!/bin/bash
# The cuda backend's suites on a GPU machine (the device tool's H100), from the bundle
# tests/cuda/gpu_bundle.sh made on the build machine: the backend's own tests, the
# golden op cases, ONNX conformance, the differential fusion fuzzer and the zoo models
# on `cuda`, then the speed targets against PyTorch (bench/cuda_vs_torch.py).
# Logs go to $OUT (summary.txt, logs.tar.gz).
#
#   tests/cuda/gpu_suite.sh [STEPS]     STEPS: comma-separated of
#       probe,backend,golden,conformance,fuzz,zoo,models,bench
#
# One device call holds 10 minutes, so run it in three calls:
#   tests/cuda/gpu_suite.sh probe,backend,conformance,zoo,models,bench   (~6 min)
#   tests/cuda/gpu_suite.sh golden        (~4 min: 6 shards of the cuda golden cases)
#   FUZZ_SEED=1 tests/cuda/gpu_suite.sh fuzz   (~4 min: 3 x 40 graphs, 40 pattern graphs)
# Every CUDA context on the GPU is time-sliced against the others: a dozen test
# processes side by side made each small-kernel run many times slower (first session:
# steps timed out that pass alone), so keep the GPU processes of one call to ~6-8.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
steps=",${1:-probe,backend,golden,conformance,fuzz,zoo,models,bench},"
OUT=${OUT:-/tmp/gkrt_gpu_out}
mkdir -p "$OUT" /tmp/gkrt_gpu/logs
g=/tmp/gkrt_gpu
L=$g/logs
[ -d $g/bin ] || tar -C $g -xJf .gpu/bundle.tar.xz
# The test binaries name /work/main/build/examples (compiled in): point it at the bundle.
if [ ! -e /work/main/build ]; then mkdir -p /work/main && ln -s $g/build /work/main/build; fi
libdir() {  # the folder of library $1: the loader's cache, else the toolkit's and pip's folders
  local p=$(ldconfig -p | awk -v l="$1" '$1 == l { print $NF; exit }')
  [ -n "$p" ] || p=$(find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib \( -type f -o -type l \) -name "$1" 2>/dev/null | head -1)
  [ -n "$p" ] && dirname "$p"
}
cuda_libs=$(for l in libnvrtc.so.13 libcublasLt.so.13 libcudnn.so.9; do libdir $l; done | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$g/lib:$cuda_libs${LD_LIBRARY_PATH:-}
export GKRT_CACHE_DIR=$g/cache  # (defaultProgramCacheDir reads GKRT_CACHE_DIR)
B=$g/bin
PY=$(command -v python3)
summary=$OUT/summary.txt
: > $summary
start=$(date +%s)
note() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a $summary; }
want() { [[ $steps == *",$1,"* ]]; }
# run NAME TIMEOUT CMD...: one step, its log in $L/NAME.log, its exit code in the summary
run() {
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout $t "$@" > $L/$name.log 2>&1
  local rc=$?
  note "$name: exit $rc in $(( $(date +%s) - s )) s :: $(grep -v '^\s*$' $L/$name.log | tail -1 | cut -c1-220)"
  return $rc
}

if want probe; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a $summary
  note "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  run mynet 60 $B/gkrt run build/examples/mynet.gkm --input x=build/examples/mynet_x.npy --backend cuda --print
  cat $L/mynet.log | head -20 >> $summary
fi
if want backend; then
  run cuda_backend_tests 120 $B/gkrt_cuda_backend_tests
  # The rendered pattern kernels (FlashAttention, AddLayerNorm/AddRmsNorm, SwiGLU, ...),
  # Split/Resize/GlobalAvgPool and one-rank (MatMul)AllReduce on cuda
  # against the reference, as on opencl: these tests run every available backend.
  run pattern_kernels 240 $B/gkrt_unit_tests --gtest_filter='FlashAttentionKernels.*:Pattern*:MovementKernels.*:TensorParallel.OneDevice*'
fi

pids=()
if want golden; then
  for k in $(seq 0 5); do  # the cuda cases only (reference and cpu run in CI), in 6 shards
    GKRT_GOLDEN_DIR=$g/build/golden GKRT_GOLDEN_BACKENDS=cuda GKRT_GOLDEN_SHARD=$k/6 \
      run golden_$k 480 $B/gkrt_unit_tests --gtest_filter='OpGolden.*' & pids+=($!)
  done
fi
if want conformance; then
  for k in $(seq 0 5); do
    GKRT_CONFORMANCE_BACKENDS=cuda run conformance_$k 300 $B/onnx_conformance $g/build/onnx_node_tests tests/conformance/expected_results.txt --shard $k/6 & pids+=($!)
  done
fi
if want fuzz; then
  for k in 0 1 2; do
    run fuzz_$k 480 $B/fuzz_fusion --seed $((${FUZZ_SEED:-1} + 40 * k)) --count 40 --backends cuda --out $L/fuzz_failures & pids+=($!)
  done
  # transformer-like graphs of the pattern motifs: the rendered pattern kernels on cuda
  run fuzz_patterns 480 $B/fuzz_fusion --patterns --seed ${FUZZ_SEED:-1} --count 40 --backends cuda --out $L/fuzz_failures & pids+=($!)
fi
if want zoo; then
  run zoo 300 $PY tests/models/check_models.py $B/gkrt $g/build/zoo --backends cuda --gkm-suffix .cuda & pids+=($!)
fi
if want models; then
  ( run make_models 150 $PY tests/cuda/make_gpu_models.py $g/models &&
    run zoo_big 150 $PY tests/models/check_models.py $B/gkrt $g/models --backends cuda --gkm-suffix .cuda ) & pids+=($!)
fi
for p in "${pids[@]}"; do wait $p; done

# Stitching plus the GEMM-epilogue pattern passes (off by default under the GPU column).
GEMM_EPILOGUES="--opt_level=3 --enable_pass=matmul_elem_biasadd_fusion,matmul_elem_add_fusion"
if want bench; then
  args=(--gkrt $B/gkrt --block-gkm $g/build/zoo/transformer_block.cuda.gkm --weights $g/build/zoo/transformer_block_weights.npz
        --input $g/build/zoo/transformer_block_input_x.npy --expected $g/build/zoo/transformer_block_expected_0.npy
        --myop-gkm $g/build/bench/myop_16m.gkm)
  [ -f $g/build/zoo/transformer_block.cuda.gkm ] || $B/gkrt convert $g/build/zoo/transformer_block.onnx -o $g/build/zoo/transformer_block.cuda.gkm > /dev/null
  for m in resnet:resnet50 mobilenet:mobilenet_v3 minilm:minilm; do
    [ -f $g/models/${m#*:}.cuda.gkm ] && args+=(--${m%%:*}-gkm $g/models/${m#*:}.cuda.gkm)
  done
  PYTHONUNBUFFERED=1 run bench 180 $PY bench/cuda_vs_torch.py "${args[@]}"
  cat $L/bench.log >> $summary
  # Where the time goes: per-kernel CUDA-event timings.
  prof() { $B/gkrt bench "$@" --backend cuda --profile --iterations 50 --warmup 5; }
  {
    prof $g/build/zoo/transformer_block.cuda.gkm --input x=$g/build/zoo/transformer_block_input_x.npy
    MS_DEV_GRAPH_KERNEL_FLAGS="$GEMM_EPILOGUES" prof $g/build/zoo/transformer_block.cuda.gkm --input x=$g/build/zoo/transformer_block_input_x.npy
    MS_DEV_GRAPH_KERNEL_FLAGS="$GEMM_EPILOGUES,FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion" \
      prof $g/build/zoo/transformer_block.cuda.gkm --input x=$g/build/zoo/transformer_block_input_x.npy
    [ -f $g/models/minilm.cuda.gkm ] && prof $g/models/minilm.cuda.gkm --input input_ids=$g/models/minilm_input_input_ids.npy \
      --input attention_mask=$g/models/minilm_input_attention_mask.npy --input token_type_ids=$g/models/minilm_input_token_type_ids.npy
    [ -f $g/models/resnet50.cuda.gkm ] && prof $g/models/resnet50.cuda.gkm --input x=$g/models/resnet50_input_x.npy
  } > $L/profile.log 2>&1
  note "profile: exit $?"
  cp $L/profile.log $OUT/profile.txt
fi
grep -h -A3 -E "FAILED|Failure|mismatch|error" $L/*.log | head -150 > $OUT/failures.txt
tar -C $L -czf $OUT/logs.tar.gz .
note "done"
