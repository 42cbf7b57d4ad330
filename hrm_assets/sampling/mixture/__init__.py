"""Token-budget mixtures: the optional ``mixture:`` section of ``prefix_config.yaml``.

Without it the sampler draws data_io's rows per task (``min(max_per_file, rows) * repeat``).
With it, a token budget per epoch is split between groups of tasks by weight (with a
temperature), the split may change from a given epoch on (phases), and each group's tokens
become rows per task (:mod:`hrm_assets.sampling.mixture.allocation`), drawn as data_io draws rows
(:mod:`hrm_assets.sampling.mixture.draw`). Target against achieved shares:
:mod:`hrm_assets.sampling.mixture.report`.
"""
