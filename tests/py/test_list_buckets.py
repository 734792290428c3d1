"""ListBuckets paging as AWS added it in 2024: `max-buckets`,
`continuation-token`, `prefix` (echoed) and `bucket-region`, through
boto3's parameters and its paginator, and the errors AWS answers."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from s3util import REGION, error_code, signed_request, unique_bucket_name


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def five_buckets(s3, cleanup_s3):
    """Five buckets sharing a prefix no other test uses, in name order."""
    prefix = unique_bucket_name("lb")
    names = [f"{prefix}-{i}" for i in range(5)]
    for name in names:
        s3.create_bucket(Bucket=name)
    yield prefix, names
    for name in names:
        cleanup_s3.delete_bucket(Bucket=name)


def names_of(page) -> list[str]:
    return [b["Name"] for b in page.get("Buckets", [])]


def test_max_buckets_and_continuation_token_page_through_a_prefix(s3, five_buckets):
    prefix, names = five_buckets
    first = s3.list_buckets(MaxBuckets=2, Prefix=prefix)
    assert names_of(first) == names[:2]
    assert first["Prefix"] == prefix
    assert all(b["BucketRegion"] == REGION for b in first["Buckets"])
    assert first["Owner"]["ID"]
    second = s3.list_buckets(MaxBuckets=2, Prefix=prefix, ContinuationToken=first["ContinuationToken"])
    assert names_of(second) == names[2:4]
    assert second["ContinuationToken"] != first["ContinuationToken"]
    last = s3.list_buckets(MaxBuckets=2, Prefix=prefix, ContinuationToken=second["ContinuationToken"])
    assert names_of(last) == names[4:]
    assert "ContinuationToken" not in last
    # A page that ends exactly at the last bucket has no token either.
    exact = s3.list_buckets(MaxBuckets=5, Prefix=prefix)
    assert names_of(exact) == names and "ContinuationToken" not in exact


def test_paginator_walks_every_page(s3, five_buckets):
    prefix, names = five_buckets
    pages = list(s3.get_paginator("list_buckets").paginate(Prefix=prefix, PaginationConfig={"PageSize": 2}))
    assert [names_of(p) for p in pages] == [names[:2], names[2:4], names[4:]]
    assert [n for p in pages for n in names_of(p)] == names


def test_bucket_region_filters_and_unpaged_listing_is_unchanged(s3, five_buckets):
    prefix, names = five_buckets
    here = s3.list_buckets(Prefix=prefix, BucketRegion=REGION)
    assert names_of(here) == names and "ContinuationToken" not in here
    assert names_of(s3.list_buckets(Prefix=prefix, BucketRegion="eu-north-9")) == []
    assert names_of(s3.list_buckets(Prefix=prefix + "-3")) == [names[3]]
    # Without paging parameters: every bucket, no token, no Prefix.
    everything = s3.list_buckets()
    assert set(names) <= set(names_of(everything))
    assert "ContinuationToken" not in everything and "Prefix" not in everything


@pytest.mark.parametrize("max_buckets", ["0", "10001", "-1", "many"])
def test_max_buckets_outside_1_to_10000_is_invalid_argument(server, max_buckets):
    # botocore refuses some of these itself, so they go out signed by hand.
    r = signed_request("GET", f"{server.endpoint}/?max-buckets={max_buckets}")
    assert (r.status_code, error_code(r)) == (400, "InvalidArgument"), r.text


def test_max_buckets_at_the_limits_is_accepted(server, s3, five_buckets):
    prefix, names = five_buckets
    assert names_of(s3.list_buckets(MaxBuckets=10000, Prefix=prefix)) == names
    assert names_of(s3.list_buckets(MaxBuckets=1, Prefix=prefix)) == names[:1]


def test_a_continuation_token_not_from_the_server_is_invalid_argument(s3):
    with pytest.raises(ClientError) as e:
        s3.list_buckets(ContinuationToken="not a token!")
    assert client_error(e) == ("InvalidArgument", 400)
