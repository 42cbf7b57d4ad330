"""Training-ready exports of sampled epochs (or of a whole tokenized corpus) for other trainers.

- :mod:`hrm_assets.export.megatron`: a Megatron-LM indexed dataset (``.bin`` tokens and
  ``.idx`` in the ``MMIDIDX`` format, version 1), one document per row, with the
  instruction/response boundary of each row in a side ``.npy`` array.
- :mod:`hrm_assets.export.packing` (the plan: first-fit-decreasing, deterministic by seed, into
  sequences of ``context_size`` tokens) and :mod:`hrm_assets.export.packed_writer` (the arrays:
  tokens, a loss mask on response tokens only as HRM-Text's ``target_only``, position ids
  restarting per row and segment ids, as ``.npy``).
- :mod:`hrm_assets.export.row_source`: the rows to export, held still and read in chunks (never
  the whole corpus in memory); :mod:`hrm_assets.export.npy_stream` and
  :mod:`hrm_assets.export.output_folder`: streamed, hashed files and the atomic output folder
  with its ``manifest.json``.
- :mod:`hrm_assets.export.export_runs`: one export from start to finish (what the CLI and the
  Dagster assets call); :mod:`hrm_assets.export.cli`: ``python -m hrm_assets.export
  megatron|packed ...`` (``hrm-export-megatron``, ``hrm-export-packed``);
  :mod:`hrm_assets.export.chart`: the packed sequences by fill, as a PNG for the asset.

None of it writes into the sampled or tokenized folders it reads. Formats: docs/EXPORT.md.
"""
