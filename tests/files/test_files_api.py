"""POST/GET/DELETE /files on PostgreSQL and SQLite: sniffed types, the size limit, scoping, deletion."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from app.settings import FileSettings
from tests.conftest import TokenFactory, make_settings, running_app

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n%%EOF\n"


async def upload(client: httpx.AsyncClient, headers: dict[str, str], name: str, data: bytes,
                 content_type: str | None = None) -> httpx.Response:  # fmt: skip
    part = (name, data, content_type) if content_type else (name, data)
    return await client.post("/files", files={"file": part}, headers=headers)


@pytest.mark.parametrize(
    ("name", "data", "declared", "sniffed"),
    [
        ("shot.png", PNG, "image/png", "image/png"),
        ("shot.bin", PNG, "application/octet-stream", "image/png"),
        ("paper.pdf", PDF, "application/pdf", "application/pdf"),
        ("notes.txt", b"hello\n", "text/plain", "text/plain"),
        ("table.csv", b"a,b\n1,2\n", None, "text/csv"),
        ("readme.md", b"# Title\n", "text/markdown", "text/markdown"),
        ("data.json", b'{"a": 1}', "application/json", "application/json"),
    ],
)
async def test_an_upload_answers_its_metadata_with_the_type_told_from_its_bytes(
    any_backend: httpx.AsyncClient, alice: dict[str, str], name: str, data: bytes, declared: str | None, sniffed: str
) -> None:
    response = await upload(any_backend, alice, name, data, declared)

    assert response.status_code == 201, response.text
    info = response.json()
    assert set(info) == {"id", "name", "content_type", "size", "sha256", "created_at"}
    assert (info["name"], info["content_type"], info["size"]) == (name, sniffed, len(data))
    assert info["sha256"] == hashlib.sha256(data).hexdigest()
    assert response.headers["location"] == f"/files/{info['id']}"
    assert (await any_backend.get(f"/files/{info['id']}", headers=alice)).json() == info
    content = await any_backend.get(f"/files/{info['id']}/content", headers=alice)
    assert content.content == data
    assert content.headers["content-type"].split(";")[0] == sniffed


@pytest.mark.parametrize(
    ("name", "data", "declared"),
    [
        ("shot.png", b"just some text", "image/png"),
        ("paper.pdf", PNG, "application/pdf"),
        ("data.json", b"{not json", "application/json"),
        ("a.exe", b"MZ\x90\x00\x03\x00\x00\x00", "application/octet-stream"),
        ("page.html", b"<html></html>", "application/xhtml+xml"),
    ],
)
async def test_a_body_that_lies_about_its_type_or_is_no_accepted_type_answers_415(
    any_backend: httpx.AsyncClient, alice: dict[str, str], name: str, data: bytes, declared: str
) -> None:
    response = await upload(any_backend, alice, name, data, declared)

    assert response.status_code == 415, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_files_are_scoped_to_their_owner_and_tenant(
    any_backend: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory
) -> None:
    alice, bob = auth_headers(tenant, "alice"), auth_headers(tenant, "bob")
    stranger = auth_headers("tenant-other", "alice")
    info = (await upload(any_backend, alice, "n.txt", b"mine")).json()

    for headers in (bob, stranger):
        assert (await any_backend.get(f"/files/{info['id']}", headers=headers)).status_code == 404
        assert (await any_backend.get(f"/files/{info['id']}/content", headers=headers)).status_code == 404
        assert (await any_backend.delete(f"/files/{info['id']}", headers=headers)).status_code == 404
    admin = auth_headers(tenant, "root", roles=["admin"])
    assert (await any_backend.get(f"/files/{info['id']}", headers=admin)).status_code == 200

    assert (await any_backend.delete(f"/files/{info['id']}", headers=alice)).status_code == 204
    assert (await any_backend.get(f"/files/{info['id']}", headers=alice)).status_code == 404


async def test_a_file_over_the_limit_answers_413_from_its_declared_length_before_it_is_read(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    settings = make_settings(database_url, tmp_path, files=FileSettings(max_bytes=4096))
    async with running_app(settings) as (_, client):
        reads = 0

        async def body() -> object:
            nonlocal reads
            for _ in range(1000):
                reads += 1
                yield b"x" * 1024

        declared = {"Content-Type": "multipart/form-data; boundary=b", "Content-Length": str(1000 * 1024)}
        too_big = await client.post("/files", content=body(), headers={**alice, **declared})
        assert too_big.status_code == 413
        assert too_big.headers["content-type"].startswith("application/problem+json")
        assert reads < 1000
        just_over = await upload(client, alice, "n.txt", b"y" * 4097)
        assert just_over.status_code == 413
        assert (await upload(client, alice, "n.txt", b"y" * 4096)).status_code == 201


async def test_with_a_file_store_dir_the_bytes_live_on_disk_under_the_files_id(
    database_url: str, tmp_path: Path, alice: dict[str, str]
) -> None:
    store = tmp_path / "files"
    settings = make_settings(database_url, tmp_path, files=FileSettings(store_dir=store))
    async with running_app(settings) as (_, client):
        info = (await upload(client, alice, "d.json", json.dumps({"k": 1}).encode())).json()
        assert (store / info["id"]).read_bytes() == b'{"k": 1}'
        assert (await client.get(f"/files/{info['id']}/content", headers=alice)).content == b'{"k": 1}'
        assert (await client.delete(f"/files/{info['id']}", headers=alice)).status_code == 204
        assert not (store / info["id"]).exists()
