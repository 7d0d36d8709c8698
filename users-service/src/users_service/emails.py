"""Email addresses as the users resource stores them: validated, normalised, lower-cased."""

from __future__ import annotations

from email_validator import EmailNotValidError, validate_email


def normalize_email(raw: str) -> str:
    """The stored form of ``raw``; ValueError when it is not a valid address.

    Surrounding whitespace is ignored (copy-paste adds it). Lower-casing the whole address
    makes the plain unique index case-insensitive on every database. Deliverability (DNS)
    is not checked: sign-up must not depend on the network.
    """
    try:
        validated = validate_email(raw.strip(), check_deliverability=False)
    except EmailNotValidError:
        raise ValueError("is not a valid email address") from None
    return validated.normalized.lower()
