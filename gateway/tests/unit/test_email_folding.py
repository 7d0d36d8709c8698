"""The login-account key's email folding refuses an oversized email before any work.

A unit test of the function at fault (cheaper than timing a request): its CPU time is
measured on this thread, so other processes on the machine cannot make it flaky.
"""

from __future__ import annotations

import time

import pytest

from api_shared.errors import ValidationFailedError
from gateway.dispatch import MAX_EMAIL_LENGTH, canonical_email

CRAFTED = "ada@" + ".".join(["xn--" + "a" * 59] * 16_500)  # about 1 MiB of punycode labels


def test_a_megabyte_of_punycode_domain_costs_under_five_milliseconds_of_cpu() -> None:
    assert len(CRAFTED) > 1024 * 1024
    started = time.thread_time()
    with pytest.raises(ValidationFailedError) as refused:
        canonical_email(CRAFTED)
    spent = time.thread_time() - started

    assert spent < 0.005
    assert refused.value.fields == {"email": "must be at most 320 characters"}


def test_an_email_at_the_limit_is_still_folded() -> None:
    local = "A" * 64
    email = f"{local}@{'b' * (MAX_EMAIL_LENGTH - 65)}"

    assert canonical_email(email) == email.lower()
    with pytest.raises(ValidationFailedError):
        canonical_email(email + "c")
