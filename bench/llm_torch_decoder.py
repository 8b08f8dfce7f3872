#!/usr/bin/env python3
"""The PyTorch peer of `gkrt generate --backend cuda`: a Llama decoder (SmolLM2's
architecture: RMSNorm, rotary "rotate half", grouped-query attention, SwiGLU) on the
weights of an npz under Hugging Face names (tests/cuda/make_gpu_llm.py writes them), with a
static KV cache of --max-context positions and the decode step captured in one CUDA graph
(the form PyTorch's own "static cache + CUDA graph" generation takes). Q/K/V and gate/up run
as one GEMM each; attention is scaled_dot_product_attention over the cache with a mask
built on the device from the position, so the graph replays for every position.

Greedy decode; each token goes to the host once (`.item()`), as a generation loop that
streams its tokens does. Prints one JSON line: prefill and decode tokens/s, the ids, and
with --logits-out writes the logits each token was picked from (rows as gkrt's
--logits-out).

    python3 bench/llm_torch_decoder.py WEIGHTS.npz --prompt-ids 504,3575,282,4649,314
        [--max-tokens 64] [--max-context 512] [--no-graph] [--logits-out F.npy] [--device cuda]
        [--rope-base 100000] [--eps 1e-5] [--head-dim 64] [--warmup 1]"""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F


class Decoder:
    def __init__(self, w, dev, max_ctx, head_dim, rope_base, eps):
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a, np.float32)).to(dev)
        self.dev, self.C, self.D, self.eps = dev, max_ctx, head_dim, eps
        self.L = sum(1 for k in w.files if k.endswith("self_attn.q_proj.weight"))
        self.emb = t(w["model.embed_tokens.weight"])
        self.head = t(w["lm_head.weight"]) if "lm_head.weight" in w.files else self.emb
        self.norm = t(w["model.norm.weight"])
        self.layers = []
        for i in range(self.L):
            p = f"model.layers.{i}."
            q, k, v = (w[p + f"self_attn.{n}_proj.weight"] for n in "qkv")
            self.layers.append(dict(
                n1=t(w[p + "input_layernorm.weight"]), n2=t(w[p + "post_attention_layernorm.weight"]),
                qkv=t(np.concatenate([q, k, v])), o=t(w[p + "self_attn.o_proj.weight"]),
                gu=t(np.concatenate([w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]])),
                down=t(w[p + "mlp.down_proj.weight"])))
        self.NH, self.NKV = q.shape[0] // head_dim, k.shape[0] // head_dim
        self.FF = self.layers[0]["gu"].shape[0] // 2
        inv = 1.0 / (rope_base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
        ang = np.outer(np.arange(max_ctx, dtype=np.float64), inv)
        self.cos, self.sin = t(np.cos(ang)), t(np.sin(ang))  # [C, D/2]
        self.kc = torch.zeros(self.L, 1, self.NKV, max_ctx, head_dim, device=dev)
        self.vc = torch.zeros_like(self.kc)
        self.keys = torch.arange(max_ctx, device=dev)

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rotate(self, x, cos, sin):  # x [1, H, S, D]; cos/sin [S, D/2]
        h = self.D // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)

    def forward(self, ids, pos):
        """ids [S] int64, pos [S] int64 (device tensors): the last position's logits [1, V]."""
        S, D = ids.shape[0], self.D
        x = self.emb[ids]
        cos, sin = self.cos[pos], self.sin[pos]
        mask = torch.where(self.keys[None, :] <= pos[:, None], 0.0, float("-inf"))  # [S, C]
        for li, l in enumerate(self.layers):
            qkv = self.rms(x, l["n1"]) @ l["qkv"].t()
            q, k, v = qkv.split([self.NH * D, self.NKV * D, self.NKV * D], -1)
            q = self.rotate(q.view(S, self.NH, D).transpose(0, 1)[None], cos, sin)
            k = self.rotate(k.view(S, self.NKV, D).transpose(0, 1)[None], cos, sin)
            self.kc[li].index_copy_(2, pos, k)
            self.vc[li].index_copy_(2, pos, v.view(S, self.NKV, D).transpose(0, 1)[None])
            a = F.scaled_dot_product_attention(q, self.kc[li], self.vc[li], attn_mask=mask, enable_gqa=True)
            x = x + a[0].transpose(0, 1).reshape(S, self.NH * D) @ l["o"].t()
            g, u = (self.rms(x, l["n2"]) @ l["gu"].t()).split([self.FF, self.FF], -1)
            x = x + (F.silu(g) * u) @ l["down"].t()
        return self.rms(x[-1:], self.norm) @ self.head.t()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weights")
    ap.add_argument("--prompt-ids", default="504,3575,282,4649,314")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--max-context", type=int, default=512)
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--logits-out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--rope-base", type=float, default=100000.0)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    prompt = [int(t) for t in args.prompt_ids.split(",")]
    if len(prompt) + args.max_tokens > args.max_context:
        raise SystemExit(f"prompt {len(prompt)} + max tokens {args.max_tokens} exceed --max-context {args.max_context}")
    m = Decoder(np.load(args.weights), dev, args.max_context, args.head_dim, args.rope_base, args.eps)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    step_ids = torch.zeros(1, dtype=torch.long, device=dev)
    step_pos = torch.zeros(1, dtype=torch.long, device=dev)
    graph = None
    with torch.no_grad():
        if not args.no_graph and dev.type == "cuda":
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m.forward(step_ids, step_pos)
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step_logits = m.forward(step_ids, step_pos)

        def decode(token, p):
            step_ids.fill_(token)
            step_pos.fill_(p)
            if graph is None:
                return m.forward(step_ids, step_pos)
            graph.replay()
            return step_logits

        for run in range(args.warmup + 1):
            m.kc.zero_(), m.vc.zero_()
            rows, ids = [], []
            sync()
            t0 = time.perf_counter()
            logits = m.forward(torch.tensor(prompt, device=dev), torch.arange(len(prompt), device=dev))
            tok = int(torch.argmax(logits[0]).item())
            t_prefill = time.perf_counter() - t0
            rows.append(logits[0].float().cpu().numpy() if args.logits_out else None)
            ids.append(tok)
            t1 = time.perf_counter()
            for k in range(args.max_tokens - 1):
                logits = decode(tok, len(prompt) + k)
                tok = int(torch.argmax(logits[0]).item())
                if args.logits_out:
                    rows.append(logits[0].float().cpu().numpy())
                ids.append(tok)
            t_decode = time.perf_counter() - t1
    if args.logits_out:
        np.save(args.logits_out, np.stack(rows))
    n_dec = args.max_tokens - 1
    print(json.dumps({"peer": "pytorch " + torch.__version__ + (" cuda graph" if graph is not None else " eager"),
                      "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
                      "layers": m.L, "prompt_tokens": len(prompt), "prefill_s": round(t_prefill, 5),
                      "prefill_tokens_per_s": round(len(prompt) / t_prefill, 1), "decode_tokens": n_dec,
                      "decode_s": round(t_decode, 5), "decode_tokens_per_s": round(n_dec / t_decode, 1) if n_dec else None,
                      "ids": ids}))


if __name__ == "__main__":
    main()
