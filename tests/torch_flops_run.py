"""One training step of a small torch model profiled with shapes, and torch.utils.flop_counter's
count of the same step, in a process of its own: `python tests/torch_flops_run.py OUT` writes the
trace under OUT/trace and the counts to OUT/counts.json (flop_counter imports triton, which crashes
a process where TensorFlow is loaded, as the test session's is)."""

from __future__ import annotations

import json
import os
import sys

import torch
from torch.utils import flop_counter


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.grouped = torch.nn.Conv2d(16, 32, 3, padding=2, dilation=2, groups=4)
        self.proj = torch.nn.Linear(32, 24)
        self.head = torch.nn.Linear(24 * 64, 10)

    def forward(self, x):
        y = torch.relu(self.grouped(torch.relu(self.conv(x))))  # [b, 32, 16, 16]
        tokens = self.proj(y.flatten(2).transpose(1, 2))  # [b, 256, 24]
        q = tokens.view(tokens.shape[0], 256, 4, 6).transpose(1, 2)  # [b, 4 heads, 256, 6]
        attended = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        scores = torch.bmm(tokens[:, :64], tokens[:, :64].transpose(1, 2))  # [b, 64, 64]
        return self.head((attended.transpose(1, 2).reshape(tokens.shape[0], 256, 24)[:, :64] + scores[..., :24])
                         .flatten(1))


def main(out: str) -> None:
    torch.manual_seed(0)
    net, x = Net(), torch.randn(4, 3, 32, 32)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        net(x).square().mean().backward()
        opt.step()

    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                schedule=schedule,
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(os.path.join(out, "trace"))) as prof:
        for _ in range(2):
            step()
            prof.step()
    with flop_counter.FlopCounterMode(display=False) as counter:
        step()
    counts = {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}
    # flop_counter registers attention's formulas for the CUDA kernels, not for CPU's
    # `_scaled_dot_product_flash_attention_for_cpu`: the step's ([4, 4 heads, 256, 6]) by them.
    shape = (4, 4, 256, 6)
    attention = flop_counter.sdpa_flop_count(shape, shape, shape) + \
        flop_counter.sdpa_backward_flop_count(shape, shape, shape, shape)
    with open(os.path.join(out, "counts.json"), "w") as f:
        json.dump({"counts": counts, "attention": attention}, f)


if __name__ == "__main__":
    main(sys.argv[1])
