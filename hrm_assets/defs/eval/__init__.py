"""Evaluation sets and what the training rows share with them: ``eval/<name>`` (one asset per
evaluation set), ``eval/contamination`` (the n-gram and duplicate passes over every cleaned
source) and the warning-severity ``contamination`` check of each ``cleaned/<source>``."""

import dagster as dg

from hrm_assets.defs.eval.assets import EVAL_ASSETS
from hrm_assets.defs.eval.checks import contamination_checks

defs = dg.Definitions(assets=EVAL_ASSETS, asset_checks=[contamination_checks])
