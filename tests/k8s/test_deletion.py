"""Graceful deletion of pods in the API double, as kube-apiserver and the kubelet do it
(the same check runs on the real tier: tests/k8s/deletion.py)."""

from __future__ import annotations

from kubernetes import config as kube_config
from kubernetes.client import CoreV1Api

from .apidouble import NAMESPACE
from .deletion import check_graceful_deletion, sleeper


def test_a_running_pod_is_deleted_gracefully_an_unscheduled_one_at_once(double, kubeconfig):
    double.scenario.unschedulable["grace-nowhere"] = "0/1 nodes are available: 1 Insufficient cpu."
    core = CoreV1Api(kube_config.new_client_from_config(str(kubeconfig)))
    for pod in (sleeper("grace-running"), sleeper("grace-nowhere", cpu="500")):
        core.create_namespaced_pod(NAMESPACE, pod)
    check_graceful_deletion(core, NAMESPACE, "grace-running", "grace-nowhere")
