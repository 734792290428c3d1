"""A TCP proxy that delays every byte by --delay-ms in each direction, so a
request/response pair costs 2 x delay of round-trip time (a userspace
stand-in for `tc netem delay`, for kernels without sch_netem). Order is
kept per direction; bandwidth is not limited."""

from __future__ import annotations

import argparse
import asyncio
import time


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    q: asyncio.Queue = asyncio.Queue()

    async def sender() -> None:
        while True:
            due, data = await q.get()
            if data is None:
                break
            d = due - time.monotonic()
            if d > 0:
                await asyncio.sleep(d)
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except OSError:
            pass

    task = asyncio.create_task(sender())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            q.put_nowait((time.monotonic() + delay, data))
    except (ConnectionError, OSError):
        pass
    q.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", default="127.0.0.1:19300")
    p.add_argument("--target", default="127.0.0.1:19200")
    p.add_argument("--delay-ms", type=float, default=36)
    a = p.parse_args()
    delay = a.delay_ms / 1000
    th, tp = a.target.rsplit(":", 1)

    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            sr, sw = await asyncio.open_connection(th, int(tp))
        except OSError:
            cw.close()
            return
        await asyncio.gather(pump(cr, sw, delay), pump(sr, cw, delay))
        for w in (sw, cw):
            w.close()

    lh, lp = a.listen.rsplit(":", 1)
    srv = await asyncio.start_server(handle, lh, int(lp), backlog=1024)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
