"""What the cluster offers: the job kinds it serves (so the strategies it can run),
its allocatable GPUs, whether metrics.k8s.io answers. A cluster that does not answer
or refuses our credentials raises BackendUnavailable (the backend list shows it as
unavailable, with the reason); any other failure offers nothing."""

from __future__ import annotations

from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.preflight import _gpus, serving_versions, split_api_version
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import KINDS, MPIJOB, TRAINJOB, Kind
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.errors import ClusterUnauthorized, ClusterUnreachable, DDLError
from jupyter_ddl.models import Capabilities


def served_kinds(conn: Connection) -> tuple[set[Kind], set[str]]:
    """(job kinds served, group/versions served), from discovery."""
    groups = conn.client("ApisApi").get_api_versions().groups or []
    gvs = {v.group_version for g in groups for v in g.versions or []}
    kinds = {
        k
        for k in KINDS
        if k.api_version in gvs and k.version in serving_versions(conn, k.group, k.plural)
    }
    return kinds, gvs


def capabilities(conn: Connection, cfg: Config) -> Capabilities:
    from kubernetes.client import ApiException

    try:
        kinds, gvs = served_kinds(conn)
    except (ClusterUnreachable, ClusterUnauthorized):
        raise
    except ApiException as e:
        if e.status == 401:
            raise from_api_exception(e, action="reading the cluster's API groups") from None
        return Capabilities(strategies=(), detail={"reachable": False, "error": str(e)[:200]})
    except (DDLError, OSError) as e:
        return Capabilities(strategies=(), detail={"reachable": False, "error": str(e)[:200]})
    strategies = tuple(
        s.name
        for s in CATALOG.values()
        if s.kind in kinds or (s.trainjob_runtime and TRAINJOB in kinds)
    )
    try:
        nodes = conn.client("CoreV1Api").list_node().items
        gpus = sum(_gpus(n.status.allocatable if n.status else None) for n in nodes)
    except ApiException:
        gpus = 0  # nodes are cluster-scoped; a notebook account rarely may list them
    return Capabilities(
        gpus=gpus,
        strategies=strategies,
        resource_metrics="metrics.k8s.io/v1beta1" in gvs,
        image_build=bool(cfg.registry),
        detail={
            "reachable": True,
            "namespace": conn.namespace,
            "kinds": sorted(k.name for k in kinds),
            # which MPIJob is installed: v2beta1 (mpi-operator) or v1 (training operator)
            "mpijob_versions": serving_versions(conn, MPIJOB.group, MPIJOB.plural),
        },
    )


__all__ = ["capabilities", "served_kinds", "split_api_version"]
