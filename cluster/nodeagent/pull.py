"""Pulling a container's image, as the kubelet asks containerd to, from a registry the
tier is told about (the agent's `--registries` file, one registry a line, which
`scripts/cluster` keeps at `.cluster/registries` and a test adds its own registry to).

What is real: the bytes. The manifest (an index resolves to this machine's platform),
the image config and every layer come from the registry over its HTTP API (plain HTTP
for `http://HOST` lines and for loopback hosts, as containerd allows them; HTTPS with
this machine's CAs otherwise), each checked against its sha256 digest, cached under
the agent's image directory, and laid out in order with their whiteouts (unpack.py).
A container then sees the directories the image adds that this machine lacks (the
code directory an appended layer holds, for one) as overlays of that rootfs with a
writable layer of its own (sandbox.py, enter.py), its image's WorkingDir and Env (but
PATH, which stays the stand-in's). A registry that asks for a login is answered with
the pod's pull secrets (auth.py).

What stands in: the base image's OS. Its files under directories this machine has
(`/usr`, `/etc`, ...) are not shown; the machine's own programs and the tier's
interpreter run the container (image.py). An image on a registry the tier is not told
about is not pulled at all, as before.

imagePullPolicy as the kubelet reads it: Always resolves the reference each start
(blobs already cached are not fetched again), IfNotPresent uses a cached image,
Never refuses an image that is not cached (ErrImageNeverPull). A failed pull is
ErrImagePull with the registry's words, then ImagePullBackOff while the back-off runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import auth
from .unpack import UnpackError, unpack

MANIFESTS = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
INDEXES = MANIFESTS[:2]
MAX_MANIFEST = 4 << 20  # bytes: a manifest or config larger than this is refused
TIMEOUT = 60.0
CHUNK = 1 << 20
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


class PullFailed(Exception):
    """The kubelet's waiting reason (ErrImagePull, ErrImageNeverPull) and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class Ref:
    host: str
    repo: str
    tag: str | None
    digest: str | None

    def __str__(self) -> str:
        return (
            f"{self.host}/{self.repo}"
            + (f":{self.tag}" if self.tag else "")
            + (f"@{self.digest}" if self.digest else "")
        )


@dataclass(frozen=True)
class Pulled:
    digest: str  # the image manifest's
    rootfs: Path
    config: dict[str, Any] = field(default_factory=dict)  # the image config's `config`
    # `host/repo@sha256:...` of what the reference resolved to (an index's own digest
    # for a multi-platform image), as containerd reports an image it pulled
    repo_digest: str = ""

    @property
    def env(self) -> dict[str, str]:
        pairs = (e.split("=", 1) for e in self.config.get("Env") or [] if "=" in e)
        return {k: v for k, v in pairs if k != "PATH"}

    @property
    def workdir(self) -> str | None:
        return self.config.get("WorkingDir") or None


def parse(image: str) -> Ref | None:
    """A reference with a registry host (a `.` or `:` in its first part, or localhost)."""
    rest, _, digest = image.partition("@")
    host, _, path = rest.partition("/")
    if not path or not ("." in host or ":" in host or host == "localhost"):
        return None
    tag = None
    if ":" in path.rsplit("/", 1)[-1]:
        path, _, tag = path.rpartition(":")
    if not digest and not tag:
        tag = "latest"
    return Ref(host, path, tag, digest or None)


def policy_of(container: dict[str, Any], ref: Ref) -> str:
    """The pull policy, defaulted as the API server defaults it."""
    given = container.get("imagePullPolicy")
    if given in ("Always", "IfNotPresent", "Never"):
        return str(given)
    return "Always" if ref.tag == "latest" and not ref.digest else "IfNotPresent"


def read_registries(path: Path | None) -> dict[str, str]:
    """host -> base URL, from the registries file (missing: none)."""
    out: dict[str, str] = {}
    try:
        lines = path.read_text().splitlines() if path else []
    except OSError:
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        scheme, _, host = line.rpartition("://")
        if not scheme:
            loop = host.split(":")[0] in ("127.0.0.1", "localhost", "[::1]")
            scheme = "http" if loop else "https"
        out[host.rstrip("/")] = f"{scheme}://{host.rstrip('/')}"
    return out


def _words(e: urllib.error.HTTPError) -> str:
    """The registry's own error words: `404 MANIFEST_UNKNOWN: manifest unknown`."""
    try:
        body = json.loads(e.read(64 << 10) or b"{}")
        errs = [f"{x.get('code', '')}: {x.get('message', '')}" for x in body.get("errors") or []]
    except (ValueError, OSError, AttributeError):
        errs = []
    return f"{e.code} {e.reason}" + (f": {'; '.join(errs)}" if errs else "")


