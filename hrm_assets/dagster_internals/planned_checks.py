"""Planned check evaluations narrowed to one partition, serialized fast.

Dagster 1.13's SQLite storage writes one row per planned partition, each holding the whole
planned event with the run's whole partition subset (quadratic); the pooled event log writes
each row's event narrowed to its own partition.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from dagster._core.definitions.partitions.subset.default import DefaultPartitionsSubset
from dagster._core.events.log import EventLogEntry
from dagster._serdes import serialize_value
from dagster_shared.record import copy


def narrowed(event: EventLogEntry, partition: str) -> EventLogEntry:
    """A planned check ``event`` whose partition subset holds ``partition`` alone."""
    planned = event.dagster_event.event_specific_data
    subset = planned.partitions_subset.empty_subset().with_partition_keys([partition])
    alone = copy(planned, partitions_subset=subset)
    return event._replace(dagster_event=event.dagster_event._replace(event_specific_data=alone))


def narrowed_events(event: EventLogEntry, partitions: Sequence[str | None]):
    """partition -> the planned check ``event`` narrowed to that partition, serialized. A
    subset of keys (dynamic or static partitions) serializes its one key as a JSON string, so
    one event is serialized with a stand-in key and the stand-in replaced by each key (as
    ``json`` writes it, which is what serialization does): 2,000 partitions took ~1 s of a
    run's start otherwise. Other subsets are serialized one by one."""
    subset = event.dagster_event.event_specific_data.partitions_subset
    if subset is None or not isinstance(subset, DefaultPartitionsSubset):
        return lambda partition: serialize_value(
            event if partition is None else narrowed(event, partition)
        )
    stand_in = f"hrm-partition-{uuid.uuid4().hex}"
    template = serialize_value(narrowed(event, stand_in))
    quoted = json.dumps(stand_in)
    if template.count(stand_in) != 1 or template.count(quoted) != 1:
        return lambda partition: serialize_value(narrowed(event, partition))
    before, after = template.split(quoted)
    return lambda partition: f"{before}{json.dumps(partition)}{after}"
