"""The platform's shared contract: errors, pages, request ids, logging, health, tokens.

No business rules live here: only what every service must do the same way.
"""
