"""A mail to send: one recipient, a subject, a plain-text body and its HTML twin."""

from __future__ import annotations

from dataclasses import dataclass
from email.headerregistry import Address
from email.utils import parseaddr

MAX_SUBJECT_LENGTH = 255
MAX_ADDRESS_LENGTH = 320  # RFC 3696's errata: 64 for the local part, @, 255 for the domain


@dataclass(frozen=True, slots=True)
class Mail:
    """What a service asks to send; ``to`` is one address (``ValueError`` otherwise).

    Checked when made, so that a mail that could never go out is refused in the caller's
    request rather than failing every attempt of the sender later.
    """

    to: str
    subject: str
    text: str
    html: str

    def __post_init__(self) -> None:
        check_address(self.to)
        if _has_line_break(self.subject):
            raise ValueError("a mail's subject must be one line")
        if len(self.subject) > MAX_SUBJECT_LENGTH:
            raise ValueError(f"a mail's subject must be at most {MAX_SUBJECT_LENGTH} characters")


def check_address(address: str) -> None:
    """``ValueError`` unless ``address`` is one bare address (``someone@example.com``)."""
    if _has_line_break(address) or len(address) > MAX_ADDRESS_LENGTH:
        raise ValueError("a mail's recipient must be one address")
    name, parsed = parseaddr(address)
    if name or parsed != address or address.count("@") != 1:
        raise ValueError("a mail's recipient must be one address")
    local, domain = address.split("@")
    if not local or not domain:
        raise ValueError("a mail's recipient must be one address")


def address_domain(mailbox: str) -> str:
    """The domain of ``mailbox`` (``API platform <no-reply@example.com>``: ``example.com``);
    ``ValueError`` when it names no address with a domain."""
    _, address = parseaddr(mailbox)
    if _has_line_break(mailbox) or "@" not in address:
        raise ValueError("a mailbox must name an address with a domain")
    domain = Address(addr_spec=address).domain
    if not domain:
        raise ValueError("a mailbox must name an address with a domain")
    return domain


def _has_line_break(value: str) -> bool:
    return "\r" in value or "\n" in value
