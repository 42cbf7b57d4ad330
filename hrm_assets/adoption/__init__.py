"""Adoption: taking existing outputs (a published cleaned corpus, data_io's tokenizer) as the
platform's own inputs without copying or modifying them.

- :mod:`~hrm_assets.adoption.cleaned`: cleaned roots laid out as data_io writes them (``data/``
  and ``data_clustered/``) or as a Hugging Face Hub download caches them (symlinks into
  ``blobs/``): their files by source, content versions and provenance.
- :mod:`~hrm_assets.adoption.objects`: cleaned roots in object storage (``s3://``), listed and
  hashed in one streaming pass per changed object, read in place.
- :mod:`~hrm_assets.adoption.roots`: the adopted roots, folders or ``s3://``, chosen once;
  their files and content hashes (or the project's own cleaned files) behind one interface.
- :mod:`~hrm_assets.adoption.provenance`: the Hub corpus of each adopted file, recorded beside
  the tokenized folders and credited in the data card.
- :mod:`~hrm_assets.adoption.tokenized`: a tokenized root data_io's binary wrote: its folders
  checked and hashed once.

The tokenizer's adoption rule is :func:`hrm_assets.tokenizer.train.is_ours`. Dagster wiring:
``hrm_assets.defs.cleaned.adopted`` and ``hrm_assets.defs.tokenized.adopted`` (records),
``hrm_assets.defs.tokenized.sensors`` (the sensor), ``hrm_assets.defs.tokenized.assets``
(reads), ``hrm_assets.defs.cleaned.adopt_command`` (``python -m hrm_assets.adoption``).
"""
