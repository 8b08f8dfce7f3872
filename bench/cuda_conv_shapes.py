"""Where the convolutions of ResNet-50 and MobileNet-v3-small (batch 1, 224x224, float32,
TF32 off) can go on a GPU: each distinct convolution timed as cuDNN runs it for PyTorch
(heuristics, and with cudnn.benchmark's timed choice) and as a GEMM (the weights [K, CRS]
times the input's columns [CRS, P], cuBLAS through torch.mm; the column matrix made by
F.unfold, timed apart), summed over the model with repeats. Compares a conv-as-GEMM
path against cuDNN before gkrt builds one; needs PyTorch and torchvision on a GPU.

    python bench/cuda_conv_shapes.py [--models resnet50,mobilenet_v3_small] [--iterations 50]
"""
import argparse
import collections

import torch
import torch.nn.functional as F


def conv_shapes(name):
    """Distinct (conv module, input shape) of torchvision model `name`, with their counts."""
    import torchvision
    net = getattr(torchvision.models, name)().eval()
    seen = collections.OrderedDict()
    hooks = []
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            def hook(mod, args, _out):
                key = (tuple(args[0].shape), mod.out_channels, mod.kernel_size, mod.stride, mod.padding, mod.dilation, mod.groups)
                seen[key] = seen.get(key, 0) + 1
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        net(torch.randn(1, 3, 224, 224))
    for h in hooks:
        h.remove()
    return seen


def time_ms(fn, iterations):
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iterations):
        start.record()
        for _ in range(20):  # 20 calls back to back: the GPU time, not the Python dispatch
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2] / 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,mobilenet_v3_small")
    ap.add_argument("--iterations", type=int, default=50)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"GPU: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
          f"TF32 off; median of {a.iterations} timings of 20 calls back to back (CUDA events)")
    for name in a.models.split(","):
        shapes = conv_shapes(name)
        totals = collections.Counter()
        print(f"\n{name}: {len(shapes)} distinct convolutions, {sum(shapes.values())} in all")
        print(f"{'input':>18} {'K':>5} {'k':>5} {'s':>3} {'g':>4} {'x':>3} {'GFLOP':>6} {'cudnn':>7} {'bench':>7} "
              f"{'unfold':>7} {'gemm':>7} {'TFLOP/s':>8}")
        for (shape, k, ks, stride, pad, dil, groups), count in shapes.items():
            x = torch.randn(shape, device="cuda")
            w = torch.randn(k, shape[1] // groups, *ks, device="cuda")
            b = torch.randn(k, device="cuda")
            with torch.no_grad():
                y = F.conv2d(x, w, b, stride, pad, dil, groups)
                p = y.shape[2] * y.shape[3]
                crs = (shape[1] // groups) * ks[0] * ks[1]
                flop = 2.0 * k * crs * p
                torch.backends.cudnn.benchmark = False
                cudnn = time_ms(lambda: F.conv2d(x, w, b, stride, pad, dil, groups), a.iterations)
                torch.backends.cudnn.benchmark = True
                bench = time_ms(lambda: F.conv2d(x, w, b, stride, pad, dil, groups), a.iterations)
                torch.backends.cudnn.benchmark = False
                unfold = gemm = float("nan")
                if groups == 1:
                    cols = F.unfold(x, ks, dil, pad, stride)[0]  # [CRS, P]
                    w2 = w.reshape(k, crs)
                    if not torch.allclose(w2 @ cols + b[:, None], y[0].reshape(k, p), rtol=1e-3, atol=1e-3):
                        raise SystemExit(f"the GEMM form differs from the convolution for {shape} k={k} {ks}")
                    unfold = time_ms(lambda: F.unfold(x, ks, dil, pad, stride), a.iterations) if crs != shape[1] or stride != (1, 1) else 0.0
                    out = torch.empty(k, p, device="cuda")
                    gemm = time_ms(lambda: torch.mm(w2, cols, out=out), a.iterations)
            best_gemm = unfold + gemm if groups == 1 else float("inf")
            totals["cudnn"] += count * cudnn
            totals["bench"] += count * bench
            totals["gemm path (1x1 direct, else unfold+gemm; cuDNN where grouped)"] += count * (best_gemm if groups == 1 else cudnn)
            totals["best of cudnn and gemm path per layer"] += count * min(cudnn, best_gemm)
            print(f"{str(list(shape)):>18} {k:>5} {str(ks[0]) + 'x' + str(ks[1]):>5} {stride[0]:>3} {groups:>4} {count:>3} "
                  f"{flop / 1e9:>6.3f} {cudnn:>7.4f} {bench:>7.4f} {unfold:>7.4f} {gemm:>7.4f} {flop / gemm / 1e9 if gemm == gemm else 0:>8.1f}")
        for what, ms in totals.items():
            print(f"  {name} convolutions, {what}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
