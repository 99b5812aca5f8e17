"""Puts load on the host for the monitor benchmark and waits: `sleepers N` starts N
sleeping children (one process group of N+1), `sockets N` holds N/2 loopback TCP
connection pairs open (N sockets, plus a listener). Prints its pid, then READY.
Exits when stdin closes or after an hour, taking its children with it."""
import os
import resource
import socket
import subprocess
import sys
import threading


def sleepers(count):
    return [subprocess.Popen(["sleep", "3600"]) for _ in range(count)]


def sockets(count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1000), hard))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    held = [listener]
    for _ in range(count // 2):
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
        held += [client, server]
    return held


def main():
    kind, count = sys.argv[1], int(sys.argv[2])
    held = sleepers(count) if kind == "sleepers" else sockets(count)
    print(os.getpid(), flush=True)
    print("READY", flush=True)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait(3600)
    if kind == "sleepers":
        for child in held:
            child.kill()
            child.wait()


main()
