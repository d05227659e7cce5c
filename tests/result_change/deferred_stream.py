"""Document 36's first cause, synchronisation, on the CPU: a training whose
result depends on the order of two threads' writes into the gradients. A
device runs kernels asynchronously: the host launches, then goes on. This
script's `Stream` is such a device (a thread that runs the launched kernels
when the stream is synchronised), unless ASCEND_LAUNCH_BLOCKING=1 or
CUDA_LAUNCH_BLOCKING=1, which make each launch wait for its kernel, as they
make a real device do. The training unscales its loss-scaled gradients on
the device and clips them on the host without synchronising first (the
race): asynchronously the host clips the still-scaled values, and the
result changes when synchronisation is forced, as with the tool on."""

import os
import queue
import sys
import threading

from torch import nn

from nofanout import chain, seeded, train

SCALE = 1024.0


class Stream:
    """An accelerator's stream as the host sees it: launched kernels run on
    the device's thread when the stream is synchronised; with launch
    blocking, each launch waits for its kernel."""

    def __init__(self):
        self.blocking = "1" in (os.environ.get("ASCEND_LAUNCH_BLOCKING"), os.environ.get("CUDA_LAUNCH_BLOCKING"))
        self.pending = []
        self.work = queue.Queue()
        threading.Thread(target=self._device, daemon=True).start()

    def _device(self):
        while True:
            kernels, done = self.work.get()
            for kernel in kernels:
                kernel()
            done.set()

    def _run(self, kernels):
        done = threading.Event()
        self.work.put((kernels, done))
        done.wait()

    def launch(self, kernel):
        if self.blocking:
            self._run([kernel])
        else:
            self.pending.append(kernel)

    def synchronize(self):
        kernels, self.pending = self.pending, []
        self._run(kernels)


def main(steps):
    seeded()
    model = chain()
    stream = Stream()
    params = list(model.parameters())

    def backward(loss):
        (loss * SCALE).backward()
        stream.launch(lambda: [p.grad.div_(SCALE) for p in params])
        nn.utils.clip_grad_value_(params, 0.05)  # on the host, before synchronising: the race
        stream.synchronize()

    train(model, steps, backward=backward)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
