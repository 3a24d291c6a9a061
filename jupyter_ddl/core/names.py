"""Job names: generation from the notebook/cell and the RFC 1123/1035 rules (pure).

The operators derive pod, Service and hostname labels from the job name
(``<job>-worker-12``, ``<job>-launcher``; JobSet, under a TrainJob, pod names
``<job>-node-0-3-<5 random>``: ``Kind.derived_names``), and each of those must
be a DNS label of at most 63 characters (operator-contract.md §1.2, §1.3, §3.1, §4.2). So a job
name is only valid when its longest derived name still fits.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jupyter_ddl.core.kinds import Kind

MAX_LABEL = 63
#: generated names stay this short, leaving room for every operator suffix
GENERATED_MAX = 40
RANDOM_LEN = 5  # the random part of a generated job name

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_QUANTITY = re.compile(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[mkMGTPE])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def is_dns1035_label(value: str) -> bool:
    """Lowercase letters, digits and '-', starting with a letter, ≤ 63 characters."""
    return len(value) <= MAX_LABEL and bool(_DNS1035.match(value))


def is_dns1123_label(value: str) -> bool:
    return len(value) <= MAX_LABEL and bool(_DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.match(value))


def is_quantity(value: str) -> bool:
    """A non-negative Kubernetes quantity: ``2``, ``500m``, ``4Gi``, ``1e3``."""
    return bool(_QUANTITY.match(value))


def is_env_name(value: str) -> bool:
    """A container env var name as the API server accepts it (C identifier plus '-' '.')."""
    return bool(_ENV_NAME.match(value))


def is_label_key(key: str) -> bool:
    """``[prefix/]name``: prefix a DNS subdomain, name ≤ 63 alphanumerics, '-', '_', '.'."""
    prefix, _, name = key.rpartition("/")
    if prefix and not is_dns1123_subdomain(prefix):
        return False
    return 0 < len(name) <= MAX_LABEL and bool(_LABEL_NAME.match(name))


def is_label_value(value: str) -> bool:
    return value == "" or (len(value) <= MAX_LABEL and bool(_LABEL_NAME.match(value)))


def is_resource_name(value: str) -> bool:
    """A vendor-qualified extended resource name such as ``nvidia.com/gpu``."""
    domain, _, base = value.partition("/")
    return bool(base) and is_dns1123_subdomain(domain) and bool(_LABEL_NAME.match(base))


def longest_derived(job: str, kind: Kind, replicas: Mapping[str, int]) -> str:
    """The longest DNS label the operator derives from ``job`` (``Kind.derived_names``)."""
    names = kind.derived_names(job, replicas)
    return max(names, key=len) if names else job


def slug(text: str, limit: int) -> str:
    """``text`` lowercased to [a-z0-9-], starting with a letter, at most ``limit`` long."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    s = re.sub(r"^[^a-z]+", "", s)  # DNS-1035: must start with a letter
    return s[:limit].rstrip("-")


def cell_label(cell_id: str, length: int = 8) -> str:
    """The part of a notebook cell's id a job name carries: its first ``length`` letters
    and digits, lowercased (nbformat 4.5 ids are 8 characters, JupyterLab's UUIDs 36)."""
    return re.sub(r"[^a-z0-9]", "", cell_id.lower())[:length]


def generate_name(
    notebook: str | None = None, cell: str | None = None, *, rand: str | None = None
) -> str:
    """A fresh job name ``<notebook>-<cell>-<random>``, valid for every job kind.

    ``notebook`` may be a path (its stem is used); ``cell`` a cell label (``cell_label``
    of its id, or ``cell4``). ``rand`` fixes the random part (tests).
    """
    suffix = (
        rand if rand is not None else "".join(secrets.choice(_ALPHABET) for _ in range(RANDOM_LEN))
    )
    stem = PurePath(notebook).stem if notebook else ""
    # the cell part may start with a digit (a cell id): it never starts the name
    cell_part = re.sub(r"[^a-z0-9]+", "-", (cell or "").lower()).strip("-")[:10].rstrip("-")
    parts = [p for p in (slug(stem, 20), cell_part) if p]
    head = "-".join(parts) or "ddl"
    if not head[0].isalpha():
        head = f"cell-{head}"  # DNS-1035: a letter first
    head = head[: GENERATED_MAX - len(suffix) - 1].rstrip("-")
    return f"{head}-{suffix}"
