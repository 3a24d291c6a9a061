"""Pod networking: one bridge for the node, and per pod a network namespace joined to it
by a veth pair, with an IP of the node's pod range, loopback up and a default route
through the bridge. Every name this makes starts with `jddl` (the bridge `jddl0`, the
namespaces `jddl-<uid>`, the host ends of the veths `jddl<uid>`), so `scripts/cluster
down` and its test find them all. Uses iproute2's `ip`.
"""

from __future__ import annotations

import ipaddress
import subprocess
import threading

BRIDGE = "jddl0"
PREFIX = "jddl"


class NetError(Exception):
    pass


def ip(*args: str, check: bool = True) -> str:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise NetError(f"ip {' '.join(args)}: {r.stderr.strip()[:300]}")
    return r.stdout


def names(uid: str) -> tuple[str, str, str]:
    """(namespace, host veth, pod veth before it is renamed eth0): at most 15 characters."""
    short = uid.replace("-", "")[:10]
    return f"{PREFIX}-{short}", f"{PREFIX}{short}", f"{PREFIX}p{short[:9]}"


def ours() -> list[str]:
    """The network namespaces this tier made (left by an agent that died, say)."""
    return [
        ln.split()[0]
        for ln in ip("netns", "list", check=False).splitlines()
        if ln.startswith(PREFIX)
    ]


class Network:
    def __init__(self, cidr: str = "10.244.0.0/24") -> None:
        net = ipaddress.ip_network(cidr)
        if net.version != 4 or not 16 <= net.prefixlen <= 29:
            raise NetError(f"--pod-cidr {cidr}: give an IPv4 range from /16 to /29")
        self.net = net
        hosts = list(net.hosts())
        self.gateway = str(hosts[0])
        self.free = [str(h) for h in hosts[1:]]
        self.used: dict[str, str] = {}  # uid -> ip
        self.lock = threading.Lock()

    def setup(self) -> None:
        """The bridge, made fresh (namespaces a dead agent left are removed first)."""
        teardown()
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/{self.net.prefixlen}", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")

    def attach(self, uid: str) -> tuple[str, str]:
        """A namespace for the pod with its IP: (namespace, ip)."""
        with self.lock:
            if uid in self.used:
                return names(uid)[0], self.used[uid]
            if not self.free:
                raise NetError(f"no pod IP left in {self.net}")
            addr = self.used[uid] = self.free.pop(0)
        ns, host, peer = names(uid)
        try:
            ip("netns", "add", ns)
            ip("link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
            ip("link", "set", host, "master", BRIDGE, "up")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", peer, "name", "eth0")
            ip("-n", ns, "addr", "add", f"{addr}/{self.net.prefixlen}", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "route", "add", "default", "via", self.gateway)
        except NetError:
            self.detach(uid)
            raise
        return ns, addr

    def detach(self, uid: str) -> None:
        """Remove the pod's namespace (its veth pair goes with it) and free its IP."""
        ns, host, _ = names(uid)
        ip("netns", "del", ns, check=False)
        ip("link", "del", host, check=False)
        with self.lock:
            addr = self.used.pop(uid, None)
            if addr is not None:
                self.free.append(addr)


def teardown() -> None:
    for ns in ours():
        ip("netns", "del", ns, check=False)
    ip("link", "del", BRIDGE, check=False)
