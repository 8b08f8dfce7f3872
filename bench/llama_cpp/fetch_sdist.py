#!/usr/bin/env python3
"""Downloads the llama-cpp-python sdist VERSION from PyPI (sha256 checked against PyPI's
index) and extracts the llama.cpp it vendors into CACHE/src.

    python3 bench/llama_cpp/fetch_sdist.py VERSION CACHE"""
import hashlib
import json
import os
import shutil
import sys
import tarfile
import urllib.parse
import urllib.request


def download(version, cache):
    """The sdist's path in `cache`, downloaded once and checked against PyPI's sha256."""
    os.makedirs(cache, exist_ok=True)
    index = "https://pypi.org/pypi/llama-cpp-python/json"
    meta = json.load(urllib.request.urlopen(index, timeout=60))
    sdist = next(u for u in meta["releases"][version] if u["packagetype"] == "sdist")
    path = os.path.join(cache, sdist["filename"])
    if not os.path.exists(path):
        tmp = path + ".part"
        url = urllib.parse.urljoin(index, sdist["url"])
        with urllib.request.urlopen(url, timeout=600) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
        os.replace(tmp, path)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest != sdist["digests"]["sha256"]:
        os.remove(path)
        raise SystemExit(f"{path}: sha256 {digest} is not PyPI's {sdist['digests']['sha256']}")
    return path


def main():
    version, cache = sys.argv[1], sys.argv[2]
    path = download(version, cache)
    prefix = f"llama_cpp_python-{version}/vendor/llama.cpp/"
    src = os.path.join(cache, "src")
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if not m.name.startswith(prefix) or m.issym() or m.islnk() or ".." in m.name.split("/") or m.name.endswith("/.git"):
                continue
            m.name = m.name[len(prefix):]
            if m.name:
                t.extract(m, src, filter="data")
    os.remove(path)
    print(src)


if __name__ == "__main__":
    main()
