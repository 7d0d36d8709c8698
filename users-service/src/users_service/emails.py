"""Email addresses as the users resource stores them: validated, normalised, lower-cased."""

from __future__ import annotations

from email_validator import SPECIAL_USE_DOMAIN_NAMES, EmailNotValidError, validate_email

# RFC 5321 §4.5.3.1: 64 octets of local part, 254 of address (a 256-octet path less its
# angle brackets); 320 (64 + "@" + 255) is the most any text field could claim to need.
EMAIL_MAX_LENGTH = 254
LOCAL_PART_MAX_LENGTH = 64
RAW_EMAIL_MAX_LENGTH = 320


def _any_case(name: str) -> str:
    return "".join(f"[{letter}{letter.upper()}]" if letter.isalpha() else letter for letter in name)


# What ``normalize_email`` refuses beyond the email format, for the API documentation: a
# domain under a special-use name (RFC 6761: .test, .invalid, .localhost...) receives no mail.
NOT_SPECIAL_USE_PATTERN = (
    rf"^(?!.*\.(?:{'|'.join(_any_case(name) for name in SPECIAL_USE_DOMAIN_NAMES)})$)"
)


def check_email_length(raw: str) -> str:
    """``raw`` without surrounding whitespace, or ValueError when it is too long to be an address.

    Runs before any parsing: the first test is ``len()`` (constant time), so a megabyte of
    "email" costs nothing, where email-validator would scan it on the event loop.
    """
    if len(raw) > RAW_EMAIL_MAX_LENGTH:
        raise ValueError(f"must be at most {EMAIL_MAX_LENGTH} characters")
    value = raw.strip()  # copy-paste adds whitespace
    if len(value) > EMAIL_MAX_LENGTH:
        raise ValueError(f"must be at most {EMAIL_MAX_LENGTH} characters")
    local, at, _ = value.rpartition("@")
    if at and len(local) > LOCAL_PART_MAX_LENGTH:
        raise ValueError(f"must have at most {LOCAL_PART_MAX_LENGTH} characters before the @")
    return value


def normalize_email(raw: str) -> str:
    """The stored form of ``raw``; ValueError when it is not a valid address.

    Surrounding whitespace is ignored (copy-paste adds it). Lower-casing the whole address
    makes the plain unique index case-insensitive on every database. Deliverability (DNS)
    is not checked: sign-up must not depend on the network.
    """
    value = check_email_length(raw)
    try:
        validated = validate_email(value, check_deliverability=False)
    except EmailNotValidError:
        raise ValueError("is not a valid email address") from None
    return validated.normalized.lower()
