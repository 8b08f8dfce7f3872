#!/bin/bash
# The cuda backend on a GPU machine, in TWO calls of the device tool made back to back (the
# machine stays warm between them): phases 1-4 (`gpu_suite.sh`, at most 390 s), then
# `gpu_suite.sh llm,bench` (at most 480 s); from the bundle tests/cuda/gpu_bundle.sh made on
# the build machine, in this order, each phase within a stated budget (the steps of a phase
# run side by side; a step that runs out of its budget is stopped and reports what it
# finished). GKRT_GPU_DEADLINE=S caps the whole call at S seconds: each step's budget
# shrinks to what is left (15 s kept for the summary), and a step with under 10 s left is
# skipped and says so.
#
#   phase  steps                                                  budget
#   1      probe (nvidia-smi; the seeds' MyNet on cuda)              30 s
#   2      backend (gkrt_cuda_backend_tests), kernels (the movement
#          and pattern kernels against the reference, every backend;
#          4 GoogleTest shards side by side)                         140 s
#   3      golden (the op cases on cuda, 6 shards: as many as fit,
#          the count reported), conformance (ONNX node tests, 3 shards) 120 s
#   4      fuzz (100 random graphs, 2 x 50), fuzz_patterns (40 pattern
#          graphs, 2 x 20), zoo (the small zoo), patterns (the block and
#          MiniLM with every attention/norm/epilogue pass on), real (the
#          real-weight models of the bundle, ResNet-50/MobileNet-v3/
#          MiniLM made there), gguf (ctest gguf_import's 2-layer
#          GGUF decoders from SmolLM2's real weights, Q4_1 and
#          Q6_K+Q4_0: cuda against cpu, tests/cuda/
#          gguf_on_cuda.py)                                           100 s
#   5      llm (SmolLM2's decoder, fp32 and int4, random weights made
#          there: cuda against the cpu backend and the PyTorch decoder
#          in a CUDA graph, tests/cuda/llm_vs_torch.sh)              300 s
#          bench (bench/cuda_vs_torch.py: gkrt vs PyTorch in one run;
#          then the per-kernel profiles)                         140 + 40 s
#
# The summary table goes to stdout and $OUT/summary.md; the logs to $OUT/logs.tar.gz,
# the failures' context to $OUT/failures.txt.
#
#   tests/cuda/gpu_suite.sh [STEPS]   STEPS: comma-separated subset of
#       probe,backend,kernels,golden,conformance,fuzz,fuzz_patterns,zoo,patterns,real,gguf,llm,bench
#       (default: every step but llm and bench, the second call's)
#   GKRT_GPU_BUDGET_SCALE=2 doubles every budget (a rerun of a subset with time to spare);
#   GKRT_GPU_MODELS=resnet50,mobilenet_v3 makes only those of the big models (default: and minilm).
#   KERNELS_FILTER='FlashAttentionKernels.*' narrows the kernels step.
#
# Every CUDA context on the GPU is time-sliced against the others: a dozen test processes
# side by side made each small-kernel run many times slower (first GPU session), so no
# phase runs more than ~9 GPU processes. The ResNet-50/MobileNet/MiniLM export (torch, cpu)
# runs in the background from the start and is ready by phase 4.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
steps=",${1:-probe,backend,kernels,golden,conformance,fuzz,fuzz_patterns,zoo,patterns,real,gguf},"
deadline=${GKRT_GPU_DEADLINE:-100000}
scale=${GKRT_GPU_BUDGET_SCALE:-1}
OUT=${OUT:-/tmp/gkrt_gpu_out}
g=/tmp/gkrt_gpu
L=$g/logs
mkdir -p "$OUT" $L
[ -d $g/bin ] || tar -C $g -xJf .gpu/bundle.tar.xz
# The test binaries name /work/main/build/examples (compiled in): point it at the bundle.
if [ ! -e /work/main/build ]; then mkdir -p /work/main && ln -s $g/build /work/main/build; fi
libdir() {  # the folder of library $1: the loader's cache, else the toolkit's and pip's folders
  local p=$(ldconfig -p | awk -v l="$1" '$1 == l { print $NF; exit }')
  [ -n "$p" ] || p=$(find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib \( -type f -o -type l \) -name "$1" 2>/dev/null | head -1)
  [ -n "$p" ] && dirname "$p"
}
cuda_libs=$(for l in libnvrtc.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do libdir $l; done | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$g/lib:$cuda_libs${LD_LIBRARY_PATH:-}
export GKRT_CACHE_DIR=$g/cache  # (defaultProgramCacheDir reads GKRT_CACHE_DIR)
B=$g/bin
Z=$g/build/zoo
M=$g/models
PY=$(command -v python3)
start=$(date +%s)
rows=$L/rows.tsv
: > $rows
want() { [[ $steps == *",$1,"* ]]; }

# result LOG: one line of what a step's log says it did (counts where the tool prints them).
result() {
  local log=$1
  if grep -q '^golden op cases:' $log; then grep -m1 '^golden op cases:' $log; return; fi
  if grep -q '^case ' $log; then  # a golden shard stopped by its budget: the cases it finished
    echo "golden op cases: $(( $(grep -c '^case ' $log) - 1 )) run before the budget, $(grep -c 'Failure$' $log) failed"
    return
  fi
  if grep -q '^\[==========\] Running' $log; then  # GoogleTest
    local ok=$(grep -c '^\[       OK \]' $log) skip=$(grep '^\[  SKIPPED \] [A-Za-z]' $log | sed 's/ (.*//' | sort -u | wc -l)
    local bad=$(grep '^\[  FAILED  \] [A-Za-z].*(' $log | sed 's/ (.*//' | sort -u | wc -l)
    local total=$(grep -m1 '^\[==========\] Running' $log | grep -oE '[0-9]+ tests' | head -1)
    echo "$ok passed, $bad failed, $skip skipped of $total"
    return
  fi
  grep -v '^\s*$' $log | tail -1 | cut -c1-160
}
# step NAME BUDGET CMD...: one step, its log in $L/NAME.log, one row of the table.
step() {
  local name=$1 budget=$(( $2 * scale )); shift 2
  local s=$(date +%s)
  local left=$(( deadline - (s - start) - 15 ))
  if [ $left -lt 10 ]; then
    printf '%s\t%s\t0\tskipped\tno time left in GKRT_GPU_DEADLINE\n' "$name" "$budget" >> $rows
    echo "[$(( s - start ))s] $name: skipped (deadline)"
    return
  fi
  [ $budget -le $left ] || budget=$left
  timeout -k 5 $budget "$@" > $L/$name.log 2>&1
  local rc=$? took=$(( $(date +%s) - s ))
  local status=ok
  [ $rc -eq 0 ] || status="exit $rc"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && status="out of time"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$budget" "$took" "$status" "$(result $L/$name.log)" >> $rows
  echo "[$(( $(date +%s) - start ))s] $name: $status in $took s"
}
phase() { echo "[$(( $(date +%s) - start ))s] phase $1"; }

# The big models are exported with torch on the cpu while the first phases run.
if { want real || want bench; } && [ ! -f $M/minilm.onnx ]; then
  OMP_NUM_THREADS=4 $PY tests/cuda/make_gpu_models.py $M --models ${GKRT_GPU_MODELS:-resnet50,mobilenet_v3,minilm} \
    > $L/make_models.log 2>&1 &
  make_models=$!
fi
# (GKRT_GPU_PREMAKE=1: made during the first call too, for the second call's llm step)
if { want llm || [ -n "${GKRT_GPU_PREMAKE:-}" ]; } && [ ! -f $M/llm/smollm2_a.onnx ]; then  # SmolLM2's shapes, random weights (~40 s)
  OMP_NUM_THREADS=4 $PY tests/cuda/make_gpu_llm.py $M/llm > $L/make_llm.log 2>&1 &
  make_llm=$!
fi

phase "1: probe"
if want probe; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $L/gpu.txt 2>&1
  step probe 30 $B/gkrt run build/examples/mynet.gkm --input x=build/examples/mynet_x.npy --backend cuda --print
fi

phase "2: backend, kernels"
pids=()
want backend && { step backend 90 $B/gkrt_cuda_backend_tests & pids+=($!); }
# The rendered pattern kernels (FlashAttention, AddLayerNorm/AddRmsNorm, SwiGLU, ...) and
# the movement kernels (Split, Resize, Gather, Tile, Pad, ArgMax, CumSum, ...) against
# the reference: these tests run every available backend.
# Four GoogleTest shards side by side: the tests are mostly PoCL's and the reference's
# cpu work (a 16-core machine), and one process ran out of 150 s on an H200.
if want kernels; then
  for k in 0 1 2 3; do
    GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$k step kernels_$k 140 $B/gkrt_unit_tests \
      --gtest_filter="${KERNELS_FILTER:-FlashAttentionKernels.*:LlmGpuKernels.*:Pattern*:MovementKernels.*:TensorParallel.OneDevice*}" &
    pids+=($!)
  done
fi
for p in "${pids[@]}"; do wait $p; done

phase "3: golden, conformance"
pids=()
if want golden; then
  for k in 0 1 2 3 4 5; do  # the cuda cases only (reference and cpu run in CI)
    GKRT_GOLDEN_DIR=$g/build/golden GKRT_GOLDEN_BACKENDS=cuda GKRT_GOLDEN_PROGRESS=1 GKRT_GOLDEN_SHARD=$k/6 \
      step golden_$k 120 $B/gkrt_unit_tests --gtest_filter='OpGolden.*' & pids+=($!)
  done
fi
if want conformance; then
  for k in 0 1 2; do
    GKRT_CONFORMANCE_BACKENDS=cuda step conformance_$k 120 $B/onnx_conformance $g/build/onnx_node_tests \
      tests/conformance/expected_results.txt --shard $k/3 & pids+=($!)
  done
fi
for p in "${pids[@]}"; do wait $p; done

phase "4: fuzz, zoo, real models"
pids=()
if want fuzz; then
  for k in 0 1; do
    step fuzz_$k 100 $B/fuzz_fusion --seed $((${FUZZ_SEED:-1} + 50 * k)) --count 50 --backends cuda \
      --out $L/fuzz_failures & pids+=($!)
  done
fi
if want fuzz_patterns; then  # transformer-like graphs of the pattern motifs: the rendered pattern kernels on cuda
  for k in 0 1; do
    step fuzz_patterns_$k 100 $B/fuzz_fusion --patterns --seed $((${FUZZ_SEED:-1} + 20 * k)) --count 20 --backends cuda \
      --out $L/fuzz_failures & pids+=($!)
  done
fi
# The block and MiniLM with every attention/norm/epilogue pattern pass on, against onnxruntime
# (after the zoo step: check_models.py writes its outputs beside the models).
PATTERN_FLAGS="--enable_pass=FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion,matmul_elem_biasadd_fusion,matmul_elem_add_fusion,matmul_elem_gelu_fusion"
(
  want zoo && step zoo 100 $PY tests/models/check_models.py $B/gkrt $Z --backends cuda --gkm-suffix .cuda
  want patterns && MS_DEV_GRAPH_KERNEL_FLAGS="$PATTERN_FLAGS" step patterns 60 $PY tests/models/check_models.py $B/gkrt $Z \
    --models transformer_block --backends cuda --fusion on --gkm-suffix .patterns
) & pids+=($!)
if want real; then
  (
    [ -d $g/build/real ] && step real_weights 100 $PY tests/models/check_models.py $B/gkrt $g/build/real \
      --backends cuda --gkm-suffix .cuda
    while [ -n "${make_models:-}" ] && kill -0 $make_models 2>/dev/null; do sleep 1; done  # (not this subshell's child)
    [ -n "$(ls $M/*.onnx 2>/dev/null)" ] && step real_torch 80 $PY tests/models/check_models.py $B/gkrt $M --backends cuda --gkm-suffix .cuda
    [ -f $M/minilm.onnx ] && want patterns && MS_DEV_GRAPH_KERNEL_FLAGS="$PATTERN_FLAGS" step patterns_minilm 60 \
      $PY tests/models/check_models.py $B/gkrt $M --models minilm --backends cuda --fusion on --gkm-suffix .patterns
  ) & pids+=($!)
fi
# GGUF decoders (2 layers, SmolLM2's real weights) in their blocks on cuda against cpu.
if want gguf && [ -d $g/build/gguf ]; then
  step gguf 100 $PY tests/cuda/gguf_on_cuda.py $B/gkrt $g/build/gguf & pids+=($!)
fi
for p in "${pids[@]}"; do wait $p; done

phase "5: llm, bench"
if want llm; then
  while [ -n "${make_llm:-}" ] && kill -0 $make_llm 2>/dev/null; do sleep 1; done
  step llm 300 bash tests/cuda/llm_vs_torch.sh $B/gkrt $M/llm
  cp $L/llm.log $OUT/llm.txt
fi
if want bench; then
  while [ -n "${make_models:-}" ] && kill -0 $make_models 2>/dev/null; do sleep 1; done
  args=(--gkrt $B/gkrt --block-gkm $Z/transformer_block.cuda.gkm --weights $Z/transformer_block_weights.npz
        --input $Z/transformer_block_input_x.npy --expected $Z/transformer_block_expected_0.npy
        --myop-gkm $g/build/bench/myop_16m.gkm --iterations 200 --warmup 20)
  [ -f $Z/transformer_block.cuda.gkm ] || $B/gkrt convert $Z/transformer_block.onnx -o $Z/transformer_block.cuda.gkm > /dev/null
  for m in resnet:resnet50 mobilenet:mobilenet_v3 minilm:minilm; do
    [ -f $M/${m#*:}.cuda.gkm ] || { [ -f $M/${m#*:}.onnx ] && $B/gkrt convert $M/${m#*:}.onnx -o $M/${m#*:}.cuda.gkm > /dev/null; }
    [ -f $M/${m#*:}.cuda.gkm ] && args+=(--${m%%:*}-gkm $M/${m#*:}.cuda.gkm)
  done
  PYTHONUNBUFFERED=1 step bench 140 $PY bench/cuda_vs_torch.py "${args[@]}"
  # Where the time goes: per-kernel CUDA-event timings (default flags, then with every pattern pass).
  prof() { $B/gkrt bench "$@" --backend cuda --profile --iterations 50 --warmup 5; }
  profiles() {
    prof $Z/transformer_block.cuda.gkm --input x=$Z/transformer_block_input_x.npy
    MS_DEV_GRAPH_KERNEL_FLAGS="--opt_level=3 --enable_pass=matmul_elem_biasadd_fusion,matmul_elem_add_fusion,FlashAttentionFusionV1,FlashAttentionFusionV2,add_layer_norm_fusion" \
      prof $Z/transformer_block.cuda.gkm --input x=$Z/transformer_block_input_x.npy
    [ -f $M/minilm.cuda.gkm ] && prof $M/minilm.cuda.gkm --input input_ids=$M/minilm_input_input_ids.npy \
      --input attention_mask=$M/minilm_input_attention_mask.npy --input token_type_ids=$M/minilm_input_token_type_ids.npy
    [ -f $M/resnet50.cuda.gkm ] && prof $M/resnet50.cuda.gkm --input x=$M/resnet50_input_x.npy
    echo "profiles done"
  }
  export B Z M; export -f prof profiles
  step profile 40 bash -c profiles
  cp $L/bench.log $OUT/bench.txt; cp $L/profile.log $OUT/profile.txt
fi

while [ -n "${make_llm:-}" ] && kill -0 $make_llm 2>/dev/null; do sleep 1; done  # (never left half written)
{
  echo "# gkrt cuda suite: $(cat $L/gpu.txt 2>/dev/null | head -1)"
  echo
  echo "| step | budget s | took s | status | result |"
  echo "| --- | --- | --- | --- | --- |"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' $rows
  echo
  echo "total $(( $(date +%s) - start )) s"
} > $OUT/summary.md
[ -f $L/bench.log ] && { echo; echo '```'; cat $L/bench.log; echo '```'; } >> $OUT/summary.md
grep -h -B2 -A6 -E "FAILED|Failure|mismatch|error|Error" $L/*.log 2>/dev/null | head -300 > $OUT/failures.txt
tar -C $L -czf $OUT/logs.tar.gz .
cat $OUT/summary.md
