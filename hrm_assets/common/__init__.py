"""What every stage shares: where data lives and how outputs are written, hashed and read.

- :mod:`~hrm_assets.common.settings`: every default path and file name of the project.
- :mod:`~hrm_assets.common.layout`: the cleaned-file layout (names, safe folder names).
- :mod:`~hrm_assets.common.atomic`: outputs renamed into place, one writer at a time.
- :mod:`~hrm_assets.common.hashing`: content hashes, the basis of every data version.
- :mod:`~hrm_assets.common.manifest`: ``manifest.json`` (size and SHA-256 of every array).
- :mod:`~hrm_assets.common.build_record`: what an output was built from, for no-op rebuilds.
- :mod:`~hrm_assets.common.npy_files`: reading 1-D integer ``.npy`` arrays, errors naming the file.
- :mod:`~hrm_assets.common.progress`: progress bars that cost nothing when off.
- :mod:`~hrm_assets.common.config_errors`: one line per invalid field of a pydantic model.

Nothing here imports Dagster, nor a stage package at import time (a manifest check also asks the
sampling package whether a folder's data card still describes it, when it runs).
"""
