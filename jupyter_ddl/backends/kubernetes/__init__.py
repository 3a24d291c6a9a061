"""The Kubernetes backend: Kubeflow TFJob / PyTorchJob / MPIJob v2beta1 / TrainJob.

Importing this package does not import the ``kubernetes`` client; the modules import
it inside the functions that talk to the cluster.
"""

from __future__ import annotations

from jupyter_ddl.backends.kubernetes.backend import KubernetesBackend

__all__ = ["KubernetesBackend"]
