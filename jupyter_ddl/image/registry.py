"""The registry client: the distribution API's manifest and blob calls, over the one
authenticated, retrying session of ``registry_session.py`` (scheme, login, retries,
counting and one-line errors live there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.manifest import MANIFEST_ACCEPT, sha256_digest
from jupyter_ddl.image.registry_session import RegistrySession


class RegistryClient(RegistrySession):
    """Talks to one registry host (``host:port``) for a set of repository scopes."""

    # -- reachability -------------------------------------------------------
    def ping(self) -> None:
        """``GET /v2/``: is this a registry we can reach and log in to? Raises RegistryError."""
        self.request("GET", "/v2/", what="answering the API ping at /v2/", ok=(200,))

    # -- manifests ----------------------------------------------------------
    def get_manifest(self, repo: str, ref: str) -> tuple[bytes, str, str]:
        """(body, media type, digest) of ``repo:ref``; the digest is computed locally."""
        resp = self.request(
            "GET",
            f"/v2/{repo}/manifests/{ref}",
            what=f"reading {self.host}/{repo}:{ref}",
            ok=(200,),
            headers={"Accept": MANIFEST_ACCEPT},
        )
        body, digest = resp.content, sha256_digest(resp.content)
        if ref.startswith("sha256:") and ref != digest:
            raise RegistryError(
                tr(
                    "registry {host} sent a manifest that does not match {ref}",
                    host=self.host,
                    ref=ref,
                )
            )
        return body, resp.headers.get("Content-Type", "").split(";")[0], digest

    def head_manifest(self, repo: str, ref: str) -> str | None:
        """The digest of ``repo:ref`` if it exists, else None."""
        resp = self.request(
            "HEAD",
            f"/v2/{repo}/manifests/{ref}",
            what=f"checking {repo}:{ref}",
            ok=(200, 404),
            headers={"Accept": MANIFEST_ACCEPT},
        )
        return resp.headers.get("Docker-Content-Digest") if resp.status_code == 200 else None

    def put_manifest(self, repo: str, ref: str, body: bytes, media_type: str) -> str:
        resp = self.request(
            "PUT",
            f"/v2/{repo}/manifests/{ref}",
            what=f"pushing the manifest of {repo}:{ref}",
            ok=(201, 200),
            data=body,
            headers={"Content-Type": media_type},
        )
        return resp.headers.get("Docker-Content-Digest") or sha256_digest(body)

    # -- blobs --------------------------------------------------------------
    def head_blob(self, repo: str, digest: str) -> bool:
        resp = self.request(
            "HEAD", f"/v2/{repo}/blobs/{digest}", what=f"checking blob {digest[:19]}", ok=(200, 404)
        )
        return resp.status_code == 200

    def get_blob(self, repo: str, digest: str) -> bytes:
        resp = self.request(
            "GET",
            f"/v2/{repo}/blobs/{digest}",
            what=f"reading blob {digest[:19]} of {repo}",
            ok=(200,),
        )
        if sha256_digest(resp.content) != digest:
            raise RegistryError(
                tr(
                    "registry {host} sent a blob not matching {digest}",
                    host=self.host,
                    digest=digest,
                )
            )
        return resp.content

    def stream_blob(self, repo: str, digest: str, chunk: int) -> Iterator[bytes]:
        """The blob's bytes in pieces of at most ``chunk`` bytes, never all in memory."""
        resp = self.request(
            "GET",
            f"/v2/{repo}/blobs/{digest}",
            what=f"reading blob {digest[:19]} of {repo}",
            ok=(200,),
            stream=True,
        )
        with resp:
            for piece in resp.iter_content(chunk_size=chunk):
                self.stats.count(bytes_down=len(piece))
                yield piece

    def mount_blob(self, repo: str, digest: str, source_repo: str) -> str | None:
        """Cross-repository mount; None when mounted, else the upload URL the registry
        opened instead (the blob is not readable from ``source_repo``)."""
        resp = self.request(
            "POST",
            f"/v2/{repo}/blobs/uploads/",
            params={"mount": digest, "from": source_repo},
            what=f"mounting blob {digest[:19]} from {source_repo}",
            ok=(201, 202),
        )
        return None if resp.status_code == 201 else self._location(resp)

    def start_upload(self, repo: str) -> str:
        resp = self.request(
            "POST", f"/v2/{repo}/blobs/uploads/", what=f"starting an upload to {repo}", ok=(202,)
        )
        return self._location(resp)

    def upload_blob(self, repo: str, data: bytes, digest: str, url: str | None = None) -> None:
        """Monolithic upload: POST (unless ``url`` is an upload already opened), then PUT
        with the whole body (distribution ignores single-request ``POST ?digest=`` bodies)."""
        url = url or self.start_upload(repo)
        self.request(
            "PUT",
            _with_digest(url, digest),
            data=data,
            what=f"uploading blob {digest[:19]} to {repo}",
            ok=(201,),
            headers={"Content-Type": "application/octet-stream"},
        )
        self.stats.count(blobs_uploaded=1)

    def upload_stream(
        self,
        repo: str,
        chunks: Iterable[bytes],
        digest: str,
        *,
        url: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Streamed upload: POST, one PATCH whose body is sent chunk by chunk as
        ``chunks`` yields (HTTP chunked encoding, so memory holds a chunk at a time),
        PUT ``?digest=``. Not retried here: the caller restarts the whole blob."""

        def body() -> Iterator[bytes]:
            for piece in chunks:
                self.stats.count(bytes_up=len(piece))
                yield piece
                if progress:
                    progress(len(piece))

        url = url or self.start_upload(repo)
        what = f"uploading blob {digest[:19]} to {repo}"
        headers = {"Content-Type": "application/octet-stream"}
        resp = self.request("PATCH", url, data=body(), what=what, ok=(202,), headers=headers)
        url = self._location(resp)
        self.request("PUT", _with_digest(url, digest), what=what, ok=(201,))
        self.stats.count(blobs_uploaded=1)


def _with_digest(url: str, digest: str) -> str:
    return url + ("&" if "?" in url else "?") + "digest=" + digest
