"""A real S3-compatible server on loopback for the object-storage tests: moto's server mode in
its own process (``python -m moto.server``), the way a test of a cluster would reach MinIO or S3.

The server runs once per test session; each test gets its own bucket. Credentials and the
endpoint reach every client through the standard AWS environment variables only (botocore and
s3fs read them, and so does the Rust ``object_store`` crate), never through a project setting.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
        return boto3_client("s3", self.endpoint)

    def create_bucket(self, prefix: str = "hrm-test") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def _post(self, path: str, data: bytes = b"") -> bytes:
        # text/plain: urllib's default (a form) leaves moto's request.data empty.
        request = urllib.request.Request(
            f"{self.endpoint}{path}",
            data=data,
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read()

    @contextmanager
    def recording(self) -> Iterator[Callable[[], list[tuple[str, str]]]]:
        """Record the requests the server receives while inside (moto's recorder); yields a
        function returning them so far, in arrival order, as ``(method, path?query)``."""
        self._post("/moto-api/recorder/reset-recording")
        self._post("/moto-api/recorder/start-recording")

        def requests() -> list[tuple[str, str]]:
            with urllib.request.urlopen(
                f"{self.endpoint}/moto-api/recorder/download-recording", timeout=10
            ) as response:
                lines = response.read().decode().splitlines()
            entries = [json.loads(line) for line in lines if line.strip()]
            return [
                (
                    entry["method"],
                    urllib.parse.urlsplit(entry["url"])._replace(scheme="", netloc="").geturl(),
                )
                for entry in entries
            ]

        try:
            yield requests
        finally:
            self._post("/moto-api/recorder/stop-recording")
            self._post("/moto-api/recorder/reset-recording")

    def create_access_key(self, policy: dict) -> tuple[str, str]:
        """A new IAM user with the inline ``policy`` (an IAM policy document) and its access
        key: ``(access key id, secret)``. Call it before ``authentication_enforced``."""
        iam = boto3_client("iam", self.endpoint)
        user = f"hrm-test-{uuid.uuid4().hex[:12]}"
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="test", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    @contextmanager
    def authentication_enforced(self) -> Iterator[None]:
        """While inside, the server checks every request's signature against the access keys
        its IAM knows and their policies (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``, set to 0 at
        run time): the session's test keys are unknown, so their requests fail with 403
        ``InvalidAccessKeyId``; keys from ``create_access_key`` work as their policy says."""
        previous = json.loads(self._post("/moto-api/reset-auth", b"0"))
        try:
            yield
        finally:
            self._post(
                "/moto-api/reset-auth", previous["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"].encode()
            )

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        paginator = self.client().get_paginator("list_objects_v2")
        return sorted(
            item["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        )


def boto3_client(service: str, endpoint: str):
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
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
    pytest.fail(
        f"the S3 server did not answer at {endpoint} within 60 s:\n{log.read_text()[-2000:]}"
    )


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
            env={
                **os.environ,
                "MOTO_ALLOW_NONEXISTENT_REGION": "true",
                # Where S3Server.recording() keeps its log (nothing is written unless started).
                "MOTO_RECORDER_FILEPATH": str(log_dir / "moto-recording.jsonl"),
            },
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
