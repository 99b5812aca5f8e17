"""A chat room on the `websockets` library's documented broadcast pattern (its
"Broadcasting" guide: a set of connections and `websockets.broadcast`): every
message a client sends goes to every connected client, the sender's too. On
127.0.0.1 and the port given (0: any free one), which it prints once listening.
For crates/cli/tests/flows.rs; installed by .ci/setup/websockets.sh."""

import asyncio
import sys

from websockets.asyncio.server import broadcast, serve

CONNECTIONS = set()


async def room(websocket):
    CONNECTIONS.add(websocket)
    try:
        async for message in websocket:
            broadcast(CONNECTIONS, message)
    finally:
        CONNECTIONS.remove(websocket)


async def main(port):
    async with serve(room, "127.0.0.1", port) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
