"""Last in the folder: `scripts/cluster down` leaves nothing of the tier behind."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.tier import (
    CLUSTER,
    EVERY_TRAINER,
    MARKS,
    STATE,
    alive,
    group_members,
    pids,
    run,
)

pytestmark = MARKS


@EVERY_TRAINER  # the v2.0 stage's tier comes down clean too
def test_down_leaves_nothing_behind(tier):
    started = pids()
    assert started, "up recorded no processes"
    down = run(str(CLUSTER), "down")
    assert down.returncode == 0
    assert [n for n, p in started.items() if alive(p)] == []
    # nor anything a process left in its group (an operator's certificate loop)
    assert group_members(set(started.values())) == []
    assert (
        not (STATE / "run").exists()
        and not (STATE / "etcd").exists()
        and not (STATE / "pki").exists()
    )
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(STATE) not in mounts
    assert "k8s-webhook-server" not in mounts
    netns = run("ip", "netns", "list", check=False).stdout
    assert "jddl" not in netns
    veths = run("ip", "-o", "link", "show", "type", "veth", check=False).stdout
    assert "jddl" not in veths
    bridges = run("ip", "-o", "link", "show", "type", "bridge", check=False).stdout
    assert "jddl" not in bridges
    # the mount points pods needed and this machine lacked are gone again
    assert not (STATE / "mountpoints").exists() and not (STATE / "poddata").exists()
    # nothing listens on the tier's ports any more
    listening = run("ss", "-ltnH", check=False).stdout
    for port in (6443, 23790, 10257, 10259):
        assert f"127.0.0.1:{port} " not in listening
