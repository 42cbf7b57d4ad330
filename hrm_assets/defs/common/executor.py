"""Execution mode: the multiprocess executor on one machine, or Dagster's Celery executor.

``HRM_EXECUTOR=celery`` switches to Celery (broker ``HRM_CELERY_BROKER``, default a local
Redis); nothing else changes. Steps carry their queue in the ``dagster-celery/queue`` tag.
"""

import os

import dagster as dg

EXECUTOR_ENV = "HRM_EXECUTOR"
BROKER_ENV = "HRM_CELERY_BROKER"
BACKEND_ENV = "HRM_CELERY_BACKEND"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
GENERAL_QUEUE = "dagster"


def executor_from_environment() -> dg.ExecutorDefinition:
    mode = os.environ.get(EXECUTOR_ENV, "multiprocess")
    if mode == "multiprocess":
        return dg.multiprocess_executor
    if mode == "in_process":
        return dg.in_process_executor
    if mode == "celery":
        from dagster_celery import celery_executor

        broker = os.environ.get(BROKER_ENV, DEFAULT_BROKER)
        backend = os.environ.get(BACKEND_ENV, broker)
        return celery_executor.configured({"broker": broker, "backend": backend})
    raise ValueError(f"{EXECUTOR_ENV}={mode!r}: expected multiprocess, in_process or celery")
