"""Captures botocore-signed S3 requests without sending them (before-send
short-circuit) and prints them as JSON fixtures."""
import base64, json, time
import boto3
from botocore.config import Config
from botocore.awsrequest import AWSResponse

AK, SK = "GWTESTAK", "gw/test+secret"
captured = []

class Raw:
    def stream(self, **kw):
        yield b""

def make_client(endpoint, **cfg):
    c = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id=AK, aws_secret_access_key=SK, config=Config(**cfg))
    def before_send(request, **kw):
        body = request.body
        if body is None:
            data = b""
        elif isinstance(body, (bytes, bytearray)):
            data = bytes(body)
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = body.read()
        captured.append({"method": request.method, "url": request.url,
                         "headers": [[k, v if isinstance(v, str) else v.decode()] for k, v in request.headers.items()],
                         "body_b64": base64.b64encode(data).decode(), "now": int(time.time())})
        return AWSResponse(request.url, 200, {"ETag": '"x"'}, Raw())
    c.meta.events.register("before-send.s3.*", before_send)
    return c

out = {}
v4 = make_client("http://127.0.0.1:9000")
v4.put_object(Bucket="bkt", Key="dir/a b+c(1)!.txt", Body=b"hi\n", ContentType="text/plain",
              Metadata={"note": "two  spaces"})
out["v4_put_http"] = captured.pop()
v4.list_objects_v2(Bucket="bkt", Prefix="dir/", Delimiter="/")
out["v4_list"] = captured.pop()
v4s = make_client("https://127.0.0.1:9000")
v4s.put_object(Bucket="bkt", Key="k", Body=b"hello world" * 1000)
out["v4_put_https_trailer"] = captured.pop()
v4.upload_part(Bucket="bkt", Key="big", UploadId="u/1=", PartNumber=2, Body=b"part")
out["v4_upload_part"] = captured.pop()

v2 = make_client("http://127.0.0.1:9000", signature_version="s3")
v2.put_object(Bucket="bkt", Key="dir/a b.txt", Body=b"hi\n", ContentType="text/plain", Metadata={"x": "1"})
out["v2_put_header"] = captured.pop()
v2.get_object_acl(Bucket="bkt", Key="dir/a b.txt", VersionId="v1")
out["v2_get_acl_header"] = captured.pop()

now = int(time.time())
presign = make_client("http://127.0.0.1:9000")
out["v2_presigned_get"] = {"method": "GET", "now": now, "headers": [],
    "url": presign.generate_presigned_url("get_object", Params={"Bucket": "bkt", "Key": "dir/a b+c.txt",
        "ResponseContentType": "text/x"}, ExpiresIn=3600)}
out["v2_presigned_put"] = {"method": "PUT", "now": now, "headers": [],
    "url": presign.generate_presigned_url("put_object", Params={"Bucket": "bkt", "Key": "up.bin"}, ExpiresIn=600)}
s3v4 = make_client("http://127.0.0.1:9000", signature_version="s3v4")
out["v4_presigned_get"] = {"method": "GET", "now": now, "headers": [],
    "url": s3v4.generate_presigned_url("get_object", Params={"Bucket": "bkt", "Key": "dir/a b+c.txt",
        "VersionId": "3"}, ExpiresIn=900)}
print(json.dumps({"access_key": AK, "secret": SK, "botocore": __import__("botocore").__version__, "requests": out}, indent=1))
