"""Object storage: a root that is a URL (``s3://bucket/prefix``; ``gs://``, ``az://``, ``hf://``
for reading raw data) instead of a local folder.

Local roots never come here: every stage keeps its own code path for a ``Path`` (its atomic
temp+rename writes, locks and bytes). A remote root is an :class:`ObjectRoot`, reached through
fsspec (s3fs for ``s3://``) with the library's standard credential chain (environment
variables, ``~/.aws/config`` and ``credentials``, profiles, instance roles); the project stores
no secret and names no endpoint of its own.

What the stages rely on (docs/STORAGE.md):

- a write is one PUT of a finished file (s3fs switches to a multipart upload for large ones,
  which S3 also makes visible at once, on completion): an object is never seen half-written;
- every object this project writes carries its SHA-256 as user metadata (``x-amz-meta-sha256``),
  so content hashes and data versions come from a HEAD, never from reading the data;
- :meth:`ObjectStore.delete` is only called on objects the caller proved are the project's own
  (a tokenized folder's ``.hrm-data`` marker, a cleaned file carrying our SHA-256 metadata).

Errors name the bucket: a refused credential is a ``PermissionError``, a missing bucket a
``FileNotFoundError`` (:func:`named_errors`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from hrm_assets.common.atomic import TMP_PREFIX, create_temporary_file
from hrm_assets.common.hashing import entries_sha256, file_sha256

SHA256_METADATA = "sha256"  # stored as x-amz-meta-sha256
# Local working cache of remote roots (docs/STORAGE.md); default ~/.cache/hrm-data. Named here,
# where the cache is found, and listed with the other variables in common.settings.
CACHE_DIR_ENV = "HRM_CACHE_DIR"
# Protocols whose filesystem we write to; the others are read (raw data) only.
WRITABLE_PROTOCOLS = ("s3",)
READABLE_PROTOCOLS = ("s3", "gs", "gcs", "az", "abfs", "hf")
# HEADs and downloads run in threads: each is a round trip, not CPU.
IO_THREADS = 16


def is_url(value: str | os.PathLike | None) -> bool:
    """Whether a configured root is an object-storage URL (``<protocol>://...``)."""
    return isinstance(value, str) and "://" in value and not value.startswith("file://")


@dataclass(frozen=True)
class ObjectRoot:
    """A folder in object storage: ``<protocol>://<bucket>/<prefix>`` (no trailing ``/``)."""

    url: str

    @classmethod
    def parse(cls, value: str) -> ObjectRoot:
        protocol, _, rest = value.partition("://")
        rest = rest.strip("/")
        if protocol not in READABLE_PROTOCOLS or not rest:
            raise ValueError(
                f"{value!r}: expected <protocol>://<bucket>[/<prefix>] with a protocol of "
                f"{', '.join(READABLE_PROTOCOLS)}"
            )
        return cls(f"{protocol}://{rest}")

    @property
    def protocol(self) -> str:
        return self.url.partition("://")[0]

    @property
    def path(self) -> str:
        """``bucket/prefix``, as fsspec names it."""
        return self.url.partition("://")[2]

    @property
    def bucket(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def prefix(self) -> str:
        """The key prefix inside the bucket (empty at the bucket's root)."""
        return self.path.partition("/")[2]

    def join(self, *parts: str) -> ObjectRoot:
        tail = "/".join(part.strip("/") for part in parts if part.strip("/"))
        return ObjectRoot(f"{self.url}/{tail}" if tail else self.url)

    def key(self, relative: str) -> str:
        """The object key of ``relative`` under this root."""
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def __str__(self) -> str:
        return self.url

    def __truediv__(self, part: str) -> ObjectRoot:
        return self.join(part)


Location = Path | ObjectRoot


def parse_location(value: str | os.PathLike) -> Location:
    """A configured root: an :class:`ObjectRoot` for a URL, else an absolute ``Path``."""
    if is_url(value):
        return ObjectRoot.parse(str(value))
    text = str(value)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return Path(text).absolute()


@dataclass(frozen=True)
class ObjectInfo:
    """One object as a listing or HEAD shows it; ``sha256`` only from a HEAD (user metadata)."""

    relative: str
    size: int
    etag: str
    last_modified: float  # seconds since the epoch
    sha256: str | None = None


class StorageError(OSError):
    """Object storage refused or failed a request; the message names the bucket."""


@contextlib.contextmanager
def named_errors(root: ObjectRoot, what: str) -> Iterator[None]:
    """Turn the storage library's errors into ones naming the bucket and what was being done:
    ``PermissionError`` (credentials refused or not allowed), ``FileNotFoundError`` (no such
    bucket), ``StorageError`` (anything else the server answered)."""
    try:
        yield
    except PermissionError as error:
        raise PermissionError(
            f"{root.protocol}://{root.bucket}: access denied while {what} ({error}); check the "
            "credentials the standard chain finds (AWS_ACCESS_KEY_ID / AWS_PROFILE / "
            "~/.aws/credentials) and their permissions on this bucket"
        ) from None
    except FileNotFoundError as error:
        if _is_missing_bucket(error):
            raise FileNotFoundError(
                f"{root.protocol}://{root.bucket}: no such bucket (while {what}); create it or "
                "correct the URL"
            ) from None
        raise
    except OSError:
        raise
    except Exception as error:  # botocore's ClientError and kin, untranslated by s3fs
        code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
        if code in {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403"}:
            raise PermissionError(
                f"{root.protocol}://{root.bucket}: access denied while {what} ({code})"
            ) from None
        if code == "NoSuchBucket":
            raise FileNotFoundError(
                f"{root.protocol}://{root.bucket}: no such bucket (while {what})"
            ) from None
        raise StorageError(f"{root.protocol}://{root.bucket}: {what} failed: {error}") from error


def _is_missing_bucket(error: FileNotFoundError) -> bool:
    text = str(error)
    return "bucket does not exist" in text or "NoSuchBucket" in text


def _timestamp(value) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    return 0.0


def _etag_of(info: dict) -> str:
    for key in ("ETag", "etag", "sha256", "md5", "oid"):
        if info.get(key):
            return str(info[key]).strip('"')
    # A filesystem without content tags: size and time stand in (a change of either refetches).
    return f"{info.get('size')}-{_timestamp(info.get('LastModified') or info.get('mtime'))}"


def filesystem(protocol: str):
    """The fsspec filesystem of ``protocol``, configured only by the library's own standard
    environment and files. Listings are never cached: another machine may have written."""
    import fsspec

    # Not fsspec's cached instance: it would keep credentials the environment has since
    # replaced (a rotated session token, another profile).
    options = {"use_listings_cache": False, "skip_instance_cache": True} if protocol == "s3" else {}
    return fsspec.filesystem(protocol, **options)


class ObjectStore:
    """Reads and writes objects under one :class:`ObjectRoot`, by relative POSIX path."""

    def __init__(self, root: ObjectRoot):
        self.root = root
        self.fs = filesystem(root.protocol)

    def _path(self, relative: str) -> str:
        return f"{self.root.path}/{relative}" if relative else self.root.path

    def _require_writable(self) -> None:
        if self.root.protocol not in WRITABLE_PROTOCOLS:
            raise ValueError(f"{self.root}: only {', '.join(WRITABLE_PROTOCOLS)}:// is written to")

    def check_access(self) -> None:
        """Raise naming the bucket unless it exists and these credentials may list it."""
        with named_errors(self.root, "listing the bucket"):
            try:
                if self.root.protocol == "s3":
                    self.fs.call_s3("head_bucket", Bucket=self.root.bucket)
                else:
                    self.fs.ls(self.root.bucket)
            except FileNotFoundError:
                # A HEAD's 404 has no body to name the error: the bucket is what was asked for.
                raise FileNotFoundError("The specified bucket does not exist") from None

    def list(self, relative_prefix: str = "") -> dict[str, ObjectInfo]:
        """Every object under ``relative_prefix`` (a folder, recursively), by relative path.
        One listing; no HEAD, so ``sha256`` is None. A missing prefix lists nothing."""
        base = self._path(relative_prefix).rstrip("/")
        with named_errors(self.root, f"listing {self.root.join(relative_prefix)}"):
            try:
                found = self.fs.find(base, detail=True)
            except FileNotFoundError as error:
                if _is_missing_bucket(error):
                    raise
                return {}
        strip = len(self.root.path) + 1
        listing = {}
        for name, info in found.items():
            if info.get("type") == "directory":
                continue
            relative = name[strip:]
            listing[relative] = ObjectInfo(
                relative=relative,
                size=int(info.get("size") or 0),
                etag=_etag_of(info),
                last_modified=_timestamp(info.get("LastModified") or info.get("mtime")),
            )
        return dict(sorted(listing.items()))

    def head(self, relative: str) -> ObjectInfo | None:
        """The object's size, ETag, time and stored SHA-256 (None if it has none); None if
        there is no such object."""
        with named_errors(self.root, f"reading {self.root.join(relative)}"):
            if self.root.protocol != "s3":
                try:
                    info = self.fs.info(self._path(relative))
                except FileNotFoundError as error:
                    if _is_missing_bucket(error):
                        raise
                    return None
                return ObjectInfo(
                    relative, int(info.get("size") or 0), _etag_of(info), _timestamp(None)
                )
            try:
                response = self.fs.call_s3(
                    "head_object", Bucket=self.root.bucket, Key=self.root.key(relative)
                )
            except FileNotFoundError as error:
                if _is_missing_bucket(error):
                    raise
                return None
        return ObjectInfo(
            relative=relative,
            size=int(response["ContentLength"]),
            etag=str(response.get("ETag", "")).strip('"'),
            last_modified=_timestamp(response.get("LastModified")),
            sha256=(response.get("Metadata") or {}).get(SHA256_METADATA),
        )

    def head_many(self, relatives: Iterable[str]) -> dict[str, ObjectInfo | None]:
        """:meth:`head` of many objects, several at once."""
        relatives = list(relatives)
        if not relatives:
            return {}
        with ThreadPoolExecutor(min(IO_THREADS, len(relatives))) as pool:
            return dict(zip(relatives, pool.map(self.head, relatives), strict=True))

    def get_bytes(self, relative: str) -> bytes | None:
        """The object's bytes (for small objects: metadata, manifests), or None if absent."""
        with named_errors(self.root, f"reading {self.root.join(relative)}"):
            try:
                return self.fs.cat_file(self._path(relative))
            except FileNotFoundError as error:
                if _is_missing_bucket(error):
                    raise
                return None

    def download(self, relative: str, destination: Path, mtime: float | None = None) -> None:
        """Copy the object to ``destination`` atomically (a temporary file in its folder, then
        a rename), with ``mtime`` as its modification time when given."""
        destination = Path(destination)
        destination.parent.mkdir(parents=True, exist_ok=True)
        # The project's temporary names (readable modes, cleaned as leftovers after a crash).
        temporary = create_temporary_file(destination.parent, f"{TMP_PREFIX}{destination.name}.")
        try:
            with named_errors(self.root, f"downloading {self.root.join(relative)}"):
                self.fs.get_file(self._path(relative), temporary)
            if mtime is not None:
                os.utime(temporary, (mtime, mtime))
            os.replace(temporary, destination)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def put_bytes(self, relative: str, data: bytes) -> str:
        """Write one object in one PUT, its SHA-256 stored with it; returns the SHA-256."""
        self._require_writable()
        digest = hashlib.sha256(data).hexdigest()
        with named_errors(self.root, f"writing {self.root.join(relative)}"):
            self.fs.pipe_file(self._path(relative), data, Metadata={SHA256_METADATA: digest})
        return digest

    def put_file(self, relative: str, source: Path, sha256: str | None = None) -> str:
        """Upload a finished local file as one object (multipart for large files, visible only
        when complete), its SHA-256 stored with it; returns the SHA-256."""
        self._require_writable()
        digest = sha256 or file_sha256(source)
        with named_errors(self.root, f"writing {self.root.join(relative)}"):
            self.fs.put_file(str(source), self._path(relative), Metadata={SHA256_METADATA: digest})
        return digest

    def delete(self, relatives: Iterable[str]) -> None:
        """Delete these objects. Callers pass only objects proven to be the project's own."""
        self._require_writable()
        paths = [self._path(relative) for relative in relatives]
        if paths:
            with named_errors(self.root, f"deleting under {self.root}"):
                self.fs.rm(paths)


def remote_tree_sha256(infos: Iterable[ObjectInfo], strip: str = "") -> str:
    """:func:`hrm_assets.common.hashing.tree_sha256` of objects, from their stored SHA-256 and
    listed size instead of their bytes: the same value a local tree of the same files gives.
    ``strip`` is a relative prefix removed from each name (the tree's root)."""
    entries = []
    for info in infos:
        if info.sha256 is None:
            raise ValueError(f"{info.relative}: no stored SHA-256 (not written by hrm-data)")
        relative = info.relative[len(strip) :] if strip else info.relative
        entries.append((relative, info.size, info.sha256))
    return entries_sha256(entries)


def storage_options(root: ObjectRoot) -> dict[str, str]:
    """What the Rust core's object_store needs to reach ``root`` as botocore would: the
    credentials, region and endpoint botocore resolves from its standard chain (environment,
    config and credential files, profile), as ``AmazonS3ConfigKey`` strings. Both sides then
    agree on where and as whom, whatever the chain found; nothing is read from project files."""
    import botocore.session

    session = botocore.session.Session()
    options: dict[str, str] = {}
    credentials = session.get_credentials()
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        options["aws_access_key_id"] = frozen.access_key
        options["aws_secret_access_key"] = frozen.secret_key
        if frozen.token:
            options["aws_session_token"] = frozen.token
    client = session.create_client("s3")
    region = client.meta.region_name or session.get_config_variable("region")
    if region:
        options["aws_region"] = region
    endpoint = client.meta.endpoint_url
    if endpoint and not _is_aws_endpoint(endpoint):
        options["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options["aws_allow_http"] = "true"
    return options


def _is_aws_endpoint(endpoint: str) -> bool:
    host = endpoint.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    return host.endswith(".amazonaws.com") or host.endswith(".amazonaws.com.cn")


def cache_root() -> Path:
    """Local working cache of remote roots: ``$HRM_CACHE_DIR``, default
    ``~/.cache/hrm-data``."""
    value = os.environ.get(CACHE_DIR_ENV)
    return Path(value).absolute() if value else Path.home() / ".cache" / "hrm-data"


def mirror_path(root: ObjectRoot) -> Path:
    """The local working copy of ``root`` in the cache: ``<cache>/<protocol>/<bucket>/<prefix>``."""
    return cache_root() / root.protocol / root.path
