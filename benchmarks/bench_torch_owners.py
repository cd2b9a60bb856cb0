"""What naming a torch run's modules costs: a training step untraced, under torch.profiler alone,
with its `with_stack=True`, and in `tftrace.trace()` (each module's call a range).

    python benchmarks/bench_torch_owners.py        # figures into RESULTS.md

A plain torch loop (CPU, one thread) of two models: an MLP of small module blocks and a small CNN.
Each variant's steps are timed with perf_counter around the whole step (zero_grad, forward, loss,
backward, optimizer step), in rounds that alternate the variants, and the median step of each
variant over all rounds is set against the untraced one's. In brackets: how far the untraced
rounds' own medians spread (this machine's noise at the moment).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
_BEGIN, _END = "<!-- bench_torch_owners begin -->", "<!-- bench_torch_owners end -->"
STEPS, ROUNDS = 30, 7


def _models():
    import torch

    class Block(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc, self.norm = torch.nn.Linear(width, width), torch.nn.LayerNorm(width)

        def forward(self, x):
            return x + torch.relu(self.norm(self.fc(x)))

    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), *[Block(128) for _ in range(6)], torch.nn.Linear(128, 10))
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(64, 10))
    return {"mlp": (mlp, (32, 64)), "cnn": (cnn, (32, 3, 32, 32))}


def _steps(model, shape, wrap) -> list[float]:
    """STEPS training steps inside `wrap()` (a context manager), seconds each."""
    import torch
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    x, y = torch.randn(*shape), torch.randint(0, 10, (shape[0],))
    out = []
    with wrap():
        for _ in range(STEPS):
            t = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            out.append(time.perf_counter() - t)
    return out


def measure(kind: str) -> dict:
    import contextlib

    import torch

    import tftrace
    torch.set_num_threads(1)
    model, shape = _models()[kind]
    tmp = tempfile.mkdtemp(prefix="bench_torch_owners_")
    cpu = [torch.profiler.ProfilerActivity.CPU]
    variants = {"untraced": contextlib.nullcontext,
                "torch.profiler": lambda: torch.profiler.profile(activities=cpu),
                "torch.profiler(with_stack=True)": lambda: torch.profiler.profile(activities=cpu, with_stack=True),
                "tftrace.trace() (module ranges)": lambda: tftrace.trace(tmp, label="bench", python=False)}
    _steps(model, shape, contextlib.nullcontext)  # warm
    got = {name: [] for name in variants}
    rounds = []
    for _ in range(ROUNDS):
        for name, wrap in variants.items():
            steps = _steps(model, shape, wrap)[3:]  # the first steps of a profile pay its start-up
            got[name] += steps
            if name == "untraced":
                rounds.append(statistics.median(steps))
    base = statistics.median(got["untraced"])
    return {"model": kind, "untraced_ms": base * 1e3, "noise": (max(rounds) - min(rounds)) / base,
            "ratios": {k: statistics.median(v) / base for k, v in got.items() if k != "untraced"}}


def main() -> None:
    import torch
    from results import put_block
    results = [measure(k) for k in ("mlp", "cnn")]
    names = list(results[0]["ratios"])
    rows = ["| model | untraced step ms (spread of the rounds' medians) | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names)]
    for r in results:
        rows.append(f"| {r['model']} | {r['untraced_ms']:.3f} ({100 * r['noise']:.0f}%) | "
                    + " | ".join(f"{r['ratios'][n]:.2f}x" for n in names) + " |")
    table = "\n".join(rows)
    print(table)
    block = "\n".join([
        _BEGIN, "## What naming a torch run's modules costs", "",
        f"Produced by `python benchmarks/bench_torch_owners.py` on this 2-core shared machine, CPU only, one "
        f"thread (torch {torch.__version__}): a plain torch training loop, {STEPS} steps a profile, {ROUNDS} "
        "rounds alternating the variants, each variant's median step over the untraced one's (the first three "
        "steps of each profile left out: its start-up). `with_stack=True` records every Python call; "
        "`tftrace.trace()` records one range per module call (global module hooks).", "", table, "", _END])
    put_block(os.path.join(ROOT, "benchmarks", "RESULTS.md"), block, _BEGIN, _END)


if __name__ == "__main__":
    main()
