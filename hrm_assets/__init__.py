"""hrm-data: pretraining data for HRM-Text-style models as a Dagster asset graph.

Pure logic lives in one package per stage (cleaning, tokenizer, tokenization, sampling,
export) and in common; Dagster wiring lives in ``hrm_assets.defs`` and never the other way
round. The layout and the data's path through it: docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
