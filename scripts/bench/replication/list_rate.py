"""One whole ListObjectsV2 listing of a bucket, 1,000 keys a page, each page
after the last (StartAfter, as verify and the backfill comparison ask);
prints "keys seconds". Usage: list_rate.py HOST:PORT BUCKET REGION
[versions]: with `versions`, ListObjectVersions instead (prints "versions
seconds")."""

import os
import re
import sys
import time
from urllib.parse import quote

import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ep, bucket, region = sys.argv[1:4]
versions = len(sys.argv) > 4 and sys.argv[4] == "versions"
creds = Credentials(os.environ["GODWIT_ACCESS_KEY_ID"], os.environ["GODWIT_SECRET_ACCESS_KEY"])
session = requests.Session()
key_re = re.compile(r"<Key>([^<]*)</Key>")
vid_re = re.compile(r"<NextVersionIdMarker>([^<]*)</NextVersionIdMarker>")
version_re = re.compile(r"<Version>")
after, vmarker, n, t0 = None, None, 0, time.monotonic()
while True:
    if versions:
        url = f"http://{ep}/{bucket}?versions&max-keys=1000"
        if after is not None:
            url += "&key-marker=" + quote(after, safe="") + "&version-id-marker=" + quote(vmarker or "", safe="")
    else:
        url = f"http://{ep}/{bucket}?list-type=2&max-keys=1000&prefix="
        if after is not None:
            url += "&start-after=" + quote(after, safe="")
    req = AWSRequest(method="GET", url=url)
    S3SigV4Auth(creds, "s3", region).add_auth(req)
    body = session.get(url, headers=dict(req.headers), timeout=120).text
    found = key_re.findall(body)
    n += len(version_re.findall(body)) if versions else len(found)
    if "<IsTruncated>true</IsTruncated>" not in body or not found:
        break
    if versions:
        after = re.search(r"<NextKeyMarker>([^<]*)</NextKeyMarker>", body).group(1)
        m = vid_re.search(body)
        vmarker = m.group(1) if m else None
    else:
        after = found[-1]
print(n, time.monotonic() - t0)
