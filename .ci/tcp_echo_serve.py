#!/usr/bin/env python3
"""Checks `tcp_echo --serve`: routine resets are counted, not printed one by one.

Usage: python3 .ci/tcp_echo_serve.py PATH/TO/tcp_echo

Starts the example with `--serve 0` (the kernel picks the port; the example prints it),
makes RESETS connections that each do one echo round trip and then reset (SO_LINGER 0, so
the close sends RST), and CLEAN connections that close normally. Then it waits for the
once-a-second summary line, sends SIGTERM, and checks that:
- the example exits 0 after printing its final summary, with the right counts;
- no line was printed per reset connection (only the summaries);
- the periodic summary reported all the resets.
Everything stays on 127.0.0.1, and every wait is bounded.
"""

import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

RESETS = 200
CLEAN = 5
DEADLINE = 10.0  # seconds, for each wait below


def fail(msg, lines):
    print(f"FAILED tcp_echo --serve: {msg}")
    print("its stderr was:")
    for line in lines:
        print("  " + line)
    sys.exit(1)


def round_trip(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.sendall(b"ping")
    got = b""
    while len(got) < 4:
        chunk = s.recv(4 - len(got))
        if not chunk:
            raise RuntimeError("the server closed before echoing")
        got += chunk
    if got != b"ping":
        raise RuntimeError(f"echo came back as {got!r}")
    return s


def main():
    exe = sys.argv[1]
    proc = subprocess.Popen(
        [exe, "--serve", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    seen = threading.Condition()

    def reader():
        for line in proc.stderr:
            with seen:
                lines.append(line.rstrip("\n"))
                seen.notify_all()
        with seen:
            seen.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def wait_for(pattern):
        end = time.monotonic() + DEADLINE
        with seen:
            while True:
                for line in lines:
                    m = re.search(pattern, line)
                    if m:
                        return m
                left = end - time.monotonic()
                if left <= 0 or proc.poll() is not None:
                    return None
                seen.wait(left)

    try:
        m = wait_for(r"serving on 127\.0\.0\.1:(\d+)")
        if not m:
            fail("it did not say where it serves", lines)
        port = int(m.group(1))

        for _ in range(RESETS):
            s = round_trip(port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # RST
        for _ in range(CLEAN):
            s = round_trip(port)
            s.shutdown(socket.SHUT_WR)
            s.recv(1)  # EOF once the server has closed its side
            s.close()

        if not wait_for(rf"tcp_echo: {RESETS} connections reset by their peers so far"):
            fail(f"no summary line reporting {RESETS} resets within {DEADLINE} s", lines)
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            fail(f"still running {DEADLINE} s after SIGTERM", lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.1)  # let the reader thread take the last lines

    with seen:
        lines = list(lines)
    if status != 0:
        fail(f"exit status {status} after SIGTERM; expected 0", lines)
    final = rf"SIGTERM: exiting; {CLEAN} connections closed by their peers .* {RESETS} reset by their peers"
    if not any(re.search(final, line) for line in lines):
        fail("no final summary with the right counts", lines)
    per_connection = [line for line in lines if line.startswith("server: ")]
    if per_connection:
        fail(f"{len(per_connection)} per-connection error lines printed", lines)
    print(
        f"tcp_echo --serve: {RESETS} resets counted in {len(lines)} stderr lines, "
        f"{CLEAN} clean closes, exit 0 on SIGTERM"
    )


if __name__ == "__main__":
    main()
