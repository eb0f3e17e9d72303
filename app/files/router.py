from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Response, UploadFile, status

from app.core.problems import problem_responses
from app.deps import ContainerDep, CurrentPrincipal, SessionDep
from app.files.schemas import FileInfo
from app.files.service import FileService, Upload
from app.files.sniff import ACCEPTED
from app.files.store import FileStore

router = APIRouter(prefix="/files", tags=["files"], responses=problem_responses(401, 422))


async def get_service(db: SessionDep, principal: CurrentPrincipal, container: ContainerDep) -> FileService:
    files = container.settings.files
    return FileService(db, principal, FileStore(files.store_dir), max_bytes=files.max_bytes)


Service = Annotated[FileService, Depends(get_service)]


@router.post(
    "",
    operation_id="uploadFile",
    status_code=status.HTTP_201_CREATED,
    response_model=FileInfo,
    responses=problem_responses(413, 415),
)
async def upload_file(file: UploadFile, service: Service, response: Response) -> FileInfo:
    """One file as `multipart/form-data` field `file`: png, jpeg, webp, gif, pdf, plain text, CSV,
    Markdown or JSON, told from its bytes (a declared type they contradict answers 415)."""
    data = await file.read()
    created = await service.upload(Upload(name=file.filename or "", declared_type=file.content_type, data=data))
    response.headers["Location"] = f"/files/{created.id}"
    return created


@router.get("/{file_id}", operation_id="getFile", response_model=FileInfo, responses=problem_responses(404))
async def get_file(file_id: uuid.UUID, service: Service) -> FileInfo:
    return FileInfo.model_validate(await service.get(file_id))


_BINARY = {"schema": {"type": "string", "format": "binary"}}
_CONTENT = {"content": {t: _BINARY for t in ACCEPTED}, "description": "the file's bytes, as its sniffed type"}


@router.get(
    "/{file_id}/content",
    operation_id="getFileContent",
    response_class=Response,
    responses={200: _CONTENT, **problem_responses(404)},
)
async def get_file_content(file_id: uuid.UUID, service: Service) -> Response:
    file, data = await service.content(file_id)
    headers = {"Content-Disposition": "attachment", "X-Content-Type-Options": "nosniff"}
    return Response(data, media_type=file.content_type, headers=headers)


@router.delete(
    "/{file_id}",
    operation_id="deleteFile",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 409),
)
async def delete_file(file_id: uuid.UUID, service: Service) -> Response:
    await service.delete(file_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
