"""ETags and If-Match: stale writes are refused, concurrent writes never lose an update."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from api_testkit.callers import Caller

NewOrder = Callable[..., Awaitable[httpx.Response]]


async def test_a_stale_if_match_is_412_for_put_patch_and_delete_and_nothing_changes(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str]
) -> None:
    created = await new_order(customer)
    url, stale = created.headers["location"], created.headers["etag"]
    await client.patch(url, json={"note": "v2"}, headers=customer.headers)
    current = await client.get(url, headers=customer.headers)
    if_stale = {**customer.headers, "If-Match": stale}
    items = [{"bookId": books[1], "quantity": 1}]

    responses = [
        await client.put(url, json={"items": items}, headers=if_stale),
        await client.patch(url, json={"note": "lost"}, headers=if_stale),
        await client.delete(url, headers=if_stale),
    ]

    for response in responses:
        assert response.status_code == 412
        assert response.json()["error"]["code"] == "PRECONDITION_FAILED"
    after = await client.get(url, headers=customer.headers)
    assert after.json() == current.json()
    assert after.headers["etag"] == current.headers["etag"]


async def test_a_matching_if_match_star_or_list_lets_the_write_through(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    created = await new_order(customer)
    url, tag = created.headers["location"], created.headers["etag"]

    listed = await client.patch(
        url, json={"note": "a"}, headers={**customer.headers, "If-Match": f'"x", {tag}'}
    )
    star = await client.patch(
        url, json={"note": "b"}, headers={**customer.headers, "If-Match": "*"}
    )
    deleted = await client.delete(
        url, headers={**customer.headers, "If-Match": star.headers["etag"]}
    )

    assert listed.status_code == 200
    assert star.status_code == 200
    assert deleted.status_code == 204


async def test_a_weak_tag_never_matches_if_match(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    created = await new_order(customer)

    response = await client.patch(
        created.headers["location"],
        json={"note": "weak"},
        headers={**customer.headers, "If-Match": f"W/{created.headers['etag']}"},
    )

    assert response.status_code == 412


@pytest.mark.parametrize("if_match", ["", "not-a-tag", ", ,"])
async def test_an_empty_or_malformed_if_match_is_400_for_put_patch_and_delete_and_nothing_changes(
    client: httpx.AsyncClient,
    customer: Caller,
    new_order: NewOrder,
    if_match: str,
    books: list[str],
) -> None:
    created = await new_order(customer)
    url = created.headers["location"]
    malformed = {**customer.headers, "If-Match": if_match}

    responses = [
        await client.put(
            url, json={"items": [{"bookId": books[1], "quantity": 1}]}, headers=malformed
        ),
        await client.patch(url, json={"note": "changed"}, headers=malformed),
        await client.delete(url, headers=malformed),
    ]

    for response in responses:
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_FAILED"
        assert error["fields"] == {"If-Match": "must be * or a comma-separated list of entity tags"}
    after = await client.get(url, headers=customer.headers)
    assert after.json() == created.json()
    assert after.headers["etag"] == created.headers["etag"]


async def test_of_concurrent_patches_with_one_if_match_exactly_one_wins(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    created = await new_order(customer)
    headers = {**customer.headers, "If-Match": created.headers["etag"]}

    responses = await asyncio.gather(
        *(
            client.patch(created.headers["location"], json={"note": f"n{i}"}, headers=headers)
            for i in range(10)
        )
    )

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [412] * 9
    winner = next(response for response in responses if response.status_code == 200)
    after = await client.get(created.headers["location"], headers=customer.headers)
    assert after.json() == winner.json()
    assert after.headers["etag"].endswith('-2"')


async def test_concurrent_patches_without_if_match_apply_one_after_another_losing_nothing(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str]
) -> None:
    created = await new_order(customer)
    url = created.headers["location"]
    patches: list[dict[str, Any]] = [{"note": f"note {i}"} for i in range(10)] + [
        {"items": [{"bookId": books[1], "quantity": i}]} for i in range(1, 11)
    ]

    responses = await asyncio.gather(
        *(client.patch(url, json=patch, headers=customer.headers) for patch in patches)
    )

    assert all(response.status_code == 200 for response in responses)
    # Every patch got its own version, 2..21: none was applied to a stale copy.
    by_version = {
        int(response.headers["etag"].rsplit("-", 1)[1].rstrip('"')): (patch, response.json())
        for patch, response in zip(patches, responses, strict=True)
    }
    assert sorted(by_version) == list(range(2, 22))
    # Replaying the patches in version order reproduces every response: no lost update.
    state = {"items": created.json()["data"]["items"], "note": created.json()["data"]["note"]}
    for version in sorted(by_version):
        patch, body = by_version[version]
        state = {**state, **patch}
        assert {"items": body["data"]["items"], "note": body["data"]["note"]} == state
    final = await client.get(url, headers=customer.headers)
    assert {"items": final.json()["data"]["items"], "note": final.json()["data"]["note"]} == state
    assert final.headers["etag"].endswith('-21"')
