"""The users API (docs/api.md#users and #routes) over real HTTP against a real database."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any


def an_email(prefix: str = "user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}@example.com"


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


# --- sign-up: POST /api/users ---------------------------------------------------------------


async def test_sign_up_returns_201_with_location_and_the_new_user(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/api/users", json={"name": "  Ada Lovelace "})

    assert response.status_code == 201
    user = response.json()["data"]
    assert set(user) == {
        "id", "name", "email", "emailVerified", "role", "isActive", "createdAt", "updatedAt"
    }  # fmt: skip
    assert user["name"] == "Ada Lovelace"
    assert user["role"] == "customer"
    assert user["email"] is None
    assert response.headers["location"] == f"/api/users/{user['id']}"
    assert user["createdAt"].endswith("Z")


async def test_sign_up_stores_the_email_normalised_and_never_returns_the_password(
    client: httpx.AsyncClient,
) -> None:
    local = f"Grace.{uuid.uuid4().hex[:8]}"
    body = {"name": "Grace", "email": f"  {local}@EXAMPLE.com ", "password": "s3cret-enough"}

    response = await client.post("/api/users", json=body)

    assert response.status_code == 201
    assert response.json()["data"]["email"] == f"{local.lower()}@example.com"
    assert "s3cret-enough" not in response.text
    assert "argon2" not in response.text


async def test_an_email_already_taken_in_any_case_is_409_email_taken(
    client: httpx.AsyncClient,
) -> None:
    email = an_email()
    first = await client.post("/api/users", json={"name": "A", "email": email})

    second = await client.post("/api/users", json={"name": "B", "email": email.upper()})

    assert first.status_code == 201
    assert second.status_code == 409
    assert error_of(second)["code"] == "EMAIL_TAKEN"


async def test_concurrent_sign_ups_with_one_email_create_one_user_and_never_fail(
    client: httpx.AsyncClient,
) -> None:
    email = an_email("race")
    body = {"name": "Racer", "email": email, "password": "password-123"}

    responses = await asyncio.gather(*(client.post("/api/users", json=body) for _ in range(6)))

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201, 409, 409, 409, 409, 409]
    assert {error_of(r)["code"] for r in responses if r.status_code == 409} == {"EMAIL_TAKEN"}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"name": "is required"}),
        ({"name": "   "}, {"name": "must be 1 to 100 characters"}),
        ({"name": "x" * 101}, {"name": "must be 1 to 100 characters"}),
        ({"name": 7}, {"name": "must be a string"}),
        ({"name": "A", "email": "not-an-email"}, {"email": "is not a valid email address"}),
        ({"name": "A", "email": "a@b"}, {"email": "is not a valid email address"}),
        (
            {"name": "A", "email": an_email(), "password": "short"},
            {"password": "must be 8 to 128 characters"},
        ),
        (
            {"name": "A", "email": an_email(), "password": "p" * 129},
            {"password": "must be 8 to 128 characters"},
        ),
        ({"name": "A", "password": "long-enough-1"}, {"password": "requires an email"}),
        ({"name": "A", "role": "owner"}, {"role": "is not one of the allowed values"}),
        ({"name": "A", "role": None}, {"role": "must not be null"}),
        ({"nickname": "x"}, {"name": "is required", "nickname": "is not allowed"}),
    ],
    ids=[
        "name-missing",
        "name-blank",
        "name-too-long",
        "name-not-string",
        "email-invalid",
        "email-no-domain-dot",
        "password-short",
        "password-long",
        "password-without-email",
        "role-unknown",
        "role-null",
        "unknown-field",
    ],
)
async def test_an_invalid_sign_up_is_400_naming_each_field(
    client: httpx.AsyncClient, body: dict[str, Any], fields: dict[str, str]
) -> None:
    response = await client.post("/api/users", json=body)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "VALIDATION_FAILED"
    assert error["fields"] == fields


async def test_a_name_of_exactly_100_characters_after_trimming_is_accepted(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/api/users", json={"name": f"  {'n' * 100}  "})

    assert response.status_code == 201
    assert response.json()["data"]["name"] == "n" * 100


async def test_bad_json_is_malformed_json(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/users", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == "MALFORMED_JSON"


async def test_a_body_that_is_not_json_is_415(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/users", content=b"name=A", headers={"content-type": "text/plain"}
    )

    assert response.status_code == 415
    assert error_of(response)["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_a_client_that_refuses_json_gets_406(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/users", json={"name": "A"}, headers={"accept": "text/html"})

    assert response.status_code == 406
    assert error_of(response)["code"] == "NOT_ACCEPTABLE"


async def test_signing_up_as_customer_explicitly_needs_no_token(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/users", json={"name": "C", "role": "customer"})

    assert response.status_code == 201
    assert response.json()["data"]["role"] == "customer"


async def test_signing_up_as_admin_without_a_token_is_403(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/users", json={"name": "Mallory", "role": "admin"})

    assert response.status_code == 403
    assert error_of(response)["code"] == "FORBIDDEN"


async def test_a_customer_cannot_create_an_admin(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    customer = await new_account()

    response = await client.post(
        "/api/users", json={"name": "Mallory", "role": "admin"}, headers=customer.headers
    )

    assert response.status_code == 403


async def test_an_admin_can_create_an_admin(client: httpx.AsyncClient, admin: Account) -> None:
    response = await client.post(
        "/api/users", json={"name": "Second Admin", "role": "admin"}, headers=admin.headers
    )

    assert response.status_code == 201
    assert response.json()["data"]["role"] == "admin"


async def test_sign_up_with_an_invalid_token_is_401_rather_than_anonymous(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/api/users", json={"name": "A"}, headers={"Authorization": "Bearer not.a.token"}
    )

    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'


# --- GET /api/users/{id} --------------------------------------------------------------------


async def test_a_user_reads_themself(client: httpx.AsyncClient, new_account: NewAccount) -> None:
    me = await new_account(name="Self Reader")

    response = await client.get(f"/api/users/{me.id}", headers=me.headers)

    assert response.status_code == 200
    user = response.json()["data"]
    assert (user["id"], user["email"], user["name"]) == (me.id, me.email, "Self Reader")


async def test_an_admin_reads_anyone(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    other = await new_account()

    response = await client.get(f"/api/users/{other.id}", headers=admin.headers)

    assert response.status_code == 200
    assert response.json()["data"]["id"] == other.id


@pytest.mark.parametrize("target", ["other", "missing", "malformed"])
async def test_a_customer_naming_another_id_is_403_whether_or_not_it_exists(
    client: httpx.AsyncClient, new_account: NewAccount, target: str
) -> None:
    me, other = await new_account(), await new_account()
    user_id = {"other": other.id, "missing": str(uuid.uuid4()), "malformed": "not-a-uuid"}[target]

    for method in ("GET", "PATCH", "DELETE"):
        body = {"name": "Hijacked"} if method == "PATCH" else None
        response = await client.request(
            method, f"/api/users/{user_id}", json=body, headers=me.headers
        )
        assert response.status_code == 403, method
        assert error_of(response)["code"] == "FORBIDDEN"


@pytest.mark.parametrize("user_id", [str(uuid.uuid4()), "not-a-uuid"])
async def test_an_admin_naming_no_user_gets_404(
    client: httpx.AsyncClient, admin: Account, user_id: str
) -> None:
    for method in ("GET", "PATCH", "DELETE"):
        body = {"name": "Nobody"} if method == "PATCH" else None
        response = await client.request(
            method, f"/api/users/{user_id}", json=body, headers=admin.headers
        )
        assert response.status_code == 404, method
        assert error_of(response)["code"] == "NOT_FOUND"


async def test_user_paths_need_a_token(client: httpx.AsyncClient, new_account: NewAccount) -> None:
    someone = await new_account()

    for method in ("GET", "PATCH", "DELETE"):
        response = await client.request(method, f"/api/users/{someone.id}", json=None)
        assert response.status_code == 401, method
        assert error_of(response)["code"] == "UNAUTHENTICATED"
        assert response.headers["www-authenticate"] == "Bearer"


async def test_an_unsupported_method_is_405_with_allow(
    client: httpx.AsyncClient, admin: Account
) -> None:
    response = await client.put(f"/api/users/{admin.id}", json={"name": "x"})

    assert response.status_code == 405
    assert error_of(response)["code"] == "METHOD_NOT_ALLOWED"
    allowed = set(response.headers["allow"].split(", "))
    assert {"GET", "PATCH", "DELETE"} <= allowed
    assert not {"PUT", "POST"} & allowed


# --- PATCH /api/users/{id} ------------------------------------------------------------------


async def test_a_user_renames_themself_and_the_change_is_stored(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account(name="Before")
    before = (await client.get(f"/api/users/{me.id}", headers=me.headers)).json()["data"]

    response = await client.patch(
        f"/api/users/{me.id}",
        content=b'{"name": " After "}',
        headers={**me.headers, "content-type": "application/merge-patch+json"},
    )

    assert response.status_code == 200
    after = response.json()["data"]
    assert after["name"] == "After"
    assert after["updatedAt"] >= before["updatedAt"]
    assert after["createdAt"] == before["createdAt"]
    assert (await client.get(f"/api/users/{me.id}", headers=me.headers)).json()["data"] == after


async def test_an_empty_patch_changes_nothing(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    before = (await client.get(f"/api/users/{me.id}", headers=me.headers)).json()

    response = await client.patch(f"/api/users/{me.id}", json={}, headers=me.headers)

    assert response.status_code == 200
    assert response.json() == before


async def test_a_customer_cannot_change_their_role(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    promoted = await client.patch(f"/api/users/{me.id}", json={"role": "admin"}, headers=me.headers)
    unchanged = await client.patch(
        f"/api/users/{me.id}", json={"role": "customer"}, headers=me.headers
    )

    assert promoted.status_code == 403
    assert unchanged.status_code == 200
    me_now = (await client.get(f"/api/users/{me.id}", headers=me.headers)).json()["data"]
    assert me_now["role"] == "customer"


async def test_an_admin_promotes_a_customer_whose_next_token_carries_the_role(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    customer = await new_account()

    response = await client.patch(
        f"/api/users/{customer.id}", json={"role": "admin"}, headers=admin.headers
    )
    login = await client.post(
        "/api/auth/token", json={"email": customer.email, "password": customer.password}
    )
    token = login.json()["data"]["accessToken"]

    assert response.status_code == 200
    assert response.json()["data"]["role"] == "admin"
    listing = await client.get("/api/users", headers={"Authorization": f"Bearer {token}"})
    assert listing.status_code == 200


async def test_changing_the_password_replaces_the_old_one(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.patch(
        f"/api/users/{me.id}",
        json={"password": "a-brand-new-one", "currentPassword": me.password},
        headers=me.headers,
    )
    old = await client.post("/api/auth/token", json={"email": me.email, "password": me.password})
    new = await client.post(
        "/api/auth/token", json={"email": me.email, "password": "a-brand-new-one"}
    )

    assert response.status_code == 200
    assert "a-brand-new-one" not in response.text
    assert (old.status_code, new.status_code) == (401, 200)


async def test_changing_the_email_moves_the_login_to_the_new_address(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    new_email = an_email("moved")

    response = await client.patch(
        f"/api/users/{me.id}",
        json={"email": new_email.upper(), "currentPassword": me.password},
        headers=me.headers,
    )
    login = await client.post("/api/auth/token", json={"email": new_email, "password": me.password})

    assert response.status_code == 200
    assert response.json()["data"]["email"] == new_email
    assert login.status_code == 200


async def test_taking_another_users_email_is_409(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me, other = await new_account(), await new_account()

    response = await client.patch(
        f"/api/users/{me.id}",
        json={"email": other.email, "currentPassword": me.password},
        headers=me.headers,
    )

    assert response.status_code == 409
    assert error_of(response)["code"] == "EMAIL_TAKEN"


async def test_removing_the_email_of_a_user_with_a_password_is_refused(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.patch(f"/api/users/{me.id}", json={"email": None}, headers=me.headers)

    assert response.status_code == 400
    assert error_of(response)["fields"] == {"email": "is required while the user has a password"}


async def test_an_admin_removes_the_email_of_a_user_without_a_password(
    client: httpx.AsyncClient, admin: Account
) -> None:
    created = await client.post("/api/users", json={"name": "Mailed", "email": an_email()})
    user_id = created.json()["data"]["id"]

    response = await client.patch(
        f"/api/users/{user_id}", json={"email": None}, headers=admin.headers
    )

    assert response.status_code == 200
    assert response.json()["data"]["email"] is None


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"name": None}, {"name": "must not be null"}),
        ({"name": ""}, {"name": "must be 1 to 100 characters"}),
        ({"password": None}, {"password": "must not be null"}),
        ({"password": "short"}, {"password": "must be 8 to 128 characters"}),
        ({"email": "nope"}, {"email": "is not a valid email address"}),
        ({"role": "root"}, {"role": "is not one of the allowed values"}),
        ({"id": str(uuid.uuid4())}, {"id": "is not allowed"}),
        ({"createdAt": "2020-01-01T00:00:00Z"}, {"createdAt": "is not allowed"}),
    ],
    ids=[
        "name-null",
        "name-empty",
        "password-null",
        "password-short",
        "email",
        "role",
        "id",
        "createdAt",
    ],
)
async def test_an_invalid_patch_is_400_naming_the_field(
    client: httpx.AsyncClient, new_account: NewAccount, body: dict[str, Any], fields: dict[str, str]
) -> None:
    me = await new_account()

    response = await client.patch(f"/api/users/{me.id}", json=body, headers=me.headers)

    assert response.status_code == 400
    assert error_of(response)["code"] == "VALIDATION_FAILED"
    assert error_of(response)["fields"] == fields


# --- DELETE /api/users/{id} -----------------------------------------------------------------


async def test_a_user_deletes_themself_and_is_then_gone(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await delete_self(client, me)
    again = await client.delete(f"/api/users/{me.id}", headers=admin.headers)
    read = await client.get(f"/api/users/{me.id}", headers=admin.headers)
    login = await client.post("/api/auth/token", json={"email": me.email, "password": me.password})

    assert response.status_code == 204
    assert response.content == b""
    assert (again.status_code, read.status_code, login.status_code) == (404, 404, 401)


async def delete_self(client: httpx.AsyncClient, me: Account) -> httpx.Response:
    body = {"currentPassword": me.password}
    return await client.request("DELETE", f"/api/users/{me.id}", json=body, headers=me.headers)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (None, 400, "VALIDATION_FAILED"),
        ({}, 400, "VALIDATION_FAILED"),
        ({"currentPassword": "a wrong guess"}, 401, "INVALID_CREDENTIALS"),
        ({"currentPassword": None}, 400, "VALIDATION_FAILED"),
        ({"currentPassword": "x", "extra": 1}, 400, "VALIDATION_FAILED"),
    ],
)
async def test_a_stolen_token_alone_cannot_delete_its_account(
    client: httpx.AsyncClient,
    new_account: NewAccount,
    admin: Account,
    body: dict[str, object] | None,
    status: int,
    code: str,
) -> None:
    me = await new_account()

    response = await client.request("DELETE", f"/api/users/{me.id}", json=body, headers=me.headers)

    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    if status == 401:  # a wrong password is no token error: the plain challenge
        assert response.headers["www-authenticate"] == "Bearer"
    still = await client.get(f"/api/users/{me.id}", headers=admin.headers)
    assert still.status_code == 200


async def test_an_admin_deletes_a_user(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    other = await new_account()

    response = await client.delete(f"/api/users/{other.id}", headers=admin.headers)

    assert response.status_code == 204
    assert (await client.get(f"/api/users/{other.id}", headers=admin.headers)).status_code == 404


async def test_a_deleted_users_email_can_be_used_again(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    await delete_self(client, me)

    response = await client.post("/api/users", json={"name": "Again", "email": me.email})

    assert response.status_code == 201


# --- the rest of the contract -----------------------------------------------------------------


async def test_every_response_carries_a_request_id(client: httpx.AsyncClient) -> None:
    echoed = await client.get("/health", headers={"X-Request-ID": "abc-123"})
    made = await client.get("/nowhere")

    assert echoed.headers["x-request-id"] == "abc-123"
    assert made.status_code == 404
    assert len(made.headers["x-request-id"]) == 32
