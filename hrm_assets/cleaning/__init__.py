"""Stage 1, cleaning: raw records -> validated rows -> data_io's cleaned JSONL/Parquet files.

- :mod:`~hrm_assets.cleaning.sources`: the source registry, one module per built-in source
  family, and :mod:`~hrm_assets.cleaning.sources.declared` (sources declared in ``sources.yaml``).
- :mod:`~hrm_assets.cleaning.clean`: ``clean_source``, the row path streamed in batches, and
  the choice of engine; :mod:`~hrm_assets.cleaning.checks` (every produced row's check),
  :mod:`~hrm_assets.cleaning.report` (counts, skips with examples, speed) and
  :mod:`~hrm_assets.cleaning.outputs` (the writers, committed together).
- :mod:`~hrm_assets.cleaning.cli`: ``python -m hrm_assets.cleaning SOURCE... --out DIR``, with
  :mod:`~hrm_assets.cleaning.progress` (bar and log lines in rows/s and MB/s).
- :mod:`~hrm_assets.cleaning.columnar`, :mod:`~hrm_assets.cleaning.columnar_clean` and
  :mod:`~hrm_assets.cleaning.columnar_outputs`: a source's rules on Arrow record batches (FLAN,
  SYNTH, OpenMathInstruct-2, tasksource, dmmath, GSM8K from Parquet) and the engine that runs
  them, parts in parallel, with the same files and report as the row path.
- :mod:`~hrm_assets.cleaning.rows`: the cleaned row and a validating reader of cleaned files.
- :mod:`~hrm_assets.cleaning.cleaned_parquet`: Parquet with the bytes data_io writes.
- :mod:`~hrm_assets.cleaning.raw_versions`, :mod:`~hrm_assets.cleaning.raw_damage`,
  :mod:`~hrm_assets.cleaning.leftovers`: raw data versions, the raw file that cannot be read,
  what killed runs left behind.

Dagster wiring: ``hrm_assets.defs.raw`` and ``hrm_assets.defs.cleaned``.
"""
