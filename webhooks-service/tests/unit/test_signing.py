"""Standard Webhooks signatures: the specification's own example, and its reference library."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from webhooks_service.signing import PREFIX, SECRET_BYTES, new_secret, signature, signed_headers


def test_the_signature_of_the_specifications_example_is_the_one_it_gives() -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert (
        signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
        == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )


def test_a_new_secret_is_whsec_and_the_base64_of_32_random_bytes() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith(PREFIX)
    assert len(base64.b64decode(first.removeprefix(PREFIX), validate=True)) == SECRET_BYTES
    assert first != second


def test_the_reference_library_verifies_the_signed_headers() -> None:
    secret = new_secret()
    body = b'{"specversion":"1.0","id":"e-1"}'
    timestamp = int(time.time())
    headers = signed_headers([secret], "e-1", timestamp, body)
    assert Webhook(secret).verify(body, headers) == {"specversion": "1.0", "id": "e-1"}
    assert headers["webhook-id"] == "e-1"
    assert headers["webhook-timestamp"] == str(timestamp)


def test_signed_with_two_secrets_either_verifies_and_no_other_does() -> None:
    new, old = new_secret(), new_secret()
    body = b'{"specversion":"1.0","id":"e-2"}'
    headers = signed_headers([new, old], "e-2", int(time.time()), body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert Webhook(new).verify(body, headers) == Webhook(old).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)
