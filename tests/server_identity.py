"""A jupyter-server IdentityProvider with two users, each with a token of their own (the
two-user tests of tests/test_server_shared.py start a server with
``--ServerApp.identity_provider_class=tests.server_identity.TwoUsers``)."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User

#: token -> user name
TOKENS = {"alice-3b7d9a0c5e1f2468": "alice", "bob-8c2e4a6f0d1b3579": "bob"}


class TwoUsers(IdentityProvider):  # type: ignore[misc]
    """``Authorization: token <t>`` names the user by ``TOKENS``; anything else is no one."""

    def get_user(self, handler: Any) -> User | None:
        auth = handler.request.headers.get("Authorization", "")
        name = TOKENS.get(auth[len("token "):]) if auth.startswith("token ") else None
        if name is None:
            return None
        handler._token_authenticated = True  # as the stock provider marks a token request (no XSRF)
        return User(username=name)
