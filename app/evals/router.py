from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request, Response
from pydantic import ValidationError

from app.core.problems import problem_responses
from app.deps import CurrentPrincipal, SessionDep
from app.errors import InvalidInput, UnsupportedMediaType
from app.evals import schemas
from app.evals.datasets import DatasetService
from app.evals.service import EvalService

router = APIRouter(tags=["evals"], responses=problem_responses(401, 422))
NDJSON = "application/x-ndjson"


async def _datasets(db: SessionDep, principal: CurrentPrincipal) -> DatasetService:
    return DatasetService(db, principal)


Datasets = Annotated[DatasetService, Depends(_datasets)]
Limit = Annotated[int, Query(ge=1, le=1000)]
Cursor = Annotated[str | None, Query(max_length=12)]


def _items_body() -> dict[str, Any]:
    """The JSON form of the body; its item models are in the components already (`DatasetCreate`)."""
    schema = schemas.ItemsAppend.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


@router.post(
    "/datasets",
    operation_id="createDataset",
    status_code=201,
    response_model=schemas.Dataset,
    responses=problem_responses(409),
)
async def create_dataset(body: schemas.DatasetCreate, service: Datasets, response: Response) -> schemas.Dataset:
    dataset = await service.create(body)
    response.headers["Location"] = f"/datasets/{dataset.id}"
    return dataset


@router.get("/datasets", operation_id="listDatasets", response_model=schemas.DatasetPage)
async def list_datasets(
    service: Datasets,
    limit: Limit = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    name: Annotated[str | None, Query(max_length=128)] = None,
) -> schemas.DatasetPage:
    """The tenant's datasets, newest first; `name` finds one by its name."""
    return await service.listing(limit=limit, cursor=cursor, name=name)


@router.get(
    "/datasets/{dataset_id}",
    operation_id="getDataset",
    response_model=schemas.Dataset,
    responses=problem_responses(404),
)
async def get_dataset(dataset_id: uuid.UUID, service: Datasets) -> schemas.Dataset:
    return await service.get(dataset_id)


@router.delete(
    "/datasets/{dataset_id}", operation_id="deleteDataset", status_code=204, responses=problem_responses(403, 404)
)
async def delete_dataset(
    dataset_id: uuid.UUID, service: Datasets, principal: CurrentPrincipal, request: Request, background: BackgroundTasks
) -> None:
    """Delete the dataset with its items and the eval runs on it; the turns those runs still run are cancelled."""
    for run in await service.delete(dataset_id):
        background.add_task(request.app.state.evals.stop_turns, principal.tenant_id, run)


@router.post(
    "/datasets/{dataset_id}/items",
    operation_id="appendDatasetItems",
    status_code=201,
    response_model=schemas.ItemsAdded,
    responses=problem_responses(403, 404, 415),
    openapi_extra=_items_body(),
)
async def append_items(dataset_id: uuid.UUID, request: Request, service: Datasets) -> schemas.ItemsAdded:
    """Append items: `{"items": [...]}` as JSON, or one item per line with `Content-Type: application/x-ndjson`."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == NDJSON:
        return await service.append_jsonl(dataset_id, await request.body())
    if media != "application/json":
        raise UnsupportedMediaType(f"Send application/json or {NDJSON}")
    try:
        body = schemas.ItemsAppend.model_validate_json(await request.body())
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInput(first["msg"], field=".".join(["body", *map(str, first["loc"])])) from exc
    return await service.append(dataset_id, body.items)


@router.get(
    "/datasets/{dataset_id}/items",
    operation_id="listDatasetItems",
    response_model=schemas.ItemPage,
    responses=problem_responses(404),
)
async def list_items(
    dataset_id: uuid.UUID, service: Datasets, limit: Limit = 100, cursor: Cursor = None
) -> schemas.ItemPage:
    return await service.page(dataset_id, limit=limit, cursor=cursor)


@router.post(
    "/datasets/{dataset_id}/items:from-sessions",
    operation_id="datasetItemsFromSessions",
    status_code=201,
    response_model=schemas.ItemsAdded,
    responses=problem_responses(403, 404),
)
async def items_from_sessions(
    dataset_id: uuid.UUID, body: schemas.FromSessions, service: Datasets
) -> schemas.ItemsAdded:
    """Each completed turn of the sessions becomes an item: input, answer as `expected.reference`,
    and its tool calls with their recorded results as `recorded_tools`."""
    return await service.from_sessions(dataset_id, body)


async def _evals(db: SessionDep, principal: CurrentPrincipal) -> EvalService:
    return EvalService(db, principal)


Evals = Annotated[EvalService, Depends(_evals)]


@router.post(
    "/evals",
    operation_id="createEval",
    status_code=202,
    response_model=schemas.EvalRun,
    responses=problem_responses(404),
)
async def create_eval(
    body: schemas.EvalCreate, service: Evals, response: Response, request: Request, background: BackgroundTasks
) -> schemas.EvalRun:
    """Run every item of the dataset as a governed turn of `agent_version` (and of `baseline_version`),
    then score it. `tools: "recorded"` answers each tool call from the item's recorded results."""
    run = await service.create(body)
    background.add_task(request.app.state.evals.wake)  # after the commit: the worker claims it at once
    response.headers["Location"] = f"/evals/{run.id}"
    return run


@router.get("/evals", operation_id="listEvals", response_model=schemas.EvalRunPage)
async def list_evals(
    service: Evals, limit: Limit = 50, cursor: Annotated[str | None, Query(max_length=200)] = None
) -> schemas.EvalRunPage:
    """Your eval runs (every one of the tenant's for an admin), newest first."""
    return await service.listing(limit=limit, cursor=cursor)


@router.get(
    "/evals/{eval_id}", operation_id="getEval", response_model=schemas.EvalRun, responses=problem_responses(404)
)
async def get_eval(eval_id: uuid.UUID, service: Evals) -> schemas.EvalRun:
    return await service.get(eval_id)


@router.get(
    "/evals/{eval_id}/items",
    operation_id="listEvalItems",
    response_model=schemas.EvalItemPage,
    responses=problem_responses(404),
)
async def list_eval_items(
    eval_id: uuid.UUID, service: Evals, limit: Limit = 100, cursor: Cursor = None
) -> schemas.EvalItemPage:
    """Per item (and version): its turn, its scores with their reasons."""
    return await service.items(eval_id, limit=limit, cursor=cursor)


@router.post(
    "/evals/{eval_id}/cancel",
    operation_id="cancelEval",
    response_model=schemas.EvalRun,
    responses=problem_responses(404, 409),
)
async def cancel_eval(
    eval_id: uuid.UUID, service: Evals, principal: CurrentPrincipal, request: Request, background: BackgroundTasks
) -> schemas.EvalRun:
    """Stop the run: no item starts any more, and its turns still running are cancelled."""
    run, cancelled = await service.cancel(eval_id)
    background.add_task(request.app.state.evals.stop_turns, principal.tenant_id, cancelled)
    return run
