#!/usr/bin/python3
"""Times PyTorch's CPU convolutions on the shapes of bench_cpu_conv.cpp (ResNet-18
heatmap model, 128x128, batch 16): forward, backward data, backward weights, best
of N runs in ms. Usage: ops_bench_torch.py [threads=2] [reps=5]"""
import os
import sys
import time

import torch
import torch.nn.functional as F

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.set_num_threads(threads)
N = 16
LAYERS = [  # name, cin, cout, kernel, stride, pad, size, count, deconv, needs_dx
    ("stem 7x7/2 3->64 @128", 3, 64, 7, 2, 3, 128, 1, False, False),
    ("l1 3x3 64->64 @32", 64, 64, 3, 1, 1, 32, 4, False, True),
    ("l2 3x3/2 64->128 @32", 64, 128, 3, 2, 1, 32, 1, False, True),
    ("l2 3x3 128->128 @16", 128, 128, 3, 1, 1, 16, 3, False, True),
    ("l2 ds 1x1/2 64->128 @32", 64, 128, 1, 2, 0, 32, 1, False, True),
    ("l3 3x3/2 128->256 @16", 128, 256, 3, 2, 1, 16, 1, False, True),
    ("l3 3x3 256->256 @8", 256, 256, 3, 1, 1, 8, 3, False, True),
    ("l3 ds 1x1/2 128->256 @16", 128, 256, 1, 2, 0, 16, 1, False, True),
    ("l4 3x3/2 256->512 @8", 256, 512, 3, 2, 1, 8, 1, False, True),
    ("l4 3x3 512->512 @4", 512, 512, 3, 1, 1, 4, 3, False, True),
    ("l4 ds 1x1/2 256->512 @8", 256, 512, 1, 2, 0, 8, 1, False, True),
    ("head deconv 128->17 @8", 128, 17, 3, 2, 1, 8, 1, True, True),
    ("head deconv 17->17 @16", 17, 17, 3, 2, 1, 16, 1, True, True),
]


CPU_TIME = bool(os.environ.get("TRAINER_BENCH_CPU_TIME"))  # see bench_cpu_conv.cpp
clock = time.process_time if CPU_TIME else time.perf_counter


def best_ms(fn):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = clock()
        fn()
        best = min(best, (clock() - t0) * 1e3)
    return best


print(f"torch {torch.__version__}, {threads} threads, batch {N}, best of {reps}, "
      f"{'process CPU' if CPU_TIME else 'wall'} time")
tot = [0.0, 0.0, 0.0]
for name, cin, cout, k, s, p, size, count, deconv, needs_dx in LAYERS:
    x = torch.randn(N, cin, size, size)
    if deconv:
        w = torch.randn(cin, cout, k, k)
        b = torch.randn(cout)
        op = lambda xx, ww: F.conv_transpose2d(xx, ww, b, stride=s, padding=p, output_padding=1)
    else:
        w = torch.randn(cout, cin, k, k)
        op = lambda xx, ww: F.conv2d(xx, ww, stride=s, padding=p)
    with torch.no_grad():
        y = op(x, w)
        f = best_ms(lambda: op(x, w))
    dy = torch.randn_like(y)
    xg = x.clone().requires_grad_(needs_dx)
    wg = w.clone().requires_grad_(True)

    def bwd(want_x, want_w):
        xg.requires_grad_(want_x)
        wg.requires_grad_(want_w)
        out = op(xg, wg)
        inputs = ([xg] if want_x else []) + ([wg] if want_w else [])
        torch.autograd.grad(out, inputs, dy)

    # backward passes measured as (forward + backward) - forward
    d = max(best_ms(lambda: bwd(True, False)) - f, 0.0) if needs_dx else 0.0
    wt = max(best_ms(lambda: bwd(False, True)) - f, 0.0)
    print(f"{name:28s} {f:9.2f} {d:9.2f} {wt:9.2f}  x{count}")
    tot[0] += f * count
    tot[1] += d * count
    tot[2] += wt * count
print(f"{'total':28s} {tot[0]:9.1f} {tot[1]:9.1f} {tot[2]:9.1f}  total {sum(tot):.1f} ms per step (convolutions only)")

# ---- non-convolution ops (bench_cpu_conv.cpp's second case) ----
print(f"{'activation':22s} {'bn-fwd':>9s} {'bn-bwd':>9s} {'relu-fwd':>9s} {'relu-bwd':>9s}")
tot = 0.0
for c, size, count in [(64, 64, 1), (64, 32, 8), (128, 16, 8), (256, 8, 8), (512, 4, 8)]:
    x = torch.randn(N, c, size, size)
    dy = torch.randn_like(x)
    g = torch.ones(c, requires_grad=True)
    b = torch.zeros(c, requires_grad=True)
    rm, rv = torch.zeros(c), torch.ones(c)
    with torch.no_grad():
        f = best_ms(lambda: F.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1, eps=1e-5))
    xg = x.clone().requires_grad_()

    def bn_both():
        y = F.batch_norm(xg, rm, rv, g, b, training=True, momentum=0.1, eps=1e-5)
        torch.autograd.grad(y, [xg, g, b], dy)
    bb = max(best_ms(bn_both) - f, 0.0)
    with torch.no_grad():
        rf = best_ms(lambda: F.relu(x))
    y = F.relu(x)
    rb = best_ms(lambda: torch.ops.aten.threshold_backward(dy, y, 0))
    print(f"{str(list(x.shape)):22s} {f:9.2f} {bb:9.2f} {rf:9.2f} {rb:9.2f}  x{count}")
    tot += (f + bb + rf + rb) * count
x = torch.randn(N, 64, 64, 64)
with torch.no_grad():
    mf = best_ms(lambda: F.max_pool2d(x, 3, 2, 1))
xg = x.clone().requires_grad_()
dy = torch.randn(N, 64, 32, 32)
mb = max(best_ms(lambda: torch.autograd.grad(F.max_pool2d(xg, 3, 2, 1), [xg], dy)) - mf, 0.0)
print(f"maxpool 3x3/2 [16,64,64,64]: fwd {mf:.2f} bwd {mb:.2f}")
print(f"total: {tot + mf + mb:.1f} ms per step")
