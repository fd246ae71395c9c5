"""Tokens of the live memory service: scoped by namespace segments and scopes, stored only as salted hashes."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ledgermem.service.errors import BadRequest, Forbidden, Unauthorized
from ledgermem.service.tokens import Token, TokenStore, split_address
from tests.service.conftest import assert_no_secret, live_http


def test_the_token_file_holds_no_secret_and_is_private(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, secret = store.create("acme", "read,write", note="support bot")
    text = (tmp_path / "tokens.json").read_text()
    assert_no_secret(secret, text)
    record = json.loads(text)["tokens"][0]
    assert record["token_id"] == token.token_id and len(bytes.fromhex(record["salt"])) == 16
    assert os.stat(tmp_path / "tokens.json").st_mode & 0o077 == 0
    assert store.authenticate(secret) == token


def test_two_tokens_of_one_secret_length_have_different_salts(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.create("acme", "read")
    store.create("acme", "read")
    salts = {r["salt"] for r in json.loads((tmp_path / "tokens.json").read_text())["tokens"]}
    assert len(salts) == 2


@pytest.mark.parametrize("presented", [None, "", "lmt_", "Bearer x", "lmt_0123456789abcdef_" + "A" * 43])
def test_a_wrong_or_malformed_secret_is_refused(tmp_path: Path, presented: str | None) -> None:
    TokenStore(tmp_path).create("acme", "read")
    with pytest.raises(Unauthorized):
        TokenStore(tmp_path).authenticate(presented)


def test_control_a_changed_character_of_a_real_secret_is_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    _, secret = store.create("acme", "read")
    flipped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    with pytest.raises(Unauthorized):
        store.authenticate(flipped)
    assert store.authenticate(secret).namespace == "acme"


def test_a_revoked_token_is_refused_by_a_store_that_already_knew_it(tmp_path: Path) -> None:
    serving = TokenStore(tmp_path)
    _, secret = TokenStore(tmp_path).create("acme", "read")
    assert serving.authenticate(secret)  # the server's store has read the file
    TokenStore(tmp_path).revoke(serving.tokens()[0].token_id)  # another process revokes it
    with pytest.raises(Unauthorized, match="revoked"):
        serving.authenticate(secret)


def test_namespaces_are_prefixes_by_segment_not_by_character() -> None:
    token = Token("t1", "acme", frozenset({"read"}), "now")
    token.check(("acme", "user-42", "s1"), "read")
    with pytest.raises(Forbidden, match="outside"):
        token.check(("acme-corp", "user-42", "s1"), "read")  # a character prefix, not a segment prefix
    with pytest.raises(Forbidden, match="'write'"):
        token.check(("acme", "user-42", "s1"), "write")
    narrow = Token("t2", "acme/user-42", frozenset({"read", "write"}), "now")
    narrow.check(("acme", "user-42", "s1"), "write")
    with pytest.raises(Forbidden):
        narrow.check(("acme", "user-7", "s1"), "read")


def test_control_a_character_prefix_check_would_leak_to_acme_corp() -> None:
    """The must-fail control of `covers`: the naive check a string prefix gives lets another tenant through."""
    def naive(namespace: str, address: str) -> bool:
        return address.startswith(namespace)

    assert naive("acme", "acme-corp/user-1/s1")  # the leak the segment check exists to stop
    assert not Token("t", "acme", frozenset({"read"}), "now").covers(("acme-corp", "user-1", "s1"))


@pytest.mark.parametrize("address", ["acme", "acme//s1", "../acme/s1", "acme/.hidden/s1", "acme/s1/", "/acme/s1",
                                     "acme/a b/s1", "acme/u:1/s1", "a/" * 8 + "z", 42])
def test_a_stream_address_that_is_not_names_is_refused_naming_the_parameter(address: object) -> None:
    with pytest.raises(BadRequest) as caught:
        split_address(address)
    assert caught.value.parameter == "stream"


def test_a_token_needs_a_valid_namespace_and_known_scopes(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    with pytest.raises(BadRequest, match="scope"):
        store.create("acme", "read,admin")
    with pytest.raises(BadRequest, match="namespace"):
        store.create("../etc", "read")
    assert not (tmp_path / "tokens.json").exists()


def test_token_commands_show_the_secret_once_and_revoke(tmp_path: Path) -> None:
    from tests.invoke import invoke_in

    folder = str(tmp_path / "mem")
    created = invoke_in(tmp_path, "token", "create", "--live", folder, "--namespace", "acme/user-42", "--scope",
                        "read,write", "--share", "acme/shared=read", "--json")
    assert created.exit_code == 0, created.output
    token = json.loads(created.output)
    assert token["namespace"] == "acme/user-42" and token["scopes"] == ["read", "write"]
    assert token["shared"] == [{"namespace": "acme/shared", "scopes": ["read"]}]
    assert TokenStore(tmp_path / "mem").authenticate(token["secret"]).token_id == token["token_id"]
    listed = invoke_in(tmp_path, "token", "list", "--live", folder)
    assert token["token_id"] in listed.output and token["secret"] not in listed.output
    assert invoke_in(tmp_path, "token", "revoke", "--live", folder, token["token_id"]).exit_code == 0
    with pytest.raises(Unauthorized):
        TokenStore(tmp_path / "mem").authenticate(token["secret"])
    bad = invoke_in(tmp_path, "token", "create", "--live", folder, "--namespace", "acme", "--scope", "root")
    assert bad.exit_code == 1 and "scope" in bad.output


def test_a_shared_grant_reads_a_shared_stream_without_writing_it() -> None:
    token = Token("t", "acme/user-42", frozenset({"read", "write"}), "now",
                  shared=(("acme/shared", frozenset({"read"})),))
    token.check(("acme", "shared", "kb"), "read")
    token.check(("acme", "user-42", "s1"), "write")
    with pytest.raises(Forbidden, match="needs 'write'"):
        token.check(("acme", "shared", "kb"), "write")
    with pytest.raises(Forbidden, match="outside"):
        token.check(("acme", "user-7", "s1"), "read")


def test_shared_grants_are_stored_and_authenticated(tmp_path: Path) -> None:
    token, secret = TokenStore(tmp_path).create("acme/user-42", "read,write", shared=[("acme/shared", "read")])
    again = TokenStore(tmp_path).authenticate(secret)
    assert again == token and again.shared == (("acme/shared", frozenset({"read"})),)
    with pytest.raises(BadRequest):
        TokenStore(tmp_path).create("acme/user-42", "read", shared=[("acme/../x", "read")])


def test_control_the_secret_check_finds_the_random_part_alone(tmp_path: Path) -> None:
    secret = TokenStore(tmp_path).create("acme", "read")[1]
    random_part = secret.split("_", 2)[2]
    with pytest.raises(AssertionError, match="secret was stored"):
        assert_no_secret(secret, f"stored: {random_part}")
    with pytest.raises(AssertionError, match="secret was stored"):
        assert_no_secret(secret, f"stored: {random_part}".encode())
    assert_no_secret(secret, secret.split("_", 2)[1])  # the id alone is no secret


def test_a_token_stops_authenticating_when_it_expires(tmp_path: Path) -> None:
    made = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)
    store = TokenStore(tmp_path)
    token, secret = store.create("acme", "read", now=made, expires_in=3600)
    assert token.expires_at == "2026-11-01T10:00:00+00:00" and token.public()["expires_at"] == token.expires_at
    assert store.authenticate(secret, now=made + timedelta(minutes=59)).token_id == token.token_id
    with pytest.raises(Unauthorized, match="expired at 2026-11-01T10:00:00"):
        store.authenticate(secret, now=made + timedelta(hours=1))
    forever, forever_secret = store.create("acme", "read", now=made)  # control: no lifetime, no expiry
    assert forever.expires_at is None
    assert store.authenticate(forever_secret, now=made + timedelta(days=3650)).token_id == forever.token_id
    with pytest.raises(BadRequest, match="expires_in"):
        store.create("acme", "read", expires_in=0)


def test_token_create_takes_a_lifetime_and_an_expired_token_is_401_over_http(tmp_path: Path) -> None:
    import requests

    from ledgermem.service.live import LiveStore
    from tests.invoke import invoke_in

    folder = tmp_path / "mem"
    created = invoke_in(tmp_path, "token", "create", "--live", str(folder), "--namespace", "acme",
                        "--expires-in", "1d", "--json")
    assert created.exit_code == 0, created.output
    assert json.loads(created.output)["expires_at"] is not None
    bad = invoke_in(tmp_path, "token", "create", "--live", str(folder), "--namespace", "acme", "--expires-in", "soon")
    assert bad.exit_code == 2 and "--expires-in" in bad.output and "not a duration" in bad.output
    store = LiveStore(folder)
    _, lapsed = store.tokens.create("acme", "read", now=datetime_ago(2), expires_in=3600)
    _, fresh = store.tokens.create("acme", "read")
    with live_http(store) as base:
        url = base + "/api/memory/streams"
        answer = requests.get(url, params={"namespace": "acme"}, headers={"Authorization": f"Bearer {lapsed}"},
                              timeout=30)
        assert answer.status_code == 401 and "expired" in answer.json()["error"]
        ok = requests.get(url, params={"namespace": "acme"}, headers={"Authorization": f"Bearer {fresh}"}, timeout=30)
        assert ok.status_code == 200, ok.text


def datetime_ago(hours: int) -> datetime:
    return datetime.now(timezone.utc) - timedelta(hours=hours)
