"""Two MindSpore processes started by hand, as msrun starts its workers
(each with its own RANK_ID), for `msprobe -f mindspore result_change`:
rank 1 trains the document's BigNet (net1's output fans out to net2), rank 0
a Dense chain with no fan-out. The report must name rank 1 only."""

import os
import subprocess
import sys

import numpy as np


def chain(steps):
    import mindspore as ms
    from mindspore import nn

    from msprobe_rs import ResultChange

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(1234)
    np.random.seed(1234)
    net = nn.SequentialCell([nn.Dense(32, 32), nn.Tanh(), nn.Dense(32, 1)])
    rc = ResultChange(net)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)
    value_and_grad = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    for _ in range(steps):
        loss, grads = value_and_grad(ms.Tensor(np.random.randn(3, 32).astype(np.float32)))
        rc.record(loss, grads)
        optimizer(grads)


def launch(steps):
    here = os.path.dirname(os.path.abspath(__file__))
    workers = [
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(steps)], env={**os.environ, "RANK_ID": "0"}),
        subprocess.Popen([sys.executable, os.path.join(here, "bignet_ms.py"), str(steps)], env={**os.environ, "RANK_ID": "1"}),
    ]
    codes = [w.wait() for w in workers]
    sys.exit(max(codes))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        chain(int(sys.argv[2]))
    else:
        launch(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
