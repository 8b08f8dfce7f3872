"""Makes the large zoo models on the GPU machine, where they cannot be carried (the
device tool carries 64 MiB): torchvision's ResNet-50 and MobileNet-v3-small and a
MiniLM-shaped BERT (6 layers, hidden 384, 12 heads, FFN 1536, as all-MiniLM-L6-v2)
from transformers' config, all with random weights (seeded), exported to ONNX with
the inputs and onnxruntime's outputs in tests/models/check_models.py's layout, and the
PyTorch weights saved beside (NAME.pt, a state dict; build(NAME) makes the module) for
bench/cuda_vs_torch.py.

    python tests/cuda/make_gpu_models.py OUT_DIR [--models resnet50,mobilenet_v3,minilm]
"""
import argparse
import os
import sys

import numpy as np
import torch

MODELS = ("resnet50", "mobilenet_v3", "minilm")


def build(name):
    """The PyTorch module of `name` (random weights; load NAME.pt for the exported ones)."""
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50().eval()
    if name == "mobilenet_v3":
        import torchvision
        return torchvision.models.mobilenet_v3_small().eval()
    if name == "minilm":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                         intermediate_size=1536, max_position_embeddings=512)

        class Minilm(torch.nn.Module):  # the last hidden state, as sentence-transformers pools from
            def __init__(self):
                super().__init__()
                self.bert = BertModel(cfg, add_pooling_layer=False).eval()

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                 token_type_ids=token_type_ids).last_hidden_state
        return Minilm().eval()
    raise ValueError(name)


def example_inputs(name, rng):
    if name == "minilm":
        seq = 128
        ids = rng.integers(1000, 30000, (1, seq)).astype(np.int64)
        mask = np.ones((1, seq), np.int64)
        mask[0, 100:] = 0
        return [ids, mask, np.zeros((1, seq), np.int64)], ["input_ids", "attention_mask", "token_type_ids"]
    return [rng.standard_normal((1, 3, 224, 224), np.float32)], ["x"]


def export(out, name, module, inputs, input_names):
    path = os.path.join(out, name + ".onnx")
    args = tuple(torch.from_numpy(v) for v in inputs)
    try:
        torch.onnx.export(module, args, path, input_names=input_names, output_names=["y"], opset_version=17, dynamo=False)
    except TypeError:
        torch.onnx.export(module, args, path, input_names=input_names, output_names=["y"], opset_version=17)
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, dict(zip(input_names, inputs)))
    for n, v in zip(input_names, inputs):
        np.save(os.path.join(out, f"{name}_input_{n}.npy"), v)
    np.save(os.path.join(out, f"{name}_expected_0.npy"), outs[0])
    torch.save(module.state_dict(), os.path.join(out, name + ".pt"))
    print(f"{name}: {path} ({os.path.getsize(path) >> 20} MiB), output {outs[0].shape}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for name in a.models.split(","):
            inputs, names = example_inputs(name, rng)
            export(a.out, name, build(name), inputs, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
