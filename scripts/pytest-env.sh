#!/usr/bin/env bash
# Creates (idempotently) the Python venv for the end-to-end suite in tests/py
# and prints its path. Safe to run on every CI run: a venv whose pins already
# match is left alone.
#
#   GODWIT_VENV   where the venv lives (default /var/tmp/godwit-venv)
#   PYTHON        interpreter used to create it (default python3)
set -euo pipefail

VENV="${GODWIT_VENV:-/var/tmp/godwit-venv}"
PYTHON="${PYTHON:-python3}"

# oss2 (V1/V4) and alibabacloud-oss-v2 drive the OSS dialect; faker feeds
# the seed article's upload script unchanged.
# awscli v1 vendors its own botocore and s3transfer, so its pin is
# independent of boto3's. awscrt (the botocore[crt] extra) lets botocore
# compute and verify CRC32C and CRC64NVME checksums. selenium drives
# Debian's Chromium in the dashboard test (4.51: 4.52 wants a certifi not
# yet released), and pillow checks its screenshot. pytest-xdist runs the
# suite on several workers (scripts/test.sh).
PINS=(
    "awscli==1.46.3"
    "awscrt==0.38.0"
    "alibabacloud-oss-v2==1.4.1"
    "boto3==1.44.8"
    "botocore==1.44.8"
    "faker==40.54.0"
    "moto[server]==5.2.5"
    "oss2==2.19.1"
    "pillow==13.0.0"
    "pytest==9.2.0"
    "pytest-timeout==2.4.0"
    "pytest-xdist==3.8.0"
    "requests==2.34.2"
    "selenium==4.51.0"
)

stamp="$VENV/.godwit-pins"
want="$(printf '%s\n' "${PINS[@]}")"

if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$VENV"
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV" >&2
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" >&2
"$VENV/bin/aws" --version >&2
printf '%s\n' "$want" > "$stamp"
echo "$VENV"
