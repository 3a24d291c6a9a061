"""Which resources the API double serves: the core ones we use, the CRDs of
``tests/data/crds`` that a test installs, PodDefaults and metrics.k8s.io. Builds the
discovery documents (``/api``, ``/apis``, ``/apis/<group>/<version>``) from that set.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from tests.support.crd_schema import crd_dir

CRD_DIR = crd_dir()


@dataclass(frozen=True)
class Resource:
    group: str  # "" for core
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    crd_file: str | None = None

    @property
    def rid(self) -> str:
        return f"{self.group or 'core'}/{self.version}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


CORE = [
    Resource("", "v1", "pods", "Pod"),
    Resource("", "v1", "configmaps", "ConfigMap"),
    Resource("", "v1", "secrets", "Secret"),
    Resource("", "v1", "events", "Event"),
    Resource("", "v1", "services", "Service"),
    Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    Resource("", "v1", "resourcequotas", "ResourceQuota"),
    Resource("", "v1", "namespaces", "Namespace", namespaced=False),
    Resource("", "v1", "nodes", "Node", namespaced=False),
    Resource("batch", "v1", "jobs", "Job"),
]
PODDEFAULT = Resource("kubeflow.org", "v1alpha1", "poddefaults", "PodDefault")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", namespaced=False)  # fmt: skip
METRICS = Resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics")
#: what Trainer creates for a TrainJob (served with the TrainJob CRD: one install)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")


@functools.cache
def crd_catalog() -> dict[str, Resource]:
    """Every CRD file, keyed by ``<Kind>/<version>`` (e.g. ``MPIJob/v2beta1``).

    Read from the file names (``<group>_<Kind>_<version>.yaml``) and two header lines:
    parsing 7 MB of YAML just for names would cost seconds per test process.
    """
    out = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        group, kind, version = path.stem.split("_")
        head = path.read_text()[:4000]
        plural = re.search(r"^    plural: (\S+)$", head, re.M)
        scope = re.search(r"^  scope: (\S+)$", head, re.M)
        assert plural and scope, path
        out[f"{kind}/{version}"] = Resource(
            group, version, plural[1], kind, scope[1] == "Namespaced", path.name
        )
    return out


DEFAULT_CRDS = ("TFJob/v1", "PyTorchJob/v1", "MPIJob/v2beta1", "TrainJob/v1alpha1")
TRAINER_RELEASES = ("v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0")
RELEASE_FILES = {"TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
                 "ClusterTrainingRuntime": "trainer.kubeflow.org_clustertrainingruntimes.yaml"}  # fmt: skip


def release_runtimes(release: str) -> list[dict[str, Any]]:
    """The ClusterTrainingRuntime objects Trainer ``release`` ships (its manifests)."""
    import yaml

    folder = CRD_DIR / "trainer-releases" / release
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))
            if p.name not in RELEASE_FILES.values()]  # fmt: skip


class Catalog:
    """The served resource set; tests change ``crds`` / ``metrics`` to shape discovery.
    ``trainer`` picks the Trainer v2 release whose TrainJob and ClusterTrainingRuntime
    CRDs are served (``tests/data/crds/trainer-releases/<release>``)."""

    def __init__(self, crds: tuple[str, ...] = DEFAULT_CRDS, metrics: bool = True,
                 trainer: str = "v2.3.0") -> None:  # fmt: skip
        assert trainer in TRAINER_RELEASES, trainer
        self.crds = list(crds)
        self.metrics = metrics
        self.poddefaults = True
        self.trainer = trainer

    def _crd(self, key: str) -> Resource:
        res = crd_catalog()[key]
        # both runtime CRDs are generated from one Go type, TrainingRuntimeSpec, so a
        # release's TrainingRuntime schema is its ClusterTrainingRuntime's (checked
        # for v2.0.0 and v2.3.0: only the descriptions differ)
        release_kind = "ClusterTrainingRuntime" if res.kind == "TrainingRuntime" else res.kind
        if release_kind in RELEASE_FILES:
            path = f"trainer-releases/{self.trainer}/{RELEASE_FILES[release_kind]}"
            res = Resource(res.group, res.version, res.plural, res.kind, res.namespaced, path)
        return res

    def served(self) -> list[Resource]:
        keys = list(self.crds)
        if "TrainJob/v1alpha1" in keys:  # one install serves the three
            keys += [k for k in ("ClusterTrainingRuntime/v1alpha1", "TrainingRuntime/v1alpha1")
                     if k not in keys]  # fmt: skip
        out = list(CORE) + [self._crd(c) for c in keys]
        if "TrainJob/v1alpha1" in keys:
            out.append(JOBSETS)
        if self.poddefaults:
            out.append(PODDEFAULT)
        if self.metrics:
            out.append(METRICS)
        return out

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        for r in self.served():
            if (r.group, r.version, r.plural) == (group, version, plural):
                return r
        return None

    def crd_document(self, name: str) -> dict[str, Any] | None:
        """The served CRD called ``name`` (``trainjobs.trainer.kubeflow.org``), as the
        API server answers GET .../customresourcedefinitions/<name>: the release's copy
        for Trainer's."""
        import yaml

        for r in self.served():
            if r.crd_file and f"{r.plural}.{r.group}" == name:
                doc: dict[str, Any] = yaml.safe_load((CRD_DIR / r.crd_file).read_text())
                return doc
        return None

    def by_kind(self, kind: str) -> list[Resource]:
        return [r for r in self.served() if r.kind == kind]

    # -- discovery documents ---------------------------------------------------
    def api_versions(self) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}

    def group_list(self) -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for r in self.served():
            if r.group and r.version not in groups.setdefault(r.group, []):
                groups[r.group].append(r.version)
        groups.setdefault("authorization.k8s.io", ["v1"])
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
                for g, vs in groups.items()
            ],
        }

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        found = [r for r in self.served() if (r.group, r.version) == (group, version)]
        if not found:
            return None
        resources = []
        for r in found:
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            resources.append(
                {
                    "name": r.plural,
                    "singularName": r.kind.lower(),
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": verbs if r is not METRICS else ["get", "list"],
                }
            )
            if r.crd_file or r.plural == "pods":
                resources.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": True,
                        "kind": r.kind,
                        "verbs": ["get", "patch"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }
