"""Input schemas: trimming, normalising, null and unknown-field rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from users_service.models import Role
from users_service.schemas import UserCreate, UserUpdate


def test_a_sign_up_trims_the_name_and_normalises_the_email() -> None:
    data = UserCreate.model_validate(
        {"name": "  Ada  ", "email": " Ada.Lovelace@EXAMPLE.org ", "role": "admin"}
    )

    assert (data.name, data.email, data.role) == ("Ada", "ada.lovelace@example.org", Role.ADMIN)


def test_an_absent_email_is_told_apart_from_a_null_one_in_an_update() -> None:
    absent = UserUpdate.model_validate({"name": "Ada"})
    removed = UserUpdate.model_validate({"email": None})

    assert "email" not in absent.model_fields_set
    assert "email" in removed.model_fields_set
    assert removed.email is None


@pytest.mark.parametrize("field", ["name", "password", "role"])
def test_an_update_may_not_set_required_fields_to_null(field: str) -> None:
    with pytest.raises(ValidationError, match="must not be null"):
        UserUpdate.model_validate({field: None})


def test_wire_names_are_camel_case_and_others_are_refused() -> None:
    with pytest.raises(ValidationError, match="password_hash"):
        UserUpdate.model_validate({"password_hash": "$argon2id$..."})
