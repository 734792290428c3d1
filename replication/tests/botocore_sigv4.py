"""Expected SigV4 signatures for replication/tests/sigv4_botocore.rs.

Signs the remote client's request shapes with botocore's S3SigV4Auth on
fixed inputs (time, keys) and prints one JSON object per case. Re-run with
the project's venv (`/var/tmp/godwit-venv/bin/python replication/tests/botocore_sigv4.py`)
and paste the Authorization values into the Rust test if a case changes.
"""
import datetime
import hashlib
import json
from unittest import mock

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

CREDS = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
REGION = "eu-west-1"
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9)
BASE = "http://127.0.0.1:9100"
TAGGING_XML = (
    '<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>'
    "<Tag><Key>a b</Key><Value>x&amp;y</Value></Tag></TagSet></Tagging>"
)
COMPLETE_XML = (
    '<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    '<Part><PartNumber>1</PartNumber><ETag>"aa"</ETag></Part></CompleteMultipartUpload>'
)

CASES = [
    # name, method, path?query, headers, body (None: streamed, UNSIGNED-PAYLOAD)
    ("put_object_streamed", "PUT", "/dst-bucket/dir/key%20one%2B%C3%A9.txt",
     [("content-type", "text/csv"), ("x-amz-meta-colour", "blue"),
      ("x-amz-meta-godwit-original-last-modified", "2023-11-14T22:13:20.123Z"),
      ("x-godwit-replica-of", "eu-west;1700000000123"),
      ("x-amz-tagging", "a%20b=x%26y"), ("content-md5", "nhB9nTcrtoJr2B01QqQZ1g==")],
     None),
    ("put_object_tagging", "PUT", "/dst-bucket/k?tagging",
     [("x-godwit-replica-of", "eu-west;1700000000123"),
      ("content-md5", "tpmwY7hO5Ld0J3Y0G1mTEg=="), ("content-type", "application/xml")],
     TAGGING_XML),
    ("create_multipart_upload", "POST", "/dst-bucket/big.bin?uploads",
     [("content-type", "application/octet-stream"), ("x-godwit-replica-of", "eu-west;1")],
     b""),
    ("upload_part_streamed", "PUT", "/dst-bucket/big.bin?partNumber=3&uploadId=abc%2Fdef%3D",
     [("content-md5", "nhB9nTcrtoJr2B01QqQZ1g==")], None),
    ("complete_multipart_upload", "POST", "/dst-bucket/big.bin?uploadId=abc%2Fdef%3D",
     [("x-godwit-replica-of", "eu-west;1700000000123"), ("content-type", "application/xml")],
     COMPLETE_XML),
    ("list_parts_page_two", "GET", "/dst-bucket/big.bin?part-number-marker=2&uploadId=abc%2Fdef%3D",
     [], b""),
    ("abort_multipart_upload", "DELETE", "/dst-bucket/big.bin?uploadId=abc%2Fdef%3D", [], b""),
    ("delete_object", "DELETE", "/dst-bucket/dir/k",
     [("x-godwit-replica-of", "eu-west;1700000000123")], b""),
    ("head_bucket", "HEAD", "/dst-bucket", [], b""),
]


class NoPayloadSigning:
    s3 = {"payload_signing_enabled": False}


def sign(method, path, headers, body):
    data = body if body is not None else b""
    if isinstance(data, str):
        data = data.encode()
    req = AWSRequest(method=method, url=BASE + path, data=data)
    for k, v in headers:
        req.headers[k] = v
    if body is None:
        req.context["client_config"] = NoPayloadSigning()
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=NOW):
        botocore.auth.S3SigV4Auth(CREDS, "s3", REGION).add_auth(req)
    return {
        "authorization": req.headers["Authorization"],
        "x-amz-content-sha256": req.headers["X-Amz-Content-SHA256"],
        "body_sha256": hashlib.sha256(data).hexdigest(),
    }


for name, method, path, headers, body in CASES:
    print(json.dumps({"case": name, **sign(method, path, headers, body)}))