class Registry:
    def __init__(self, base: str, ref: Ref, cred: auth.Credential | None = None) -> None:
        self.base, self.ref, self.cred = base, ref, cred
        self.context = ssl.create_default_context() if base.startswith("https") else None
        self.authorization: str | None = None  # once a 401 has been answered

    def open(self, kind: str, what: str, accept: tuple[str, ...] = ()) -> Any:
        url = f"{self.base}/v2/{self.ref.repo}/{kind}/{what}"
        for attempt in (0, 1):
            headers = {"Accept": ", ".join(accept)} if accept else {}
            if self.authorization:
                headers["Authorization"] = self.authorization
            req = urllib.request.Request(url, headers=headers)
            try:
                return urllib.request.urlopen(req, timeout=TIMEOUT, context=self.context)
            except urllib.error.HTTPError as e:
                if e.code != 401 or attempt or not self._login(e.headers.get("WWW-Authenticate")):
                    raise PullFailed("ErrImagePull", f"GET {url}: {_words(e)}") from None
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                raise PullFailed("ErrImagePull", f"GET {url}: {reason}") from None
        raise AssertionError("unreachable")

    def _login(self, header: str | None) -> bool:
        """Answer the registry's challenge; False when there is nothing to answer with."""
        scheme, params = auth.challenge(header or "")
        if scheme == "basic" and self.cred:
            self.authorization = auth.basic(self.cred)
            return True
        if scheme != "bearer" or not params.get("realm"):
            return False
        query = {k: params[k] for k in ("service", "scope") if params.get(k)}
        if "scope" not in query:
            query["scope"] = f"repository:{self.ref.repo}:pull"
        url = params["realm"] + "?" + urllib.parse.urlencode(query)
        headers = {"Authorization": auth.basic(self.cred)} if self.cred else {}
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), timeout=TIMEOUT
            ) as r:
                body = json.loads(r.read(MAX_MANIFEST))
        except urllib.error.HTTPError as e:
            raise PullFailed(
                "ErrImagePull", f"failed to fetch token from {url}: {_words(e)}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise PullFailed("ErrImagePull", f"failed to fetch token from {url}: {e}") from None
        token = body.get("token") or body.get("access_token")
        self.authorization = f"Bearer {token}" if token else None
        return bool(token)

    def small(self, kind: str, what: str, accept: tuple[str, ...] = ()) -> tuple[bytes, str]:
        with self.open(kind, what, accept) as r:
            data = r.read(MAX_MANIFEST + 1)
            mtype = r.headers.get("Content-Type", "").split(";")[0]
        if len(data) > MAX_MANIFEST:
            raise PullFailed("ErrImagePull", f"{kind} {what} is over {MAX_MANIFEST} bytes")
        return data, mtype

    def blob(self, digest: str, dest: Path) -> None:
        """Fetch a blob to DEST, checked against its digest."""
        tmp = dest.with_name(dest.name + f".part-{threading.get_ident()}")
        h = hashlib.sha256()
        with self.open("blobs", digest) as r, open(tmp, "wb") as f:
            while chunk := r.read(CHUNK):
                h.update(chunk)
                f.write(chunk)
        if f"sha256:{h.hexdigest()}" != digest:
            tmp.unlink(missing_ok=True)
            raise PullFailed(
                "ErrImagePull", f"blob {digest}: the bytes received have another digest"
            )
        tmp.rename(dest)


def _check(data: bytes, digest: str, what: str) -> None:
    if digest.startswith("sha256:") and f"sha256:{hashlib.sha256(data).hexdigest()}" != digest:
        raise PullFailed("ErrImagePull", f"{what} {digest}: the bytes received have another digest")


class Puller:
    """The node's image store: blobs, one rootfs per image manifest, and what each
    reference last resolved to."""

    def __init__(self, root: Path, registries: Path | None) -> None:
        self.root, self.registries = root, registries
        self.guard = threading.Lock()
        self.locks: dict[str, threading.Lock] = {}

    def reference(self, image: str) -> tuple[Ref, str] | None:
        """The reference and its registry's URL when the tier is told about it."""
        ref = parse(image)
        if ref is None:
            return None
        base = read_registries(self.registries).get(ref.host)
        return (ref, base) if base else None

    def _lock(self, key: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(key, threading.Lock())

    def _ref_file(self, image: str) -> Path:
        return self.root / "refs" / hashlib.sha256(image.encode()).hexdigest()[:32]

    def cached(self, image: str) -> Pulled | None:
        try:
            digest, _, repo_digest = self._ref_file(image).read_text().strip().partition("\n")
        except OSError:
            return None
        return self._image(digest, repo_digest)

    def _image(self, digest: str, repo_digest: str = "") -> Pulled | None:
        d = self.root / "images" / digest.replace(":", "-")
        try:
            config = json.loads((d / "config.json").read_text())
        except (OSError, ValueError):
            return None
        return Pulled(digest, d / "rootfs", config.get("config") or {}, repo_digest)

    def ensure(
        self, container: dict[str, Any], ring: list[tuple[str, auth.Credential]] | None = None
    ) -> Pulled | None:
        """The container's image, pulled as its policy says; None when its registry is
        not one the tier knows (the stand-in runs it). RING: the pod's pull secrets
        (auth.keyring); without a matching credential the pull is anonymous, else each
        one that matches is tried in turn, as the kubelet does. A cached image pulled
        with a login serves only a pod holding that login; another pod pulls (the
        kubelet's KubeletEnsureSecretPulledImages, beta and on since 1.35, under its
        default NeverVerifyPreloadedImages: images/pullmanager/image_pull_manager.go).
        Raises PullFailed."""
        image = str(container.get("image") or "")
        found = self.reference(image)
        if found is None:
            return None
        ref, base = found
        policy = policy_of(container, ref)
        creds: list[auth.Credential | None] = list(auth.lookup(ring or [], image)) or [None]
        with self._lock(image):
            have = self.cached(image)
            if have is not None and policy != "Always" and self._may_use(have, ref, creds):
                return have
            if policy == "Never":
                raise PullFailed(
                    "ErrImageNeverPull",
                    f'Container image "{image}" is not present with pull policy of Never',
                )
            for cred in creds:
                try:
                    got = self._pull(image, ref, base, cred)
                except PullFailed as e:
                    failed = e
                    continue
                self._pulled_with(got, ref, cred)
                return got
            raise PullFailed(
                failed.reason, f'failed to pull and unpack image "{image}": {failed.message}'
            )

    def _logins(self, pulled: Pulled) -> Path:
        return pulled.rootfs.with_name("pulled-with.json")

    def _may_use(self, pulled: Pulled, ref: Ref, creds: list[auth.Credential | None]) -> bool:
        """Whether a pod with CREDS may run the cached image: it was pulled without a
        login, or with one of them (compared by digest, never stored in clear)."""
        try:
            used = json.loads(self._logins(pulled).read_text()).get(f"{ref.host}/{ref.repo}")
        except (OSError, ValueError):
            return True  # pulled before logins were recorded: as preloaded
        if used is None or "anonymous" in used:
            return used is not None
        return any(c is not None and auth.digest(c) in used for c in creds)

    def _pulled_with(self, pulled: Pulled, ref: Ref, cred: auth.Credential | None) -> None:
        path = self._logins(pulled)
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        used = known.setdefault(f"{ref.host}/{ref.repo}", [])
        mark = "anonymous" if cred is None else auth.digest(cred)
        if mark not in used:
            used.append(mark)
        path.write_text(json.dumps(known))

    def _pull(self, image: str, ref: Ref, base: str, cred: auth.Credential | None) -> Pulled:
        reg = Registry(base, ref, cred)
        data, mtype = reg.small("manifests", ref.digest or str(ref.tag), MANIFESTS)
        digest = ref.digest or f"sha256:{hashlib.sha256(data).hexdigest()}"
        _check(data, digest, "manifest")
        repo_digest = f"{ref.host}/{ref.repo}@{digest}"
        manifest = json.loads(data)
        if mtype in INDEXES or manifest.get("manifests"):
            picked = [
                m for m in manifest.get("manifests") or []
                if (m.get("platform") or {}).get("os", "linux") == "linux"
                and (m.get("platform") or {}).get("architecture") == ARCH
            ]  # fmt: skip
            if not picked:
                raise PullFailed(
                    "ErrImagePull", f"no match for platform linux/{ARCH} in manifest {digest}"
                )
            digest = picked[0]["digest"]
            data, _ = reg.small("manifests", digest, MANIFESTS)
            _check(data, digest, "manifest")
            manifest = json.loads(data)
        with self._lock(digest):  # two references to one image lay it out once
            have = self._image(digest) or self._lay_out(reg, digest, manifest)
        refs = self._ref_file(image)
        refs.parent.mkdir(parents=True, exist_ok=True)
        refs.write_text(f"{digest}\n{repo_digest}")
        return Pulled(have.digest, have.rootfs, have.config, repo_digest)

    def _lay_out(self, reg: Registry, digest: str, manifest: dict[str, Any]) -> Pulled:
        blobs = self.root / "blobs"
        blobs.mkdir(parents=True, exist_ok=True)
        config_digest = manifest["config"]["digest"]
        config, _ = reg.small("blobs", config_digest)
        _check(config, config_digest, "config")
        layers = []
        for layer in manifest.get("layers") or []:
            path = blobs / layer["digest"].replace(":", "-")
            if not path.exists():
                reg.blob(layer["digest"], path)
            layers.append(path)
        final = self.root / "images" / digest.replace(":", "-")
        work = final.with_name(final.name + f".unpacking-{os.getpid()}-{threading.get_ident()}")
        shutil.rmtree(work, ignore_errors=True)
        try:
            unpack(work / "rootfs", layers)
        except UnpackError as e:
            shutil.rmtree(work, ignore_errors=True)
            raise PullFailed("ErrImagePull", str(e)) from None
        (work / "config.json").write_bytes(config)
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
        got = self._image(digest)
        assert got is not None
        return got


def backoff_message(image: str, failed: PullFailed) -> str:
    """The kubelet's ImagePullBackOff message, naming the image and the last error."""
    return f'Back-off pulling image "{image}": {failed.reason}: {failed.message}'
