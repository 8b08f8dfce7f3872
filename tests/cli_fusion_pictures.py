"""gkrt's pictures are well-formed and hold what they should.

  cli_fusion_pictures.py GKRT EXAMPLES_DIR OUT_DIR

- `gkrt bench --svg`: an SVG (parsed with xml.etree) with one latency series per
  backend x fusion setting (p10 <= p50 <= p90), the fused kernels' GB/s and the triad
  probe's line, and labelled axes with units.
- `gkrt dump --dot` / `--svg`: the seeds' MyNet-with-MyOp before (4 ops) and after
  fusion (one fused kernel box); the SVG comes from Graphviz when `dot` is installed,
  and without it gkrt writes the .dot file and says how to render it.
"""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def run(*args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def check_bench_chart(gkrt, ex, out):
    chart = os.path.join(out, "chart.svg")
    run(gkrt, "bench", f"{ex}/mynet_myop.gkm", "--backend", "cpu,reference", "--fusion", "on,off",
        "--iterations", "5", "--warmup", "1", "--threads", "1", "--svg", chart)
    root = ET.parse(chart).getroot()
    assert root.tag == SVG + "svg", root.tag
    series = [g for g in root.iter(SVG + "g") if g.get("class") == "series"]
    latency = {g.get("data-label"): g for g in series if g.get("data-panel") == "latency"}
    want = {"cpu fusion on", "cpu fusion off", "reference fusion on", "reference fusion off"}
    assert set(latency) == want, sorted(latency)
    for label, g in latency.items():
        p10, p50, p90 = (float(g.get(k)) for k in ("data-p10-ms", "data-p50-ms", "data-p90-ms"))
        assert 0 < p10 <= p50 <= p90, (label, p10, p50, p90)
        assert g.find(SVG + "rect") is not None, label  # the bar
        assert len(g.findall(SVG + "line")) == 3, label  # the whisker and its caps
    # the roofline: kernels at (FLOP/byte, GFLOP/s) under the measured memory and compute ceilings
    roofline = [g for g in series if g.get("data-panel") == "roofline"]
    memory = [g for g in roofline if "triad" in g.get("data-label")]
    compute = [g for g in roofline if "FMA" in g.get("data-label")]
    kernels = [g for g in roofline if g.get("data-label").startswith(("cpu: ", "reference: "))]
    assert len(memory) == 1 and float(memory[0].get("data-gbps")) > 0, [g.get("data-label") for g in roofline]
    assert len(compute) == 1 and float(compute[0].get("data-gflops")) > 0, [g.get("data-label") for g in roofline]
    assert any("Mul, Pow, Sub, Mul" in g.get("data-label") for g in kernels), [g.get("data-label") for g in kernels]
    for g in kernels:
        assert float(g.get("data-intensity")) > 0 and float(g.get("data-gflops")) > 0, g.attrib
        assert g.find(SVG + "circle") is not None, g.attrib  # the point
    texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    # backends more than a decade apart get a logarithmic latency axis, else a linear one from 0;
    # how far apart cpu and reference are depends on the machine and its load, so ask the data
    lows = [float(g.get("data-p10-ms")) for g in latency.values()]
    highs = [float(g.get("data-p90-ms")) for g in latency.values()]
    log_axis = max(highs) > 10 * min(lows)
    axis_label = "latency per run (ms, log scale)" if log_axis else "latency per run (ms):"
    assert ("log scale" in texts) == log_axis, (log_axis, lows, highs)
    for label in (axis_label, "FLOP/byte", "GFLOP/s", "fusion on", "fusion off", "p10-p90"):
        assert label in texts, label


def check_dump_pictures(gkrt, ex, out):
    dot = os.path.join(out, "myop.dot")
    run(gkrt, "dump", f"{ex}/mynet_myop.gkm", "--dot", dot)
    text = open(dot).read()
    assert text.startswith("digraph") and "before fusion: 4 ops" in text and text.count("subgraph cluster_a_k") == 1, text
    svg = os.path.join(out, "myop.svg")
    if shutil.which("dot"):
        run(gkrt, "dump", f"{ex}/mynet_myop.gkm", "--svg", svg)
        root = ET.parse(svg).getroot()
        assert root.tag == SVG + "svg", root.tag
        titles = " ".join(t.text or "" for t in root.iter(SVG + "text"))
        assert "before fusion: 4 ops" in titles and "after fusion (cpu): 1 kernel" in titles, titles
    env = dict(os.environ, PATH="/nonexistent")  # no Graphviz: the .dot and how to render it
    p = run(gkrt, "dump", f"{ex}/mynet_myop.gkm", "--svg", svg + "2.svg", env=env)
    assert "render it with: dot -Tsvg" in p.stderr and os.path.exists(svg + "2.svg.dot"), p.stderr


def main():
    gkrt, ex, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    check_bench_chart(gkrt, ex, out)
    check_dump_pictures(gkrt, ex, out)
    print("pictures ok")


if __name__ == "__main__":
    main()
