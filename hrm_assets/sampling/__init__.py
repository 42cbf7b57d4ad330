"""Stage 4, sampling: a tokenized root -> the ``epoch_N/`` arrays HRM-Text trains on.

- :mod:`~hrm_assets.sampling.sampler`: ``sample_tokenized``, the run; its parts:
  :mod:`~hrm_assets.sampling.config` (``SamplingConfig``, ``SamplingError``),
  :mod:`~hrm_assets.sampling.task_folders` (the tokenized inputs read and checked),
  :mod:`~hrm_assets.sampling.task_reports` (each task's rule and figures),
  :mod:`~hrm_assets.sampling.preflight` (warnings and refusals before drawing),
  :mod:`~hrm_assets.sampling.output_guard` (the output folder replaced, and its lock),
  :mod:`~hrm_assets.sampling.epoch_writing` (the epochs drawn and written),
  :mod:`~hrm_assets.sampling.sampled_files` (``metadata.json``, ``manifest.json``),
  :mod:`~hrm_assets.sampling.result` (``SamplingResult``).
- :mod:`~hrm_assets.sampling.cli`: data_io's sampling command (``hrm-sample``,
  ``python -m hrm_assets.sampling key=value ...``).
- :mod:`~hrm_assets.sampling.defaults`: every setting's default, bound and help (one place).
- :mod:`~hrm_assets.sampling.prefix_config`: the per-task rules of ``prefix_config.yaml``;
  :mod:`~hrm_assets.sampling.epoch_budget`: whether they fit the data.
- :mod:`~hrm_assets.sampling.span_table`: every task's spans, checked and length-filtered;
  :mod:`~hrm_assets.sampling.epoch_draw`: data_io's epoch draw (Philox);
  :mod:`~hrm_assets.sampling.arrays`: the output arrays, fsynced and hashed.
- :mod:`~hrm_assets.sampling.output_folder`, :mod:`~hrm_assets.sampling.tokenizer_folder`:
  which folder the sampler may replace, and the ``tokenizer/`` it ships.
- :mod:`~hrm_assets.sampling.analytics`: the Markdown report and its figures.
- :mod:`~hrm_assets.sampling.mixture`: token-budget mixtures (``mixture:`` in the rules).
- :mod:`~hrm_assets.sampling.datacard`: the data card written into every sampled folder.
- :mod:`~hrm_assets.sampling.training_nodes`: the nodes that receive sampled epochs.

Dagster wiring: ``hrm_assets.defs.sampled``. Rust core: ``rust_tokenizer/src/sample/``.
"""
