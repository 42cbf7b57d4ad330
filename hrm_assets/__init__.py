"""hrm-data: pretraining data for HRM-Text-style models as a Dagster asset graph.

Pure logic lives in the top-level modules (cleaning, tokenization, sampling); Dagster wiring
lives in ``hrm_assets.defs`` and never the other way round.
"""

__version__ = "0.1.0"
