"""Runs the Kubeflow Training SDK v1 (``kubeflow-training``) against a cluster, in its
own interpreter: that SDK needs ``kubernetes<36`` (its 1.9.4 release pins it; 1.9.3
does not pin but hands the client model objects, which the pydantic-based
``kubernetes`` 36+ refuses), so ``test_sdk.py`` runs this file in a venv of its own.
Never imports the product. Prints one JSON object per command.

    python sdk1_driver.py KUBECONFIG NAMESPACE run NAME      # create, wait, logs
    python sdk1_driver.py KUBECONFIG NAMESPACE start-slow NAME  # create, wait Running
    python sdk1_driver.py KUBECONFIG NAMESPACE delete NAME

A fifth argument names the job kind: ``PyTorchJob`` (the default) or ``TFJob`` (two
Workers, each printing the task of the ``TF_CONFIG`` the operator gave it).
"""

from __future__ import annotations

import json
import sys


def sdk_all_reduce():
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    t = torch.tensor([float(os.environ["RANK"]) + 1.0])
    dist.all_reduce(t)
    print(
        f"sdk rank={dist.get_rank()} world={dist.get_world_size()} sum={t.item():.0f}", flush=True
    )
    dist.destroy_process_group()


def sdk_tf_task():
    import json
    import os

    task = json.loads(os.environ["TF_CONFIG"])["task"]
    print(f"sdk tf-task {task['type']} {task['index']}", flush=True)


def sdk_slow():
    import time

    print("sdk working", flush=True)
    time.sleep(60)


IMAGE = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"


def main(
    kubeconfig: str, namespace: str, command: str, name: str, kind: str = "PyTorchJob"
) -> dict:
    from kubeflow.training import TrainingClient

    tc = TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=kind)
    if command == "run" and kind == "TFJob":
        tc.create_job(name=name, train_func=sdk_tf_task, num_workers=2, base_image=IMAGE)
        tc.wait_for_job_conditions(name, wait_timeout=120, polling_interval=1)
        logs, _ = tc.get_job_logs(name, is_master=False)
        return {"succeeded": tc.is_job_succeeded(name), "logs": logs}
    if command == "run":
        tc.create_job(name=name, train_func=sdk_all_reduce, num_workers=2,
                      num_procs_per_worker=1, base_image=IMAGE)  # fmt: skip
        job = tc.wait_for_job_conditions(name, wait_timeout=120, polling_interval=1)
        logs, _ = tc.get_job_logs(name, is_master=False)
        return {"succeeded": tc.is_job_succeeded(name), "logs": logs,
                "master_succeeded": job.status.replica_statuses["Master"].succeeded}  # fmt: skip
    if command == "start-slow":
        tc.create_job(name=name, train_func=sdk_slow, num_workers=1, base_image=IMAGE)
        tc.wait_for_job_conditions(name, expected_conditions={"Running"}, wait_timeout=60,
                                   polling_interval=1)  # fmt: skip
        return {"running": tc.is_job_running(name)}
    if command == "delete":
        tc.delete_job(name)
        return {"deleted": name}
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:6])), flush=True)
