"""Stage 1, cleaning: raw records -> validated rows -> data_io's cleaned JSONL/Parquet files.

- :mod:`~hrm_assets.cleaning.sources`: the source registry, one module per built-in source
  family, and :mod:`~hrm_assets.cleaning.sources.declared` (sources declared in ``sources.yaml``).
- :mod:`~hrm_assets.cleaning.clean`: ``clean_source``, streamed in batches, with its counters
  and the CLI ``python -m hrm_assets.cleaning SOURCE... --out DIR``.
- :mod:`~hrm_assets.cleaning.columnar` and :mod:`~hrm_assets.cleaning.columnar_clean`: a
  source's rules on Arrow record batches (FLAN, SYNTH) and the engine that runs them, parts
  in parallel, with the same files and report as the row path.
- :mod:`~hrm_assets.cleaning.rows`: the cleaned row and a validating reader of cleaned files.
- :mod:`~hrm_assets.cleaning.cleaned_parquet`: Parquet with the bytes data_io writes.
- :mod:`~hrm_assets.cleaning.raw_versions`, :mod:`~hrm_assets.cleaning.raw_damage`,
  :mod:`~hrm_assets.cleaning.leftovers`: raw data versions, the raw file that cannot be read,
  what killed runs left behind.

Dagster wiring: ``hrm_assets.defs.raw`` and ``hrm_assets.defs.cleaned``.
"""
