"""The context: ``wire`` builds every part from the settings, a keyword replaces one, and the
parts with a lifetime are its resources."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sanic import Sanic

from api_shared.background import Periodic
from api_shared.errors import UnauthenticatedError
from api_shared.frame import frame_of
from api_shared.mail.sender import MailSender
from api_shared.settings import ConfigurationError
from users_service.account_mail.services import ResetRequestWorker
from users_service.app import create_app
from users_service.context import wire
from users_service.passwords import Passwords
from users_service.sessions.keys import SigningKeys
from users_service.sessions.tokens import TokenIssuer
from users_service.settings import Settings
from users_service.users.admin_bootstrap import AdminBootstrap


@pytest.fixture
def settings() -> Settings:
    return Settings(
        environment="development",
        argon2_slots_override=3,
        argon2_time_cost=1,
        argon2_memory_kib=8,
        argon2_parallelism=1,
    )


@pytest.fixture
def keys() -> SigningKeys:
    return SigningKeys.of(Ed25519PrivateKey.generate())


def issue(keys: SigningKeys, settings: Settings) -> str:
    issuer = TokenIssuer(
        keys, issuer=settings.jwt_issuer, audience=settings.jwt_audience, ttl_s=900
    )
    return issuer.issue("user-1", "customer", uuid.uuid4(), datetime.now(UTC)).access_token


async def test_the_verifier_trusts_the_signing_keys_the_context_was_given(
    settings: Settings, keys: SigningKeys
) -> None:
    context = wire(settings, signing_keys=keys)
    stranger = SigningKeys.of(Ed25519PrivateKey.generate())

    principal = await context.verifier.verify(issue(keys, settings))

    assert context.signing_keys is keys
    assert principal.subject == "user-1"
    with pytest.raises(UnauthenticatedError):
        await context.verifier.verify(issue(stranger, settings))


def test_users_and_login_share_the_password_slots_the_settings_ask_for(
    settings: Settings, keys: SigningKeys
) -> None:
    context = wire(settings, signing_keys=keys)

    assert context.passwords.slots == 3
    assert context.users.passwords is context.passwords
    assert context.auth.passwords is context.passwords


def test_given_passwords_replace_the_configured_ones(settings: Settings, keys: SigningKeys) -> None:
    given = Passwords(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))

    context = wire(settings, signing_keys=keys, passwords=given)

    assert context.users.passwords is given
    assert context.auth.passwords is given


def test_the_password_threads_the_session_purge_the_events_and_the_admin_live_as_long_as_the_server(
    settings: Settings, keys: SigningKeys
) -> None:
    context = wire(settings, signing_keys=keys)

    passwords, throttle, purge, resets, sender, events, admin = context.resources
    assert isinstance(resets, ResetRequestWorker)
    assert resets.resets is context.resets
    assert resets.interval_s == settings.reset_request_interval_s
    assert isinstance(sender, MailSender)
    assert passwords is context.passwords
    assert throttle is context.throttle
    assert isinstance(admin, AdminBootstrap)  # last: once the rest has started
    assert admin.admin == settings.admin
    assert admin.users is context.users
    assert isinstance(purge, Periodic)
    assert (purge.name, purge.interval_s) == ("purge_sessions", settings.session_purge_interval_s)
    assert events is context.events
    assert events.link.url == settings.nats_server_url
    assert events.link.login.user == "users-service"  # its own NATS user, its own seed
    assert events.link.login.seed_file == settings.nats_keys_dir / "users-service.nk"
    assert events.relay.stream.name == "USERS"


def test_with_events_off_there_is_no_relay_and_no_nats_connection(
    settings: Settings, keys: SigningKeys
) -> None:
    context = wire(settings.model_copy(update={"events_enabled": False}), signing_keys=keys)

    assert context.events is None
    passwords, throttle, purge, _resets, _sender, admin = context.resources
    assert passwords is context.passwords
    assert throttle is context.throttle
    assert isinstance(purge, Periodic)
    assert isinstance(admin, AdminBootstrap)


def test_without_a_configured_admin_none_is_ensured(settings: Settings, keys: SigningKeys) -> None:
    # Whatever the environment says (make test exports a development admin).
    unset = {"admin_email": None, "admin_password": None, "admin_password_file": None}
    production = settings.model_copy(
        update={"environment": "production", "events_enabled": False, **unset}
    )

    context = wire(production, signing_keys=keys)

    assert production.admin is None
    assert not any(isinstance(part, AdminBootstrap) for part in context.resources)


def test_production_events_connect_with_the_configured_seed_and_never_without_one(
    settings: Settings, keys: SigningKeys
) -> None:
    production = settings.model_copy(update={"environment": "production"})
    seed = Path("/run/secrets/nats_users_service_seed")

    with pytest.raises(ConfigurationError, match="NATS_NKEY_SEED_FILE"):
        wire(production, signing_keys=keys)
    seeded = wire(production.model_copy(update={"nats_nkey_seed_file": seed}), signing_keys=keys)
    events_off = production.model_copy(update={"events_enabled": False})
    without_events = wire(events_off, signing_keys=keys)

    assert seeded.events is not None
    assert seeded.events.link.login.seed_file == seed
    assert without_events.events is None


async def test_stopped_passwords_hash_nothing_more(settings: Settings, keys: SigningKeys) -> None:
    passwords = wire(settings, signing_keys=keys).passwords
    await passwords.start()
    assert await passwords.verify(await passwords.hash("password-1"), "password-1")

    await passwords.stop()

    with pytest.raises(RuntimeError):
        await passwords.hash("password-2")


def test_an_app_serves_the_context_it_is_given(
    settings: Settings, keys: SigningKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Sanic, "test_mode", True)  # other tests build users-service apps too
    context = wire(settings, signing_keys=keys)

    app = create_app(settings, context=context)

    assert app.ctx.context is context
    exported = {family.name for family in frame_of(app).metrics.collect()}
    # Its resources brought their metrics: the password slots, the throttle, the relay.
    assert {"argon2_slots", "rate_limited", "outbox_relay_up"} <= exported
