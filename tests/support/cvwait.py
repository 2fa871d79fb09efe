# SPDX-License-Identifier: Apache-2.0
"""Waiting on a condition variable until a predicate holds, for the test
stand-ins (API server, kubelet). The timeout only bounds a failing test:
nothing is asserted about time."""
import time


def cv_wait(cv, pred, timeout, what, who):
    """Waits until pred() (called with cv's lock held) is true; raises
    AssertionError naming `who` and `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with cv:
        while not pred():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: timed out waiting for %s" % (who, what))
            cv.wait(min(left, 0.2))
