"""Listing: v2 and v1, delimiters, pagination, StartAfter, URL encoding and
owners, over a tree of 2,500 keys."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote_plus

import pytest

from s3util import delete_bucket, unique_bucket_name

N_KEYS = 2500


def tree_key(i: int) -> str:
    return f"d{i % 10}/k{i:04}"


ALL_KEYS = sorted(tree_key(i) for i in range(N_KEYS))


@pytest.fixture(scope="module")
def tree(s3, cleanup_s3):
    """A bucket holding the 2,500-key tree; each body is its key."""
    name = unique_bucket_name("listing-tree")
    s3.create_bucket(Bucket=name)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket=name, Key=k, Body=k.encode()), ALL_KEYS))
    yield name
    delete_bucket(cleanup_s3, name)


def test_delimiter_gives_the_ten_common_prefixes(s3, tree):
    res = s3.list_objects_v2(Bucket=tree, Delimiter="/")
    assert [p["Prefix"] for p in res["CommonPrefixes"]] == [f"d{i}/" for i in range(10)]
    assert "Contents" not in res
    assert res["KeyCount"] == 10
    assert res["IsTruncated"] is False


def test_prefix_with_delimiter_lists_one_directory(s3, tree):
    res = s3.list_objects_v2(Bucket=tree, Prefix="d3/", Delimiter="/")
    keys = [o["Key"] for o in res["Contents"]]
    assert keys == [k for k in ALL_KEYS if k.startswith("d3/")]
    assert len(keys) == 250
    assert "CommonPrefixes" not in res
    assert all(o["Size"] == len(o["Key"]) for o in res["Contents"])


def test_paginator_over_all_keys_gives_three_sorted_pages(s3, tree):
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=tree, PaginationConfig={"PageSize": 1000}))
    assert [len(p["Contents"]) for p in pages] == [1000, 1000, 500]
    assert [p["KeyCount"] for p in pages] == [1000, 1000, 500]
    assert [p["IsTruncated"] for p in pages] == [True, True, False]
    assert all("NextContinuationToken" in p for p in pages[:2])
    keys = [o["Key"] for p in pages for o in p["Contents"]]
    assert keys == ALL_KEYS


def test_max_keys_caps_page_and_truncates(s3, tree):
    res = s3.list_objects_v2(Bucket=tree, MaxKeys=7)
    assert [o["Key"] for o in res["Contents"]] == ALL_KEYS[:7]
    assert res["IsTruncated"] is True and res["MaxKeys"] == 7
    nxt = s3.list_objects_v2(Bucket=tree, MaxKeys=7, ContinuationToken=res["NextContinuationToken"])
    assert [o["Key"] for o in nxt["Contents"]] == ALL_KEYS[7:14]


def test_delimiter_pagination_never_repeats_a_common_prefix(s3, tree):
    pages = list(
        s3.get_paginator("list_objects_v2").paginate(Bucket=tree, Delimiter="/", PaginationConfig={"PageSize": 3})
    )
    prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
    assert prefixes == [f"d{i}/" for i in range(10)]
    assert len(pages) == 4


def test_start_after_skips_to_the_next_key(s3, tree):
    idx = ALL_KEYS.index("d5/k2495")
    res = s3.list_objects_v2(Bucket=tree, StartAfter="d5/k2495", MaxKeys=1000)
    assert [o["Key"] for o in res["Contents"]] == ALL_KEYS[idx + 1 : idx + 1001]
    assert res["StartAfter"] == "d5/k2495"
    # A StartAfter that is not a key starts at the next key after it.
    res = s3.list_objects_v2(Bucket=tree, StartAfter="d9/k2000a")
    assert [o["Key"] for o in res["Contents"]] == [k for k in ALL_KEYS if k > "d9/k2000a"]
    # Past the end: empty.
    res = s3.list_objects_v2(Bucket=tree, StartAfter="e")
    assert res["KeyCount"] == 0 and "Contents" not in res


def test_list_objects_v1_marker_pagination(s3, tree):
    keys = []
    marker = ""
    pages = 0
    while True:
        res = s3.list_objects(Bucket=tree, Marker=marker, MaxKeys=1000)
        pages += 1
        page_keys = [o["Key"] for o in res["Contents"]]
        keys += page_keys
        if not res["IsTruncated"]:
            break
        marker = page_keys[-1]
        assert pages < 10
    assert pages == 3
    assert keys == ALL_KEYS
    # v1 lists owners by default.
    assert all(o["Owner"]["ID"] for o in res["Contents"])


def test_list_objects_v1_next_marker_with_delimiter(s3, tree):
    res = s3.list_objects(Bucket=tree, Delimiter="/", MaxKeys=3)
    assert [p["Prefix"] for p in res["CommonPrefixes"]] == ["d0/", "d1/", "d2/"]
    assert res["IsTruncated"] is True
    assert res["NextMarker"] == "d2/"
    pages = list(s3.get_paginator("list_objects").paginate(Bucket=tree, Delimiter="/", PaginationConfig={"PageSize": 3}))
    prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
    assert prefixes == [f"d{i}/" for i in range(10)]


def test_list_on_empty_prefix_is_empty(s3, tree):
    res = s3.list_objects_v2(Bucket=tree, Prefix="nope/")
    assert res["KeyCount"] == 0 and "Contents" not in res and res["IsTruncated"] is False


# ---------------------------------------------------------------- encoding

ODD_KEYS = [
    "sp ace/a b.txt",
    "uni/ünïcødé-日本.txt",
    "plus/a+b=c&d.txt",
    "pct/100%.txt",
    "q/what?x=1#frag",
    "tilde~/x",
]


@pytest.fixture
def odd(s3, bucket):
    for k in ODD_KEYS:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


def test_odd_keys_round_trip_through_boto3_decoding(s3, odd):
    res = s3.list_objects_v2(Bucket=odd)  # boto3 asks for url encoding and decodes
    assert [o["Key"] for o in res["Contents"]] == sorted(ODD_KEYS)
    for k in ODD_KEYS:
        assert s3.get_object(Bucket=odd, Key=k)["Body"].read() == k.encode()
    v1 = s3.list_objects(Bucket=odd)
    assert [o["Key"] for o in v1["Contents"]] == sorted(ODD_KEYS)
    prefixes = s3.list_objects_v2(Bucket=odd, Delimiter="/")["CommonPrefixes"]
    assert [p["Prefix"] for p in prefixes] == sorted({k.split("/")[0] + "/" for k in ODD_KEYS})


def test_encoding_type_url_encodes_keys_in_the_xml(s3, odd):
    # Asking explicitly makes botocore hand back the raw, encoded values.
    res = s3.list_objects_v2(Bucket=odd, EncodingType="url")
    assert res["EncodingType"] == "url"
    raw = [o["Key"] for o in res["Contents"]]
    for r in raw:
        assert all(0x21 <= ord(c) < 0x7F for c in r), f"not URL-encoded: {r!r}"
    decoded = [unquote_plus(r) for r in raw]
    assert decoded == sorted(ODD_KEYS)
    plus = [r for r, d in zip(raw, decoded) if d == "plus/a+b=c&d.txt"][0]
    assert "%2B" in plus.upper(), f"'+' must be encoded, got {plus!r}"

    res = s3.list_objects_v2(Bucket=odd, EncodingType="url", Delimiter="/", Prefix="sp ace/")
    assert res["Prefix"] in ("sp+ace/", "sp%20ace/")
    assert [unquote_plus(o["Key"]) for o in res["Contents"]] == ["sp ace/a b.txt"]


def test_fetch_owner(s3, odd):
    owner_id = s3.list_buckets()["Owner"]["ID"]
    assert owner_id
    plain = s3.list_objects_v2(Bucket=odd)
    assert all("Owner" not in o for o in plain["Contents"])
    with_owner = s3.list_objects_v2(Bucket=odd, FetchOwner=True)
    assert all(o["Owner"]["ID"] == owner_id for o in with_owner["Contents"])


def test_v1_listing_prefix_with_a_newline_comes_back_unchanged(s3, bucket):
    # boto3 asks for encoding-type=url and decodes a v1 listing's keys,
    # common prefixes, Delimiter, Marker and NextMarker, but not its
    # Prefix: S3 leaves that one unencoded in v1 (v2 encodes it, and
    # boto3 decodes it there).
    prefix = "line\nbreak +%/"
    keys = [f"{prefix}a b", f"{prefix}c\nd", f"{prefix}sub/e"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    v1 = s3.list_objects(Bucket=bucket, Prefix=prefix, Delimiter="/", MaxKeys=1)
    assert v1["Prefix"] == prefix
    assert v1["Delimiter"] == "/"
    assert [o["Key"] for o in v1["Contents"]] == [keys[0]]
    assert v1["IsTruncated"] is True
    assert v1["NextMarker"] == keys[0]
    rest = s3.list_objects(Bucket=bucket, Prefix=prefix, Delimiter="/", Marker=v1["NextMarker"])
    assert rest["Prefix"] == prefix
    assert rest["Marker"] == keys[0]
    assert [o["Key"] for o in rest["Contents"]] == [keys[1]]
    assert [p["Prefix"] for p in rest["CommonPrefixes"]] == [f"{prefix}sub/"]
    # The paginator walks it the same way.
    pages = s3.get_paginator("list_objects").paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 1})
    assert [o["Key"] for page in pages for o in page.get("Contents", [])] == sorted(keys)
    # v2 and ListObjectVersions encode their Prefix, and boto3 decodes it.
    assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Prefix"] == prefix
    assert s3.list_object_versions(Bucket=bucket, Prefix=prefix)["Prefix"] == prefix
    # Asked for explicitly, the raw v1 document shows the Prefix as is and
    # the keys encoded.
    raw = s3.list_objects(Bucket=bucket, Prefix=prefix, EncodingType="url")
    assert raw["Prefix"] == prefix
    assert all("\n" not in o["Key"] and " " not in o["Key"] for o in raw["Contents"])
    assert sorted(unquote_plus(o["Key"]) for o in raw["Contents"]) == sorted(keys)
