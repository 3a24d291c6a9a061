"""The jupyter-ddl runtime shim, shipped inside every replica.

Needs only the standard library and the framework the cell uses; it never imports
``jupyter_ddl`` (the image running it may not have it). It reads the environment the
operator (or the local backend, which copies the operator) injects, makes a few
conveniences available to the cell, runs the cell in ``__main__`` and ends cleanly.

The torch part (device binding, process group, DeepSpeed) lives in
``ddl_runtime_torch.py``, the end of the run (a bounded wait for the peers, tearing the
distributed runtimes down) in ``ddl_runtime_end.py``, both shipped beside this file.

Conveniences never get in the way of code written for the operator: ``strategy`` is
created lazily, or at startup when it must exist before the first TF op (MWMS, PS),
never when the cell builds its own; the torch process group is initialised only when
the cell does not initialise it itself.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

#: must equal jupyter_ddl.core.metrics.METRIC_MARKER (a test checks it)
METRIC_MARKER = "@@ddl-metric@@"
STRATEGY_ENV = "JUPYTER_DDL_STRATEGY"
DIST_BACKEND_ENV = "JUPYTER_DDL_DIST_BACKEND"

# Calls that mean "the cell sets up torch.distributed itself": dist.init_process_group,
# ignite's idist.Parallel / idist.initialize, deepspeed.init_distributed / initialize.
_SELF_INIT_CALLS = {"init_process_group", "Parallel", "initialize", "init_distributed"}
# TF strategies that configure collectives / the cluster in the eager context: they
# must exist before the cell's first TF op ("Collective ops must be configured at
# program startup"), so the shim creates them up front unless the cell builds its own.
_STARTUP_STRATEGIES = {"tf-multi-worker-mirrored", "tf-parameter-server"}
_OWN_STRATEGY_CALLS = {
    "MultiWorkerMirroredStrategy", "ParameterServerStrategy", "CollectiveAllReduceStrategy",
}  # fmt: skip


# -- pure helpers -------------------------------------------------------------------
def framework_of(strategy: str, env: dict[str, str]) -> str:
    """Which setup a replica needs: tensorflow, pytorch, mpi or none."""
    if strategy.startswith("tf-"):
        return "tensorflow"
    if strategy == "horovod":
        return "mpi"
    if strategy:
        return "pytorch"
    if "OMPI_COMM_WORLD_RANK" in env:
        return "mpi"
    if "TF_CONFIG" in env:
        return "tensorflow"
    if "MASTER_ADDR" in env or "PET_NNODES" in env:
        return "pytorch"
    return "none"


def tf_topology(tf_config: str) -> dict[str, Any]:
    """Role, index, rank and world size from a TF_CONFIG string ("" when absent)."""
    if not tf_config:
        return {"role": "worker", "index": 0, "rank": 0, "world_size": 1}
    cfg = json.loads(tf_config)
    cluster, task = cfg.get("cluster", {}), cfg.get("task", {})
    role, index = str(task.get("type", "worker")), int(task.get("index", 0))
    leaders = len(cluster.get("chief", [])) + len(cluster.get("master", []))
    world = leaders + len(cluster.get("worker", []))
    if role in ("chief", "master"):
        rank = index
    elif role == "worker":
        rank = leaders + index
    else:  # ps / evaluator take no part in the all-reduce
        rank = -1
    return {"role": role, "index": index, "rank": rank, "world_size": max(world, 1)}


def torch_topology(env: dict[str, str]) -> dict[str, Any]:
    """Rank, world size and local rank as torch reads them (MPI variables mapped)."""
    if "OMPI_COMM_WORLD_RANK" in env:
        rank = int(env["OMPI_COMM_WORLD_RANK"])
        world = int(env.get("OMPI_COMM_WORLD_SIZE", "1"))
        local = int(env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    else:
        rank = int(env.get("RANK", "0"))
        world = int(env.get("WORLD_SIZE", "1"))
        local = int(env.get("LOCAL_RANK", "0"))
    return {"role": "worker", "index": rank, "rank": rank, "world_size": world, "local_rank": local}


def _calls(source: str, names: set[str]) -> bool:
    """True when the source calls a function or method named one of ``names``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # the cell fails anyway; a plain text scan is good enough
        return any(f"{n}(" in source for n in names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in names:
                return True
    return False


def cell_initialises_itself(source: str) -> bool:
    """True when the cell calls init_process_group / idist.Parallel / ... itself."""
    return _calls(source, _SELF_INIT_CALLS)


def cell_builds_own_strategy(source: str) -> bool:
    """True when the cell constructs a MultiWorkerMirrored / ParameterServer strategy."""
    return _calls(source, _OWN_STRATEGY_CALLS)


def cell_reads_name(source: str, name: str) -> bool:
    """True when the cell reads the global ``name`` (e.g. the shim's ``strategy``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        for n in ast.walk(tree)
    )


def cell_uses_tensorflow(source: str) -> bool:
    """Will a replica running this cell import TensorFlow? When the cell imports it
    (or Keras), or reads the shim's ``strategy``, which makes one."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    roots = {"tensorflow", "keras", "tf_keras"}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import) and any(a.name.partition(".")[0] in roots for a in n.names):
            return True
        if isinstance(n, ast.ImportFrom) and (n.module or "").partition(".")[0] in roots:
            return True
    return cell_reads_name(source, "strategy")


def strategy_at_startup(strategy: str, source: str) -> bool:
    """Must the shim create ``strategy`` before the cell runs? Only for strategies that
    configure the eager context, when the cell uses the shim's and builds none itself
    (building a second one would clash with the cell's)."""
    return (
        strategy in _STARTUP_STRATEGIES
        and cell_reads_name(source, "strategy")
        and not cell_builds_own_strategy(source)
    )


def _number(value: Any) -> Any:
    if hasattr(value, "item"):  # torch / numpy / tf scalars
        value = value.item()
    if hasattr(value, "numpy"):
        value = value.numpy().item()
    return value


def report(**metrics: Any) -> None:
    """Print one marked JSON line the dashboards turn into metrics: report(step=3, loss=0.4)."""
    data = {k: _number(v) for k, v in metrics.items()}
    print(METRIC_MARKER + " " + json.dumps(data, default=float), flush=True)


class LazyStrategy:
    """Creates the real tf.distribute strategy on first use and then stands in for it."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        object.__setattr__(self, "_factory", factory)
        object.__setattr__(self, "_real", None)

    def unwrap(self) -> Any:
        if self._real is None:
            object.__setattr__(self, "_real", self._factory())
        return self._real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unwrap(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.unwrap(), name, value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(strategy, tf.distribute.Strategy) holds
        return type(self.unwrap())

    def __repr__(self) -> str:
        return "<lazy strategy, not created yet>" if self._real is None else repr(self._real)


# -- framework setup ---------------------------------------------------------------
def _tf_factory(strategy: str) -> Callable[[], Any]:
    def make() -> Any:
        import tensorflow as tf

        if strategy == "tf-multi-worker-mirrored":
            return tf.distribute.MultiWorkerMirroredStrategy()
        if strategy == "tf-parameter-server":
            resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
            return tf.distribute.ParameterServerStrategy(resolver)
        if strategy == "tf-central-storage":
            return tf.distribute.experimental.CentralStorageStrategy()
        if strategy == "tf-tpu":
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            return tf.distribute.TPUStrategy(resolver)
        return tf.distribute.MirroredStrategy()

    return make


def tensorflow_import_env() -> dict[str, str]:
    """What a replica imports TensorFlow with unless the job says otherwise (a warm
    interpreter imports it with the same, ``warm.import_defaults``). Both are read as
    it loads: the C++ log level at the first message, which the import writes, and
    TF_USE_LEGACY_KERAS decides whether Keras 3 is loaded at all."""
    env = {"TF_CPP_MIN_LOG_LEVEL": "2"}
    # Keras 3 model.fit fails under MWMS; tf-keras (legacy) works when installed.
    if importlib.util.find_spec("tf_keras") is not None:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def setup_tensorflow(strategy: str, env: dict[str, str], source: str = "") -> dict[str, Any]:
    for name, value in tensorflow_import_env().items():
        os.environ.setdefault(name, value)
    topo = tf_topology(env.get("TF_CONFIG", ""))
    if strategy == "tf-parameter-server":
        os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
        if topo["role"] in ("ps", "worker"):
            serve_tf_forever()  # never returns
    lazy = LazyStrategy(_tf_factory(strategy))
    if strategy_at_startup(strategy, source):
        lazy.unwrap()  # now, before any TF op of the cell
    return {
        "rank": topo["rank"],
        "world_size": topo["world_size"],
        "local_rank": 0,
        "strategy": lazy,
    }


def serve_tf_forever() -> None:
    """A ParameterServerStrategy PS or worker: serve the chief until stopped."""
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"jupyter-ddl: {resolver.task_type} {resolver.task_id} serving", flush=True)
    server.join()


def _part(module: str) -> Any:
    """A shipped part of the runtime (``ddl_runtime_torch``, ``ddl_runtime_end``): beside
    this file in a replica, in the package otherwise."""
    return importlib.import_module(f"{__package__}.{module}" if __package__ else module)


def _torch_part() -> Any:
    return _part("ddl_runtime_torch")


def setup_torch(env: dict[str, str], source: str, strategy: str = "") -> dict[str, Any]:
    import torch

    if "OMPI_COMM_WORLD_RANK" in env and "RANK" not in env:
        # ranks started by mpirun (an MPI TrainJob runtime) read their place from Open MPI
        env.update({k: str(v) for k, v in _mpi_env(torch_topology(env)).items()})
        os.environ.update({k: env[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")})
    if "RANK" in env and "LOCAL_RANK" not in env:
        # One process per replica (no torchrun): it is local rank 0 of its node.
        # ignite.distributed insists on LOCAL_RANK next to RANK and WORLD_SIZE.
        os.environ["LOCAL_RANK"] = env["LOCAL_RANK"] = "0"
    topo = torch_topology(env)
    names = _torch_part().setup_torch(
        torch,
        env,
        topo,
        self_init=cell_initialises_itself(source),
        strategy=strategy,
        backend=env.get(DIST_BACKEND_ENV) or None,
    )
    return {**_plain(topo), **names}


def _mpi_env(topo: dict[str, Any]) -> dict[str, Any]:
    return {
        "RANK": topo["rank"],
        "WORLD_SIZE": topo["world_size"],
        "LOCAL_RANK": topo["local_rank"],
    }


def setup_mpi(env: dict[str, str]) -> dict[str, Any]:
    topo = torch_topology(env)
    # torch (and friends) under mpirun read RANK/WORLD_SIZE/LOCAL_RANK.
    os.environ.update({k: str(v) for k, v in _mpi_env(topo).items()})
    return _plain(topo)


def _plain(topo: dict[str, Any]) -> dict[str, Any]:
    return {k: topo[k] for k in ("rank", "world_size", "local_rank")}


def line_buffered_output() -> None:
    """Write stdout/stderr one whole line per write().

    Under PYTHONUNBUFFERED, print() writes the text and its newline separately; when
    several ranks share one pipe (mpirun) the pieces interleave into garbled lines.
    """
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        try:
            raw = open(fd, "wb", buffering=1 << 16, closefd=False)  # noqa: SIM115
        except OSError:
            continue
        enc = getattr(old, "encoding", None) or "utf-8"
        setattr(
            sys,
            name,
            io.TextIOWrapper(raw, encoding=enc, errors="backslashreplace", line_buffering=True),
        )


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not change the exit code
            pass


def conveniences(strategy: str, env: dict[str, str], source: str) -> dict[str, Any]:
    """The names put into the cell's globals for this replica."""
    kind = framework_of(strategy, env)
    if kind == "tensorflow":
        names = setup_tensorflow(strategy, env, source)
    elif kind == "pytorch":
        names = setup_torch(env, source, strategy)
    elif kind == "mpi":
        names = setup_mpi(env)
    else:  # no strategy named, no cluster env: one process; `strategy` if it is touched
        names = {
            "rank": 0,
            "world_size": 1,
            "local_rank": 0,
            "strategy": LazyStrategy(_tf_factory("")),
        }
    return {**names, "report": report}


def main(cell_path: str, namespace: dict[str, Any]) -> None:
    """Set up, run the cell in ``namespace`` (the entry point's ``__main__``), tear down, exit."""
    with open(cell_path, encoding="utf-8") as f:
        source = f.read()
    env = dict(os.environ)
    line_buffered_output()
    code = 0
    try:
        namespace.update(conveniences(env.get(STRATEGY_ENV, ""), env, source))
        namespace.setdefault("__builtins__", builtins)
        exec(compile(source, cell_path, "exec"), namespace)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt as e:
        # 130 alone reads as a crash: say it was an interrupt, and where it landed
        frames = traceback.extract_tb(e.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        print(
            f"KeyboardInterrupt{where}: the cell was interrupted (SIGINT, or it raised "
            "KeyboardInterrupt); exit code 130",
            file=sys.stderr,
        )
        code = 130
    except BaseException as e:  # noqa: BLE001 - the user's failure: log it, exit non-zero
        tb = e.__traceback__
        # start the traceback at the cell (or the shim's setup), not at this exec line
        traceback.print_exception(type(e), e, (tb.tb_next if tb else None) or tb)
        code = 1
    _part("ddl_runtime_end").teardown(code == 0, _torch_part)
    _flush()
    # os._exit skips interpreter shutdown, where gloo can abort ("terminate called
    # without an active exception") and turn a success into SIGABRT.
    os._exit(code)
