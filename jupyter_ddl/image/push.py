"""Pushing an appended image: blobs first (skip, mount or stream-copy), manifest last.

Base layers are never downloaded into memory: inside one registry they are mounted
from the base repository; from another registry they are copied as a stream of
bounded chunks (GET → one streamed PATCH, a reader thread a few chunks ahead). The
code layer and the config are small: a mount-check, then one PUT each. Blobs move a
few at a time; the manifest goes last, so a tag never names an image whose blobs are
missing.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from jupyter_ddl._util.queues import put_until_stopped
from jupyter_ddl.errors import TransientRegistryError
from jupyter_ddl.image.append import AppendedImage
from jupyter_ddl.image.layer import Layer
from jupyter_ddl.image.progress import PROGRESS_THRESHOLD, ProgressCallback
from jupyter_ddl.image.registry import RegistryClient

log = logging.getLogger(__name__)

#: bytes read and sent at a time when copying a blob between registries
CHUNK_SIZE = 4 * 1024 * 1024
#: chunks read ahead of the upload, so download and upload overlap; memory holds
#: about (PREFETCH + 2) chunks whatever the blob's size
PREFETCH = 3
#: blobs checked or moved at the same time, and big copies among them (each holds
#: about PREFETCH + 2 chunks of memory)
PARALLEL = 4
PARALLEL_COPIES = 2
#: attempts at copying one blob when the connection drops or a registry fails (5xx)
COPY_ATTEMPTS = 3


@dataclass
class _Step:
    """One blob to move: ``action`` is "upload" (bytes we hold) or "copy" (stream)."""

    action: str
    digest: str
    size: int
    data: bytes | None = None
    url: str | None = None  # an upload the registry opened already (a mount it refused)


@dataclass(frozen=True)
class Source:
    """Where the base image's blobs can be read."""

    client: RegistryClient
    repository: str


def _plan_base_layer(
    desc: dict[str, Any], src: Source, dst: RegistryClient, repo: str
) -> _Step | None:
    digest, size = desc["digest"], int(desc.get("size", 0))
    if src.client is dst:
        if src.repository == repo:
            dst.stats.count(blobs_skipped=1)
            return None  # the base manifest in this repository already links it
        # a mount answers 201 when the blob is readable, whether or not the target
        # repository had it: one request where HEAD + mount would take two
        url = dst.mount_blob(repo, digest, src.repository)
        if url is None:
            dst.stats.count(blobs_mounted=1)
            return None
        return _Step("copy", digest, size, url=url)
    if dst.head_blob(repo, digest):
        dst.stats.count(blobs_skipped=1)
        return None
    return _Step("copy", digest, size)


def _plan_own_blob(data: bytes, digest: str, dst: RegistryClient, repo: str) -> _Step | None:
    # a "mount" from the target repository itself is the existence check: 201 when the
    # blob is there already, else the registry opens the upload we need anyway (one
    # request where HEAD + POST would take two; registries without mounts answer 202)
    url = dst.mount_blob(repo, digest, repo)
    if url is None:
        dst.stats.count(blobs_skipped=1)
        return None
    return _Step("upload", digest, len(data), data=data, url=url)


def push_image(
    image: AppendedImage,
    layer: Layer,
    *,
    src: Source,
    dst: RegistryClient,
    repository: str,
    tag: str,
    progress: ProgressCallback | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> str:
    """Push ``image`` (whose last layer is ``layer``) as ``repository:tag``; returns the
    manifest digest the registry reports. Raises RegistryError."""
    checks: list[Callable[[], _Step | None]] = [
        partial(_plan_base_layer, d, src, dst, repository) for d in image.base_layers
    ]
    checks.append(partial(_plan_own_blob, layer.data, layer.digest, dst, repository))
    checks.append(partial(_plan_own_blob, image.config, image.config_digest, dst, repository))
    # blobs are independent: check and move them a few at a time (round trips, not
    # bandwidth, dominate a small push); big copies take a slot of a smaller semaphore
    with ThreadPoolExecutor(PARALLEL, thread_name_prefix="ddl-push") as pool:
        steps = [s for s in pool.map(lambda check: check(), checks) if s is not None]
        total = sum(s.size for s in steps)
        report = _Reporter(progress if total >= PROGRESS_THRESHOLD else None, total)
        copies = threading.Semaphore(PARALLEL_COPIES)

        def move(step: _Step) -> None:
            if step.action == "upload":
                assert step.data is not None
                dst.upload_blob(repository, step.data, step.digest, url=step.url)
                report(step.size)
            else:
                with copies:
                    _copy_blob(step, src, dst, repository, chunk_size, report)

        list(pool.map(move, steps))
    report.finish()
    return dst.put_manifest(repository, tag, image.manifest, image.media_type)


def _copy_blob(
    step: _Step, src: Source, dst: RegistryClient, repo: str, chunk_size: int, report: _Reporter
) -> None:
    """Stream one blob from the source registry into ``repo``; a dropped connection or
    a 5xx restarts the blob (a half-sent stream cannot be replayed)."""
    for attempt in range(COPY_ATTEMPTS):
        sent = [0]

        def progress(n: int, sent: list[int] = sent) -> None:
            sent[0] += n
            report(n)

        pieces = prefetch(src.client.stream_blob(src.repository, step.digest, chunk_size), PREFETCH)
        try:
            dst.upload_stream(repo, pieces, step.digest, url=step.url, progress=progress)
            return
        except TransientRegistryError:
            if attempt == COPY_ATTEMPTS - 1:
                raise
            log.info("copy of %s failed; starting it again", step.digest[:19])
            report(-sent[0])
            step.url = None
            time.sleep(0.5 * 2**attempt)
        finally:
            pieces.close()


def prefetch(source: Iterator[bytes], depth: int) -> Generator[bytes, None, None]:
    """Yield ``source``'s items while a thread reads up to ``depth`` ahead."""
    q: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def reader() -> None:
        try:
            for item in source:
                if not put_until_stopped(q, item, stop):
                    return
            q.put(None)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer thread
            q.put(e)

    thread = threading.Thread(target=reader, name="ddl-blob-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)


class _Reporter:
    """Adds up bytes moved and calls the user's ``progress(done, total)``."""

    def __init__(self, callback: Callable[[int, int], None] | None, total: int) -> None:
        self.callback, self.total, self.done = callback, total, 0
        self._lock = threading.Lock()  # called from several push threads

    def __call__(self, n: int) -> None:
        with self._lock:
            self.done += n
            if self.callback:
                self.callback(max(0, min(self.done, self.total)), self.total)

    def finish(self) -> None:
        with self._lock:
            if self.callback:
                self.callback(self.total, self.total)
