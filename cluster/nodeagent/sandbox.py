"""What a pod gets around its processes on this node: a network namespace and IP
(netns.py), its volumes written under the pod's directory (volumes.py), its hosts file
(hosts.py), and for each container a plan that enter.py carries out in the container's
own mount namespace. The container's PATH starts with the tier's interpreter (the stand-in
for an image: `python` and `torchrun` in a pod are the project's, with torch and
jupyter_ddl). An image on a registry the tier is told about is pulled (pull.py); the
directories it adds are shown in the container as overlays: the unpacked image below,
read-only, and a writable layer of the container's own above (under the pod's directory,
gone with the pod), as a container runtime gives each container its own writable layer.
The image store itself is read-only in every container's mount namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from . import auth, hosts, image, unpack, users, volumes
from .api import Api, ApiError
from .envs import Fetch
from .netns import Network
from .pull import Pulled, Puller

ENTER = Path(__file__).with_name("enter.py")
# commands a pod finds before the machine's: `nslookup` answered from the hosts file
SHIMS = Path(__file__).with_name("bin")
# no DNS server runs for pods: a lookup the hosts file cannot answer is refused at once
# (127.0.0.1 in the pod's own network namespace) instead of timing out on the machine's
# resolver, which the pod cannot reach
RESOLV_CONF = "# the jupyter-ddl node agent: names come from /etc/hosts\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n"


class Sandbox:
    def __init__(
        self,
        api: Api,
        datadir: Path,
        network: Network | None,
        path_prefix: str = "",
        pythonpath: str = "",
        record: Path | None = None,
        puller: Puller | None = None,
    ) -> None:
        self.api, self.datadir, self.network, self.puller = api, datadir, network, puller
        self.path_prefix, self.pythonpath, self.record = path_prefix, pythonpath, record
        # the latest pods and Services the agent listed: a new pod's first hosts file
        # already names its peers
        self.view: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])

    # -- the API -------------------------------------------------------------------
    def fetcher(self, ns: str) -> Fetch:
        def fetch(kind: str, name: str) -> dict[str, Any] | None:
            try:
                return self.api.get(f"/api/v1/namespaces/{ns}/{kind}/{name}")  # type: ignore[no-any-return]
            except ApiError as e:
                if e.code == 404:
                    return None
                raise

        return fetch

    def token(self, pod: dict[str, Any]) -> volumes.Token:
        m = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"

        def get(audience: str | None, seconds: int) -> str | None:
            body = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "audiences": [audience] if audience else [],
                    "expirationSeconds": max(600, seconds),
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": m["name"],
                        "uid": m["uid"],
                    },
                },
            }
            try:
                got = self.api.call(
                    "POST", f"/api/v1/namespaces/{m['namespace']}/serviceaccounts/{sa}/token", body
                )
            except ApiError:
                return None
            return str(got["status"]["token"])

        return get

    # -- the pod -------------------------------------------------------------------
    def pod_dir(self, pod: dict[str, Any]) -> Path:
        return self.datadir / str(pod["metadata"]["uid"])

    def attach(self, pod: dict[str, Any]) -> tuple[str | None, str]:
        """The pod's network namespace and IP (none and 127.0.0.1 on the host network)."""
        d = self.pod_dir(pod)
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o700)
        if self.network is None or pod["spec"].get("hostNetwork"):
            return None, "127.0.0.1"
        return self.network.attach(pod["metadata"]["uid"])

    def write_volumes(self, pod: dict[str, Any], pod_ip: str) -> dict[str, Path | str]:
        """Every volume's files on this machine; raises ConfigError while one cannot be."""
        fetch = self.fetcher(pod["metadata"]["namespace"])
        token = self.token(pod)
        sources: dict[str, Path | str] = {}
        for vol in pod["spec"].get("volumes") or []:
            where = volumes.volume_dir(vol, self.pod_dir(pod), self.datadir / "claims")
            if isinstance(where, Path):
                files = volumes.volume_files(vol, pod, pod_ip, fetch, token)
                volumes.materialize(where, files)
                users.give_to_fs_group(vol, where, pod)
            sources[vol["name"]] = where
        return sources

    def pull(self, container: dict[str, Any], pod: dict[str, Any]) -> Pulled | None:
        """The container's image, with the pod's pull secrets; None: the stand-in runs
        it. Raises PullFailed."""
        if self.puller is None or self.puller.reference(str(container.get("image") or "")) is None:
            return None
        ring = auth.keyring(pod, self.fetcher(pod["metadata"]["namespace"]))
        return self.puller.ensure(container, ring)

    def hosts_file(self, pod: dict[str, Any]) -> Path:
        return self.pod_dir(pod) / "hosts"

    def refresh_hosts(
        self,
        pod: dict[str, Any],
        pod_ip: str,
        pods: list[dict[str, Any]],
        svcs: list[dict[str, Any]],
    ) -> bool:
        return hosts.write_in_place(self.hosts_file(pod), hosts.render(pod, pod_ip, pods, svcs))

    def base_env(self, pod: dict[str, Any]) -> dict[str, str]:
        path = os.environ.get("PATH", "/usr/bin:/bin")
        first = [p for p in (self.path_prefix, str(SHIMS)) if p]
        env = {
            "PATH": ":".join([*first, path]),
            "HOME": os.environ.get("HOME", "/root"),
            "HOSTNAME": hosts.hostname(pod),
        }
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        return env

    def wrap(
        self,
        pod: dict[str, Any],
        netns: str | None,
        argv: list[str],
        mounts: list[volumes.Mount],
        cwd: str | None,
        tag: str,
        env: dict[str, str],
        container: dict[str, Any],
        pulled: Pulled | None = None,
    ) -> list[str]:
        """The command line that runs `argv` inside the pod's namespaces, as the user
        the container's securityContext names; ENV is the container's environment (the
        image stand-in's ssh sessions get its PATH)."""
        image_ref = container.get("image") or ""
        resolv = self.pod_dir(pod) / "resolv.conf"
        if not resolv.exists():
            resolv.write_text(RESOLV_CONF)
        own = {m.target for m in mounts}
        files = [(str(self.hosts_file(pod)), "/etc/hosts"), (str(resolv), "/etc/resolv.conf")]
        path, pythonpath = env.get("PATH", ""), env.get("PYTHONPATH", "")
        if not image.lacks(image_ref, "/usr/sbin/sshd"):
            files += image.ssh_mounts(self.pod_dir(pod), path, pythonpath, image_ref)
        hosts_mount = [[src, dst, True] for src, dst in files if dst not in own]
        # the deepspeed runtime stand-in's users and home (read-write)
        made = image.user_mounts(self.pod_dir(pod), tag, image_ref, path, pythonpath)
        hosts_mount += [[s, t, ro] for s, t, ro in made if t not in own]
        files += [(s, t) for s, t, _ in made]
        if not container.get("workingDir") and not (pulled and pulled.workdir):
            cwd = image.workdir(image_ref) or cwd  # the stand-in image's WORKDIR
        uid, gid, groups = users.identity(pod, container, image.passwd_text(image_ref))
        expose = []
        if uid != 0:  # the interpreter standing in for the image's, reachable by that user
            expose = users.exposures(users.interpreter_paths(self.path_prefix, self.pythonpath))
        # the pulled image's own directories first: a volume may be mounted inside one
        # (its mount point is made in the container's writable layer)
        found = unpack.mounts(pulled.rootfs) if pulled else []
        own_layer = self.pod_dir(pod) / "layers" / tag
        overlays = [
            [src, str(own_layer / str(i) / "upper"), str(own_layer / str(i) / "work"), target]
            for i, (src, target) in enumerate(found)
        ]
        store = (
            [[str(self.puller.root), str(self.puller.root), True]] if pulled and self.puller else []
        )
        plan = {
            # a pod on the host network keeps the machine's hostname, as the kubelet does
            "hostname": None if pod["spec"].get("hostNetwork") else hosts.hostname(pod),
            "overlays": overlays,
            "mounts": hosts_mount + [[m.source, m.target, m.read_only] for m in mounts] + store,
            "record": str(self.record) if self.record else None,
            "cwd": cwd,
            "argv": argv,
            "user": [uid, gid, groups] if (uid, gid) != (0, 0) else None,
            "expose": expose,
        }
        path = self.pod_dir(pod) / f"plan-{tag}.json"
        path.write_text(json.dumps(plan))
        inner = ["unshare", "--mount", "--uts", "--propagation", "private"]
        inner += [sys.executable, "-I", "-S", str(ENTER), str(path)]
        return (["ip", "netns", "exec", netns] if netns else []) + inner

    def release(self, pod: dict[str, Any]) -> None:
        if self.network is not None:
            self.network.detach(pod["metadata"]["uid"])
        shutil.rmtree(self.pod_dir(pod), ignore_errors=True)
