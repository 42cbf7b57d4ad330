"""Execution mode, and which worker a step runs on.

``HRM_EXECUTOR`` picks the executor: ``multiprocess`` (default, one machine; each step is forked
from a server process that imported Dagster and the definitions once, see
:data:`FORKSERVER_PRELOAD`, and a run of a single step runs it in the run's own process:
``dagster_internals.executor``),
``in_process``, or ``celery``: Dagster's Celery executor, broker
``HRM_CELERY_BROKER`` (default a local Redis), results in ``HRM_CELERY_BACKEND`` (default: the
broker). Nothing else changes: steps carry their queue in the ``dagster-celery/queue`` tag
(tokenization on the general queue, each training node's sampling on that node's queue), and
workers are started with ``dagster-celery worker start -A dagster_celery.app -q dagster -q <node
queue>``.

A worker that serves a training node declares it in ``HRM_WORKER_NODE``; the sampled asset
refuses to write another node's epochs there (a misrouted queue would otherwise fill the wrong
machine's RAM disk without an error).
"""

import os
import socket
from dataclasses import dataclass

import dagster as dg

from hrm_assets.dagster_internals.executor import multiprocess_executor

EXECUTOR_ENV = "HRM_EXECUTOR"
BROKER_ENV = "HRM_CELERY_BROKER"
BACKEND_ENV = "HRM_CELERY_BACKEND"
WORKER_NODE_ENV = "HRM_WORKER_NODE"
EXECUTOR_MODES = ("multiprocess", "in_process", "celery")
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
GENERAL_QUEUE = "dagster"
CELERY_QUEUE_TAG = "dagster-celery/queue"

FORKSERVER_PRELOAD = (
    "hrm_assets.definitions",
    # What a step loads besides the definitions: the instance and its SQLite storages
    # (SQLAlchemy, alembic; the project's, or Dagster's own on another Dagster release), and
    # pyarrow for the Parquet cleaned files its checks read.
    "dagster._cli",
    "hrm_assets.dagster_internals.instance",
    "pyarrow.parquet",
)
"""Modules imported once by the multiprocess executor's forkserver. A spawned step imports Dagster
and the definitions afresh (seconds; most of a no-op step); a forked one starts warm. A module
that is missing is skipped by the forkserver, so a Dagster upgrade that renames one only costs
time."""


def _forkserver_by_default(config: dict) -> dict:
    """Multiprocess executor config: fork steps from the warm server unless the run config
    chooses a start method itself (``execution: config: start_method: spawn: {}``)."""
    preload = {"forkserver": {"preload_modules": list(FORKSERVER_PRELOAD)}}
    return {"start_method": preload, **config}


MULTIPROCESS_EXECUTOR = multiprocess_executor().configured(
    _forkserver_by_default, config_schema=dg.multiprocess_executor.config_schema.as_field()
)


def celery_connection() -> dict[str, str]:
    """``{"broker": ..., "backend": ...}`` from the environment (the Celery executor's config)."""
    broker = os.environ.get(BROKER_ENV) or DEFAULT_BROKER
    return {"broker": broker, "backend": os.environ.get(BACKEND_ENV) or broker}


def executor_from_environment() -> dg.ExecutorDefinition:
    """The executor ``HRM_EXECUTOR`` names; ValueError for an unknown mode."""
    mode = os.environ.get(EXECUTOR_ENV) or "multiprocess"
    if mode == "multiprocess":
        return MULTIPROCESS_EXECUTOR
    if mode == "in_process":
        return dg.in_process_executor
    if mode == "celery":
        from dagster_celery import celery_executor

        return celery_executor.configured(celery_connection())
    raise ValueError(f"{EXECUTOR_ENV}={mode!r}: expected one of {', '.join(EXECUTOR_MODES)}")


@dataclass(frozen=True)
class StepWorker:
    """Where the current step runs.

    ``hostname``: the machine. ``name``: the Celery worker's node name (``node-a@host``, set
    with ``dagster-celery worker start -n``). ``queue``: the queue the step was delivered on.
    ``node``: the training node the worker declares (``HRM_WORKER_NODE``). The last three are
    empty outside a Celery worker or when not declared.
    """

    hostname: str
    name: str = ""
    queue: str = ""
    node: str = ""


def current_step_worker() -> StepWorker:
    """The worker executing the calling step (works in any executor)."""
    name = queue = ""
    try:
        from celery import current_task
    except ImportError:  # pragma: no cover - celery is a dependency, but not needed here
        current_task = None
    request = getattr(current_task, "request", None) if current_task else None
    if request is not None and getattr(request, "id", None):
        name = request.hostname or ""
        # dagster-celery routes a step to queue Q with routing key "Q.execute_plan".
        routing_key = (request.delivery_info or {}).get("routing_key") or ""
        queue = routing_key.rsplit(".", 1)[0] if "." in routing_key else routing_key
    return StepWorker(
        hostname=socket.gethostname(),
        name=name,
        queue=queue,
        node=os.environ.get(WORKER_NODE_ENV, ""),
    )
