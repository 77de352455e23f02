"""Who is asking: the named tokens (db.store.writers.tokens) and the sign-in sessions made from them (db.store.writers.sessions),
as the API's guard, its sign-in link and the Sign in page use them."""

from __future__ import annotations

from pathlib import Path

from db.store.writers import sessions, tokens

COOKIE = sessions.COOKIE  # the session cookie's name
SESSION_HOURS = sessions.SESSION_HOURS  # a session's life, and its cookie's
Identity = tokens.Identity  # a name and its role ("read", "upload", "admin")
SessionsOff = sessions.SessionsOff  # the StoreError (401) of a refused session secret: no cookie identifies anyone


def identify(token: str | None) -> Identity | None:
    """The configured token's identity (None: no such token)."""
    return tokens.identify(token)


def identity(bearer: str | None, session: str | None) -> Identity | None:
    """Who a request is: its bearer token's identity, else its session cookie's (SessionsOff: the secret is
    refused)."""
    return sessions.identity(bearer, session)


def configured() -> dict[str, list[tuple[str, str]]]:
    """The configured tokens by role ("read", "upload", "admin"), as (name, token)."""
    return tokens.configured()


def reads_need_token() -> bool:
    """True when read tokens are configured: then every read needs a token or a session."""
    return tokens.reads_need_token()


def local_token_refusal() -> str | None:
    """Why the generated local token cannot be used (its file is not the server's own private one), else None."""
    return tokens.local_token_refusal()


def local_token() -> str | None:
    """The generated local writer token, made on first use and kept beside the store (None: refused)."""
    return tokens.local_token()


def local_token_path() -> Path | None:
    """Where the generated token is kept (None: in memory only)."""
    return tokens.local_token_path()


def beside_store(name: str) -> Path | None:
    """A file of the server's own beside the store (None: nowhere to keep one)."""
    return tokens.beside_store(name)


def secret_refusal() -> str | None:
    """Why sign-in sessions are off (the session secret's file is refused), else None."""
    return sessions.secret_refusal()


def issue(token: str) -> str | None:
    """A new session for a configured token (None: no such token, or sessions are off)."""
    return sessions.issue(token)


def ticket(token: str) -> str | None:
    """A one-use ticket (a minute long) that the sign-in link exchanges for a session of `token`."""
    return sessions.ticket(token)


def redeem(code: str) -> str | None:
    """The session a ticket stands for, once (None: unknown, used or expired)."""
    return sessions.redeem(code)


def sign_out(session: str | None) -> None:
    """End a session for good: a copy of its cookie is signed out too."""
    sessions.sign_out(session)
