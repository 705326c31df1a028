#!/usr/bin/env python3
"""ssh's stand-in over an emulated slow link, for the remote click benchmark (docs/remote.md, docs/performance.md).

Called as ssh is, `slow-link.py [USER@]HOST COMMAND...`, it runs COMMAND here (as tests/remote/local-ssh.sh does) and
relays its stdin and stdout through a link with a round trip of ATTNSCOPE_LINK_RTT_MS milliseconds (default 50, half
each way) and a bandwidth of ATTNSCOPE_LINK_MBIT megabits per second (default 100) in each direction: every chunk is
sent once the link has finished sending the ones before it (len / bandwidth) and arrives half a round trip later.
Stderr is passed through as it is. `tc netem` does this in the kernel where one may use it; this needs no root.
ATTNSCOPE_LINK_HOME, when set, is the host's home: HOME, and where the command runs, as sshd runs it, so
that a relative path is one the host has and this side has not (the benchmark's model).
"""

import os
import queue
import subprocess
import sys
import threading
import time

RTT = float(os.environ.get("ATTNSCOPE_LINK_RTT_MS", "50")) / 1000.0
BYTES_PER_S = float(os.environ.get("ATTNSCOPE_LINK_MBIT", "100")) * 1e6 / 8.0


def relay(src, dst, close_dst):
    """Reads chunks from fd `src` and writes each to fd `dst` when the emulated link delivers it."""
    arrivals = queue.Queue()

    def deliver():
        while True:
            item = arrivals.get()
            if item is None:
                break
            due, chunk = item
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            view = memoryview(chunk)
            while view:
                written = os.write(dst, view)
                view = view[written:]
        close_dst()

    writer = threading.Thread(target=deliver, daemon=True)
    writer.start()
    free_at = 0.0  # when the link has sent everything before
    while True:
        chunk = os.read(src, 1 << 16)
        if not chunk:
            break
        start = max(time.monotonic(), free_at)
        free_at = start + len(chunk) / BYTES_PER_S
        arrivals.put((free_at + RTT / 2, chunk))
    arrivals.put(None)
    return writer


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: slow-link.py HOST COMMAND...\n")
        return 2
    home = os.environ.get("ATTNSCOPE_LINK_HOME")
    env = dict(os.environ, HOME=home) if home else None
    child = subprocess.Popen(["sh", "-c", " ".join(sys.argv[2:])], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                             cwd=home or None, env=env)
    up = threading.Thread(target=relay, args=(sys.stdin.fileno(), child.stdin.fileno(), child.stdin.close), daemon=True)
    up.start()
    down = relay(child.stdout.fileno(), sys.stdout.fileno(), lambda: os.close(sys.stdout.fileno()))
    down.join()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
