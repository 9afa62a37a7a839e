"""Schemathesis hooks for test/fuzz/schemathesis.test.ts (loaded through schemathesis.toml)."""

import itertools
import re

import schemathesis

# What the API accepts as an Idempotency-Key (src/api/pipeline.ts).
_VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}")
_sequence = itertools.count()


@schemathesis.hook
def before_call(context, case, kwargs):
    """Gives every valid Idempotency-Key a suffix of its own, so each request uses a fresh key.

    Schemathesis draws keys from a small space ("0", "00", ...) and so sends one key with two
    different requests; the contract answers that with 422 (docs/api.md), which the schema
    cannot say, and positive_data_acceptance would report it as a valid request rejected. A
    client reuses a key only to retry the same request; the e2e tests cover replays and
    mismatches. Negative cases are left as drawn: for them any refusal is right, and editing
    them would make schemathesis re-classify the case (a header it had left out comes back).
    """
    if case.meta is None or case.meta.generation.mode.is_negative:
        return
    headers = case.headers or {}
    for name, value in list(headers.items()):
        if name.lower() == "idempotency-key" and isinstance(value, str) and _VALID_KEY.fullmatch(value):
            suffix = f"~{next(_sequence)}"
            headers[name] = value[: 255 - len(suffix)] + suffix
