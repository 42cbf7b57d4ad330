"""The multiprocess executor, except that a run of one step runs it in the run's own process.

Most runs here are one step (a source's cleaning, a source's tokenized files, a node's epochs);
a second process for it gains nothing (the run's process only waits) and costs its start, the
forkserver's included: seconds, most of a no-op run. Built on Dagster's private
``InProcessExecutor``, so on a Dagster release this package was not written for,
:func:`multiprocess_executor` is Dagster's own multiprocess executor.
"""

from __future__ import annotations

import dagster as dg

from hrm_assets.dagster_internals import TESTED

if TESTED:
    from dagster._core.executor.in_process import InProcessExecutor


class SingleStepInProcess(dg.Executor):
    """A process per step, except for a run of one step, which runs in the run's process."""

    def __init__(self, multiprocess: dg.Executor):
        self._multiprocess = multiprocess
        self._in_process = InProcessExecutor(
            retries=multiprocess.retries,
            step_dependency_config=multiprocess.step_dependency_config,
        )

    @property
    def retries(self):
        return self._multiprocess.retries

    @property
    def step_dependency_config(self):
        return self._multiprocess.step_dependency_config

    def execute(self, plan_context, execution_plan):
        if len(execution_plan.step_keys_to_execute) == 1:
            return self._in_process.execute(plan_context, execution_plan)
        return self._multiprocess.execute(plan_context, execution_plan)


@dg.executor(
    name="multiprocess",
    config_schema=dg.multiprocess_executor.config_schema.as_field(),
    requirements=dg.multiple_process_executor_requirements(),
)
def _multiprocess_single_step_in_process(init_context) -> dg.Executor:
    return SingleStepInProcess(dg.multiprocess_executor.executor_creation_fn(init_context))


def multiprocess_executor() -> dg.ExecutorDefinition:
    """The ``multiprocess`` executor: a one-step run in the run's process where this package
    is tested, Dagster's own everywhere else. Configured like Dagster's."""
    return _multiprocess_single_step_in_process if TESTED else dg.multiprocess_executor
