"""A training that prints a line, then waits for the file $RC_TEST_GATE
before it trains (the nofanout chain, one step): a test reads that line
from `msprobe result_change` while the run is still going, then opens the
gate. Exits 3 when no gate appears within two minutes."""

import os
import sys
import time

from nofanout import main

print("gated training started", flush=True)
gate = os.environ["RC_TEST_GATE"]
deadline = time.monotonic() + 120
while not os.path.exists(gate):
    if time.monotonic() > deadline:
        print("no gate", file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(0.05)
main(1)
