#!/usr/bin/python3
"""A job for testbed_test.py: moves --mb MiB from the last rank to rank 0
over TCP and records how long it took.

Under a Tiresias agent (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
TIRESIAS_NODE_NAME, TIRESIAS_CHECKPOINT_DIR). Rank 0 listens on
MASTER_ADDR:MASTER_PORT; the last rank connects and sends. With WORLD_SIZE
1 the one task does both (a sender thread), so the bytes go to its own
server's address and stay on that namespace's loopback. Rank 0 writes
$TIRESIAS_CHECKPOINT_DIR/transfer.json: {"bytes", "seconds", "peer",
"node", "listen"}.
"""
import json
import os
import socket
import sys
import threading
import time

CHUNK = 1 << 20


def send(addr, port, total):
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    data = b"\0" * CHUNK
    with conn:
        for _ in range(total // CHUNK):
            conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)  # the receiver's close: every byte has arrived


def receive(listener, total):
    conn, peer = listener.accept()
    buf = bytearray(CHUNK)
    got, start = 0, None
    with conn:
        while got < total:
            n = conn.recv_into(buf)
            if n == 0:
                break
            if start is None:
                start = time.monotonic()
            got += n
        seconds = time.monotonic() - start
    return got, seconds, peer[0]


def main():
    mb = int(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 8
    total = mb * CHUNK
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if rank == world - 1 and rank != 0:
        send(addr, port, total)
        return
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(1)
    if world == 1:
        threading.Thread(target=send, args=(addr, port, total),
                         daemon=True).start()
    got, seconds, peer = receive(listener, total)
    out = os.path.join(os.environ["TIRESIAS_CHECKPOINT_DIR"], "transfer.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"bytes": got, "seconds": seconds, "peer": peer,
                   "listen": addr,
                   "node": os.environ.get("TIRESIAS_NODE_NAME", "")}, f)
    if got != total:
        sys.exit(f"transfer_job.py: got {got} of {total} bytes")


if __name__ == "__main__":
    main()
