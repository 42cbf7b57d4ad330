"""A tokenizer file identified by its content, with the framing it is used with, and its Rust
encoder (``hrm_assets._core.Encoder``), loaded once per process."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from hrm_assets import _core
from hrm_assets.common.hashing import file_sha256, value_sha256
from hrm_assets.common.settings import TOKENIZER_JSON
from hrm_assets.contracts.framing import Framing


def resolve_tokenizer_json(tokenizer_path: str | Path) -> Path:
    """The ``tokenizer.json`` a ``--tokenizer-path`` names: the file itself, or one in a folder.

    Raises ``FileNotFoundError`` (unlike data_io, Hub names are not downloaded).
    """
    path = Path(tokenizer_path)
    if path.is_dir():
        path = path / TOKENIZER_JSON
    if not path.is_file():
        raise FileNotFoundError(
            f"{tokenizer_path}: no tokenizer found (expected a tokenizer.json file or a folder "
            "holding one)"
        )
    return path


def framing_sha256(framing: Framing) -> str:
    return value_sha256(framing.model_dump())


@functools.lru_cache(maxsize=4)
def _load_encoder(tokenizer_json: str, tokenizer_sha256: str, framing_json: str) -> _core.Encoder:
    # Keyed by content hash as well as path, so a replaced tokenizer.json is reloaded.
    framing = Framing.model_validate_json(framing_json)
    return _core.Encoder(
        tokenizer_json, framing.boq, framing.eoq, framing.eoa, dict(framing.conditions)
    )


@dataclass(frozen=True)
class TokenizerSetup:
    """A tokenizer file identified by content, with the framing it is used with."""

    given_path: str
    tokenizer_json: Path
    tokenizer_sha256: str
    framing: Framing

    @classmethod
    def load(cls, tokenizer_path: str | Path, framing: Framing | None = None) -> TokenizerSetup:
        tokenizer_json = resolve_tokenizer_json(tokenizer_path)
        return cls(
            given_path=str(tokenizer_path),
            tokenizer_json=tokenizer_json,
            tokenizer_sha256=file_sha256(tokenizer_json),
            framing=framing if framing is not None else Framing(),
        )

    @property
    def framing_sha256(self) -> str:
        return framing_sha256(self.framing)

    def encoder(self) -> _core.Encoder:
        """The Rust encoder (cached per process). Raises ``ValueError`` if a framing token is
        not in the vocabulary."""
        return _load_encoder(
            str(self.tokenizer_json), self.tokenizer_sha256, self.framing.model_dump_json()
        )


TokenizerLike = TokenizerSetup | str | Path


def as_setup(tokenizer: TokenizerLike, framing: Framing | None) -> TokenizerSetup:
    if isinstance(tokenizer, TokenizerSetup):
        if framing is not None and framing != tokenizer.framing:
            raise ValueError("framing differs from the TokenizerSetup's framing")
        return tokenizer
    return TokenizerSetup.load(tokenizer, framing)
