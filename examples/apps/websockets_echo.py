"""The `websockets` library's documented echo server (its quick start), on
127.0.0.1 and the port given (0: any free one), which it prints once listening.
For crates/cli/tests/streaming.rs; installed by .ci/setup/websockets.sh."""

import asyncio
import sys

from websockets.asyncio.server import serve


async def echo(websocket):
    async for message in websocket:
        await websocket.send(message)


async def main(port):
    async with serve(echo, "127.0.0.1", port) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
