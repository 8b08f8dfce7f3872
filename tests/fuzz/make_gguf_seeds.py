#!/usr/bin/env python3
"""The seeds of the gguf_import fuzz target (tests/fuzz/regressions/gguf_import/): whole
decoders small enough to mutate (a few KB), written with the `gguf` package: llama with
Q8_0 / Q4_1 / F16 matrices and a byte-level BPE vocabulary of 16 tokens, qwen2 with Q4_0
and biases. Random weights; rerun to regenerate (the files are committed).

    python tests/fuzz/make_gguf_seeds.py"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter
from gguf.quants import quantize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions", "gguf_import")
HIDDEN, HEADS, KV, FFN, VOCAB = 32, 2, 1, 64, 16


def write(name, arch, qtype, rng):
    w = GGUFWriter(os.path.join(OUT, name), arch)
    p = arch + "."
    for key, v in (("block_count", 1), ("context_length", 64), ("embedding_length", HIDDEN), ("feed_forward_length", FFN),
                   ("attention.head_count", HEADS), ("attention.head_count_kv", KV)):
        w.add_uint32(p + key, v)
    w.add_float32(p + "rope.freq_base", 10000.0)
    w.add_float32(p + "attention.layer_norm_rms_epsilon", 1e-5)
    tokens = ["a", "b", "c", "Ġ", "ab", "Ġa", "bc", "<s>", "</s>"] + [f"t{i}" for i in range(VOCAB - 9)]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * 7 + [3, 3] + [1] * (VOCAB - 9))
    w.add_token_merges(["a b", "Ġ a", "b c"])
    w.add_bos_token_id(7)
    w.add_eos_token_id(8)
    hd = HIDDEN // HEADS
    mats = {"token_embd.weight": (VOCAB, HIDDEN), "blk.0.attn_q.weight": (HEADS * hd, HIDDEN),
            "blk.0.attn_k.weight": (KV * hd, HIDDEN), "blk.0.attn_v.weight": (KV * hd, HIDDEN),
            "blk.0.attn_output.weight": (HIDDEN, HEADS * hd), "blk.0.ffn_gate.weight": (FFN, HIDDEN),
            "blk.0.ffn_up.weight": (FFN, HIDDEN), "blk.0.ffn_down.weight": (HIDDEN, FFN)}
    for n, shape in mats.items():
        a = (rng.standard_normal(shape) * 0.2).astype(np.float32)
        w.add_tensor(n, quantize(a, qtype), raw_dtype=qtype)
    for n in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"):
        w.add_tensor(n, np.ones(HIDDEN, np.float32))
    if arch == "qwen2":
        for x, n in (("q", HEADS * hd), ("k", KV * hd), ("v", KV * hd)):
            w.add_tensor(f"blk.0.attn_{x}.bias", (rng.standard_normal(n) * 0.1).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(1)
    write("tiny_llama_q8_0.gguf", "llama", T.Q8_0, rng)
    write("tiny_llama_q4_1.gguf", "llama", T.Q4_1, rng)
    write("tiny_llama_f16.gguf", "llama", T.F16, rng)
    write("tiny_qwen2_q4_0.gguf", "qwen2", T.Q4_0, rng)
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))


if __name__ == "__main__":
    main()
