#!/usr/bin/env python3
"""gkrt's tokenizer on llama.cpp's own tokenizer test vectors: the vocabularies it vendors
(models/ggml-vocab-*.gguf, each with .inp texts and the .out ids llama.cpp's
test-tokenizer-0 expects, parse_special and add_special off), taken from the
llama-cpp-python sdist on PyPI (pinned, sha256 checked; about 76 MB, downloaded once into
CACHE_DIR and only the vocabulary files kept). Every byte-level BPE vocabulary whose
pre-tokenizer gkrt knows must give identical ids for every text, and decode them back to
the text; the others must be
refused with an error naming tokenizer.ggml.model or tokenizer.ggml.pre.

    python tests/models/check_llama_vocabs.py GKRT CACHE_DIR [--sdist FILE]

Exit 77 (ctest: skipped) when the sdist can be neither found nor downloaded."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile

VERSION = "0.3.36"
SUPPORTED = ["gpt-2", "llama-bpe", "qwen2", "starcoder", "refact", "command-r", "mpt", "llama-spm", "phi-3"]
REFUSED = {"bert-bge": "tokenizer.ggml.model", "deepseek-coder": "tokenizer.ggml.pre", "falcon": "tokenizer.ggml.pre"}


def fetch(cache):
    """The vocabulary files in cache/, downloading the sdist once."""
    vocab = os.path.join(cache, "vocab")
    if glob.glob(os.path.join(vocab, "ggml-vocab-*.gguf.out")):
        return vocab
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "llama_cpp"))
    from fetch_sdist import download  # the pinned sdist, sha256 checked
    path = download(VERSION, cache)
    extract(path, vocab)
    os.remove(path)  # only the vocabularies are kept
    return vocab


def extract(sdist, vocab):
    os.makedirs(vocab, exist_ok=True)
    with tarfile.open(sdist) as t:
        for m in t.getmembers():
            name = os.path.basename(m.name)
            stem = name.split(".gguf")[0][len("ggml-vocab-"):]
            if "/vendor/llama.cpp/models/ggml-vocab-" in m.name and m.isfile() and (stem in SUPPORTED or stem in REFUSED):
                with t.extractfile(m) as src, open(os.path.join(vocab, name), "wb") as dst:
                    dst.write(src.read())


def cases(gguf):
    """llama.cpp's test-tokenizer-0 pairs: texts split on the separator line, one .out line each."""
    texts = open(gguf + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
    outs = open(gguf + ".out", encoding="utf-8").read().split("\n")
    n = min(len(texts), len(outs) - 1) if outs[-1] == "" else min(len(texts), len(outs))
    return texts[:n], [o.split() for o in outs[:n]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gkrt")
    ap.add_argument("cache_dir")
    ap.add_argument("--sdist", help="a llama-cpp-python sdist already here (no download)")
    args = ap.parse_args()
    try:
        if args.sdist:
            vocab = os.path.join(args.cache_dir, "vocab")
            extract(args.sdist, vocab)
        else:
            vocab = fetch(args.cache_dir)
    except (OSError, StopIteration, ValueError) as e:
        print(f"SKIPPED: llama.cpp's vocabularies could not be fetched ({e}); give --sdist FILE")
        return 77
    failures, lines = 0, os.path.join(args.cache_dir, "texts.jsonl")
    for name in SUPPORTED:
        gguf = os.path.join(vocab, f"ggml-vocab-{name}.gguf")
        texts, want = cases(gguf)
        with open(lines, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps(t) + "\n")
        r = subprocess.run([args.gkrt, "tokenize", gguf, "--lines", lines, "--no-special"], capture_output=True, text=True)
        if r.returncode:
            print(f"{name}: gkrt tokenize FAILED: {r.stderr.strip()[-300:]}")
            failures += 1
            continue
        got = [x.split(",") if x else [] for x in r.stdout.split("\n")[:-1]]
        bad = [i for i in range(len(texts)) if i >= len(got) or got[i] != want[i]]
        ids_file = os.path.join(args.cache_dir, "ids.txt")
        with open(ids_file, "w") as f:
            f.write(r.stdout)
        r = subprocess.run([args.gkrt, "tokenize", gguf, "--decode-lines", ids_file], capture_output=True, text=True)
        back = [json.loads(x) for x in r.stdout.split("\n")[:-1]] if r.returncode == 0 else []
        lossy = [i for i in range(len(texts)) if i >= len(back) or back[i] != texts[i]]
        print(f"{name}: {len(texts)} texts, {len(texts) - len(bad)} with llama.cpp's ids, "
              f"{len(texts) - len(lossy)} decoded back to themselves")
        for i in lossy[:3]:
            print(f"  round trip lost {texts[i]!r} -> {back[i] if i < len(back) else '?'!r}")
        failures += len(lossy)
        for i in bad[:3]:
            print(f"  {texts[i]!r}: gkrt {got[i] if i < len(got) else '?'}, llama.cpp {want[i]}")
        failures += len(bad)
    for name, field in REFUSED.items():
        r = subprocess.run([args.gkrt, "tokenize", os.path.join(vocab, f"ggml-vocab-{name}.gguf"), "--text", "x"],
                           capture_output=True, text=True)
        ok = r.returncode != 0 and field in r.stderr and "not supported" in r.stderr
        print(f"{name}: refused {'with a clear error' if ok else 'WRONGLY'}: {r.stderr.strip()[-160:]}")
        failures += 0 if ok else 1
    print("llama.cpp vocabularies:", "passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
