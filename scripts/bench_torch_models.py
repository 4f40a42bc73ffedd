#!/usr/bin/env python3
"""PyTorch's side of `fedcluster bench model-steps`: one local SGD step
(forward, backward, update; momentum 0.9, lr 1e-3) of the same networks, at the
same shapes, parameter counts and minibatch sizes, on `--threads` threads
(torch.set_num_threads), printed in the same table form so the two can be put
side by side.

Each step draws its minibatch from a synthetic client of 500 points (features
in [-1, 1) or token ids, random classes), as the Rust benchmark does. A step is
timed inside a call of 5 steps; one warm-up call, then `--rounds` timed calls;
`ms / step` is the median, `best` the fastest. GFLOP / step counts the forward,
the weight gradients and the input gradients, less the input layer's (which no
backend computes), with the Rust models' formulas. The parameter counts include
batch normalisation's running statistics (fedcluster's flat vector holds them)
and are checked against the counts the Rust benchmark prints.

Usage (torch is not a dependency of fedcluster; CI does not run this):

    pip install --target /tmp/torchsite2 torch
    PYTHONPATH=/tmp/torchsite2 python3 scripts/bench_torch_models.py --threads 1
    PYTHONPATH=/tmp/torchsite2 python3 scripts/bench_torch_models.py --threads 2 --only lstm
"""

import argparse
import statistics
import time

import torch
from torch import nn
import torch.nn.functional as F

CLIENT_POINTS = 500
STEPS = 5

# What `fedcluster bench model-steps` prints in its `parameters` column.
EXPECTED_PARAMETERS = {
    "mlp": 159_010,
    "cnn-cifar": 878_538,
    "cnn-femnist": 6_603_710,
    "resnet9": 6_577_600,
    "char-lstm": 819_920,
}


class Mlp(nn.Module):
    def __init__(self, d=784, h=200, c=10):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, c)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Cnn(nn.Module):
    """conv-ReLU-maxpool twice, a ReLU dense layer, the output layer."""

    def __init__(self, side, channels, kernel, padding, c1, c2, hidden, classes):
        super().__init__()
        self.side, self.channels = side, channels
        self.conv1 = nn.Conv2d(channels, c1, kernel, padding=padding)
        self.conv2 = nn.Conv2d(c1, c2, kernel, padding=padding)
        s1 = side + 2 * padding + 1 - kernel
        s2 = s1 // 2 + 2 * padding + 1 - kernel
        self.sizes = (s1, s2)
        flat = (s2 // 2) ** 2 * c2
        self.fc1, self.fc2 = nn.Linear(flat, hidden), nn.Linear(hidden, classes)

    def forward(self, x):
        # fedcluster's rows are channels-last images.
        x = x.view(-1, self.side, self.side, self.channels).permute(0, 3, 1, 2)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))

    def flops(self):
        k2 = self.conv1.kernel_size[0] ** 2
        (s1, s2) = self.sizes
        c1, c2 = self.conv1.out_channels, self.conv2.out_channels
        conv = 2 * k2 * (self.channels * c1 * s1 * s1 + c1 * c2 * s2 * s2)
        return conv + 2 * (self.fc1.in_features * self.fc1.out_features + self.fc2.in_features * self.fc2.out_features)


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class ResNet9(nn.Module):
    """Page's ResNet9, as crates/nn/src/nets/resnet9.rs."""

    def __init__(self, c=3, w=64, classes=10):
        super().__init__()
        self.prep = conv_bn(c, w)
        self.layer1 = nn.Sequential(conv_bn(w, 2 * w), nn.MaxPool2d(2))
        self.res1 = nn.Sequential(conv_bn(2 * w, 2 * w), conv_bn(2 * w, 2 * w))
        self.layer2 = nn.Sequential(conv_bn(2 * w, 4 * w), nn.MaxPool2d(2))
        self.layer3 = nn.Sequential(conv_bn(4 * w, 8 * w), nn.MaxPool2d(2))
        self.res3 = nn.Sequential(conv_bn(8 * w, 8 * w), conv_bn(8 * w, 8 * w))
        self.linear = nn.Linear(8 * w, classes, bias=False)
        self.c, self.w, self.classes = c, w, classes

    def forward(self, x):
        x = x.view(-1, 32, 32, self.c).permute(0, 3, 1, 2)
        x = self.layer1(self.prep(x))
        x = x + self.res1(x)
        x = self.layer3(self.layer2(x))
        x = x + self.res3(x)
        return self.linear(torch.amax(x, dim=(2, 3))) * 0.125

    def flops(self):
        c, w, side, total = self.c, self.w, 32, 0
        for cin, cout, pool in [(c, w, 0), (w, 2 * w, 1), (2 * w, 2 * w, 0), (2 * w, 2 * w, 0),
                                (2 * w, 4 * w, 1), (4 * w, 8 * w, 1), (8 * w, 8 * w, 0), (8 * w, 8 * w, 0)]:
            total += 2 * 9 * cin * cout * side * side
            side //= 2 if pool else 1
        return total + 2 * 8 * w * self.classes


class CharLstm(nn.Module):
    """LEAF's Shakespeare model: embedding, stacked LSTM, dense on the last step."""

    def __init__(self, vocab=80, seq_len=80, embedding=8, hidden=256, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embedding)
        self.lstm = nn.LSTM(embedding, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)
        self.shape = (vocab, seq_len, embedding, hidden, layers)

    def forward(self, x):
        h, _ = self.lstm(self.embedding(x.long()))
        return self.fc(h[:, -1, :])

    def flops(self):
        vocab, t, e, h, layers = self.shape
        per_step = sum(2 * 4 * h * ((e if k == 0 else h) + h) for k in range(layers))
        return t * per_step + 2 * h * vocab


