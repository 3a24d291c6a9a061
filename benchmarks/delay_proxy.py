"""A TCP proxy that puts a cluster ``DELAY`` seconds of round trip away (helper, no ``run``).

The real apiserver answers in a millisecond on this machine; a cluster in another zone
is tens of milliseconds away. Every byte is held for half the delay in each direction,
in order, so each request and its answer (TLS handshakes and watch streams included)
cost one more ``DELAY``, and a new connection one more again (its TCP handshake).
Bandwidth is not limited. TLS passes through untouched: the client checks the
apiserver's own certificate (issued for 127.0.0.1), so only the port in the
kubeconfig changes (``proxied_kubeconfig``).

Run in its own interpreter (``delayed``), as a network would be: sharing the
benchmark's GIL would slow both sides.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from benchmarks.k8s_logs import double_process
from benchmarks.launchers import free_port

CHUNK = 65536


async def _pump(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, one_way: float, first: float
) -> None:
    """Copy reader to writer, each chunk released ``one_way`` s after it arrived
    (the first also ``first`` s later: the connection's handshake)."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        extra = first
        while True:
            data = await reader.read(CHUNK)
            await queue.put((time.monotonic() + one_way + extra, data))
            extra = 0.0
            if not data:
                return

    async def write() -> None:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(port: int, upstream: tuple[str, int], delay: float) -> None:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(*upstream)
        except OSError:
            cw.close()
            return
        half = delay / 2
        try:
            await asyncio.gather(_pump(cr, uw, half, delay), _pump(ur, cw, half, 0.0))
        except asyncio.CancelledError:  # the proxy stopping with the connection open
            cw.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    # the parent closes our stdin to stop us
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


def proxied_kubeconfig(source: Path, target: Path, port: int) -> Path:
    """``source`` with every cluster's server on 127.0.0.1:``port`` (same scheme, same
    certificate authority): the path the proxy sits on."""
    doc = yaml.safe_load(source.read_text())
    for cluster in doc.get("clusters", []):
        url = urlsplit(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{url.scheme}://127.0.0.1:{port}{url.path}"
    target.write_text(yaml.safe_dump(doc))
    target.chmod(0o600)  # it holds the user's token, as the source does
    return target


def upstream_of(kubeconfig: Path) -> tuple[str, int]:
    doc = yaml.safe_load(kubeconfig.read_text())
    url = urlsplit(doc["clusters"][0]["cluster"]["server"])
    return url.hostname or "127.0.0.1", url.port or 443


@contextmanager
def delayed(kubeconfig: Path, target: Path, delay: float) -> Iterator[Path]:
    """A kubeconfig at ``target`` whose server is ``kubeconfig``'s, ``delay`` s away."""
    if not 0 <= delay <= 5:
        raise ValueError(f"delay {delay} s is outside 0-5 s")
    host, up_port = upstream_of(kubeconfig)
    port = free_port()
    code = "from benchmarks.delay_proxy import main; main()"
    with double_process(code, str(port), host, str(up_port), str(delay)):
        yield proxied_kubeconfig(kubeconfig, target, port)


def main() -> None:
    port, host, up_port, delay = sys.argv[1:5]
    asyncio.run(_serve(int(port), (host, int(up_port)), float(delay)))


if __name__ == "__main__":
    main()
