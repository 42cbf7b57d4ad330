"""A real S3-compatible server on loopback for the object-storage tests: moto's server mode in
its own process (``python -m moto.server``), the way a test of a cluster would reach MinIO or S3.

The server runs once per test session; each test gets its own bucket. Credentials and the
endpoint reach every client through the standard AWS environment variables only (botocore and
s3fs read them, and so does the Rust ``object_store`` crate), never through a project setting.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ACCESS_KEY = "hrm-test-access-key"
SECRET_KEY = "hrm-test-secret-key"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint and the environment that points a client at it."""

    endpoint: str
    log: Path

    def environment(self) -> dict[str, str]:
        """The standard variables botocore/s3fs and ``object_store`` read."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            # object_store refuses plain http unless told; loopback only.
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self):
        """A boto3 S3 client for test setup and inspection (not the code under test)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def create_bucket(self, prefix: str = "hrm-test") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        paginator = self.client().get_paginator("list_objects_v2")
        return sorted(
            item["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(endpoint: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the S3 server exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    pytest.fail(f"the S3 server did not answer at {endpoint} within 60 s:\n{log.read_text()[-2000:]}")


def start_s3_server(log_dir: Path) -> Iterator[S3Server]:
    """Start moto's server on a free loopback port; yield it; stop it."""
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = log_dir / "moto-server.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )
    try:
        _wait_until_up(endpoint, process, log)
        yield S3Server(endpoint=endpoint, log=log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