def cases():
    """(label, kind, model, batch, classes, vocab, forward flops, input layer flops)."""
    mlp = Mlp()
    cifar = Cnn(32, 3, 5, 0, 32, 64, 512, 10)
    femnist = Cnn(28, 1, 5, 2, 32, 64, 2048, 62)
    resnet = ResNet9()
    mlp_flops = 2 * (784 * 200 + 200 * 10)
    return [
        ("mlp 784-200-10, torch", "mlp", mlp, 100, 10, None, mlp_flops, 2 * 784 * 200),
        ("cnn-cifar 32x32x3, torch", "cnn-cifar", cifar, 50, 10, None, cifar.flops(), 2 * 28 * 28 * 25 * 3 * 32),
        ("cnn-femnist 28x28x1, torch", "cnn-femnist", femnist, 50, 62, None, femnist.flops(), 2 * 28 * 28 * 25 * 32),
        ("resnet9 32x32x3, torch", "resnet9", resnet, 50, 10, None, resnet.flops(), 2 * 32 * 32 * 9 * 3 * 64),
        ("char-lstm 80x80, torch", "char-lstm", CharLstm(), 50, 80, 80, CharLstm().flops(), 0),
        ("char-lstm 80x80 batch 10, torch", "char-lstm", CharLstm(), 10, 80, 80, CharLstm().flops(), 0),
    ]


def state_count(model):
    """Parameters plus batch normalisation's running mean and variance."""
    buffers = sum(b.numel() for name, b in model.named_buffers() if not name.endswith("num_batches_tracked"))
    return sum(p.numel() for p in model.parameters()) + buffers


def gemm_peak():
    """Single-thread f32 GEMM GFLOP/s of torch.mm on 512 x 512 (best of 6 x 4)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    a = torch.randn(512, 512)
    c = a @ a
    best = float("inf")
    for _ in range(6):
        start = time.perf_counter()
        for _ in range(4):
            torch.mm(a, a, out=c)
        best = min(best, (time.perf_counter() - start) / 4)
    torch.set_num_threads(threads)
    return 2 * 512**3 / best / 1e9


def time_case(model, batch, classes, vocab, d, rounds):
    """Seconds per step of each timed call (after one warm-up call)."""
    g = torch.Generator().manual_seed(1)
    if vocab is None:
        x = torch.rand(CLIENT_POINTS, d, generator=g) * 2 - 1
    else:
        x = torch.randint(0, vocab, (CLIENT_POINTS, d), generator=g).float()
    y = torch.randint(0, classes, (CLIENT_POINTS,), generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    model.train()
    times = []
    for call in range(rounds + 1):
        start = time.perf_counter()
        for _ in range(STEPS):
            rows = torch.randint(0, CLIENT_POINTS, (batch,), generator=g)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x[rows]), y[rows])
            loss.backward()
            opt.step()
        if not torch.isfinite(loss):
            raise SystemExit("training diverged")
        if call > 0:
            times.append((time.perf_counter() - start) / STEPS)
    return times


def render(header, rows):
    """The table form of fedcluster's `crates/cli/src/table.rs`."""
    width = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda cells: "| " + " | ".join(f"{c:<{w}}" for c, w in zip(cells, width)) + " |"
    out = [line(header), "|" + "|".join("-" * (w + 2) for w in width) + "|"]
    return "\n".join(out + [line(r) for r in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    parser.add_argument("--rounds", type=int, default=5, help="timed calls of 5 steps (default 5)")
    parser.add_argument("--only", help="only the cases whose label contains this")
    args = parser.parse_args()
    torch.manual_seed(0)
    peak = gemm_peak()
    torch.set_num_threads(args.threads)
    rows = []
    for label, kind, model, batch, classes, vocab, fwd, input_flops in cases():
        count = state_count(model)
        print(f"{label}: {count:,} parameters (fedcluster: {EXPECTED_PARAMETERS[kind]:,})", flush=True)
        assert count == EXPECTED_PARAMETERS[kind], f"{label}: {count} != {EXPECTED_PARAMETERS[kind]}"
        if args.only and args.only not in label:
            continue
        d = {"mlp": 784, "cnn-cifar": 3072, "cnn-femnist": 784, "resnet9": 3072, "char-lstm": 80}[kind]
        times = time_case(model, batch, classes, vocab, d, args.rounds)
        med, best = statistics.median_high(times), min(times)
        flops = (3 * fwd - input_flops) * batch
        rows.append([label, f"{count}", f"{batch}", f"{1e3 * med:.2f}", f"{1e3 * best:.2f}",
                     f"{flops / 1e9:.2f}", f"{flops / med / 1e9:.1f}",
                     f"{100 * flops / med / 1e9 / peak:.0f}%", f"{1 / med:.2f}"])
    header = ["model, backend", "parameters", "batch", "ms / step", "best", "GFLOP / step",
              "GFLOP/s", "of peak", "steps/s"]
    print(f"one local SGD step (forward, backward, update; momentum 0.9, lr 1e-3), median of "
          f"{args.rounds} timed calls of {STEPS} steps after one warm-up; torch {torch.__version__}, "
          f"{args.threads} thread(s)")
    print(render(header, rows))
    print(f"peak: {peak:.0f} GFLOP/s, torch.mm's single-thread f32 GEMM (512^3, in cache), measured now")


if __name__ == "__main__":
    main()
