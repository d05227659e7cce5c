"""Two ranks (torchrun, the gloo backend on the CPU) for `msprobe -f pytorch
result_change`: rank 1 trains the document's BigNet (net1's output fans out
to net2, so module hooks change net1's gradients), rank 0 a plain chain with
no fan-out. Gradients are not all-reduced (each rank's change stays its own);
the ranks exchange their losses, so the process group is really used. The
report must name rank 1 only."""

import os
import sys

import torch
import torch.distributed as dist
from torch import nn

from bignet import BigNet, seed_all
from msprobe_rs import ResultChange


def main(steps):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seed_all(1234)
    if rank == 1:
        model = BigNet()
    else:
        model = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32))
    rc = ResultChange(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        inputs = torch.randn(3, 32)
        optimizer.zero_grad()
        out = model(inputs)
        loss = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
        loss.backward()
        rc.record(loss)
        losses = torch.stack([loss.detach()])
        dist.all_reduce(losses)
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    # Leave without the interpreter's teardown: on a loaded machine torch 2.15 once aborted a
    # rank there after its records were written ("terminate called without an active
    # exception", SIGABRT, in the module-hooks run), which says nothing of the records.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
