from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends

from app.auth.principal import Principal
from app.core.problems import problem_responses
from app.deps import AdminPrincipal, CurrentPrincipal, SessionDep
from app.policies import schemas
from app.policies.explain import DecisionExplainer
from app.policies.service import PolicyService
from app.policies.simulation import PolicySimulation

router = APIRouter(tags=["policies"], responses=problem_responses(401, 422))


async def _service(db: SessionDep, principal: Principal) -> PolicyService:
    return PolicyService(db, principal)


async def admin_service(db: SessionDep, principal: AdminPrincipal) -> PolicyService:
    return await _service(db, principal)


async def reader_service(db: SessionDep, principal: CurrentPrincipal) -> PolicyService:
    return await _service(db, principal)


AdminService = Annotated[PolicyService, Depends(admin_service)]
ReaderService = Annotated[PolicyService, Depends(reader_service)]


@router.get(
    "/policies", operation_id="getPolicies", response_model=schemas.TenantPolicies, responses=problem_responses(403)
)
async def get_policies(service: AdminService) -> schemas.TenantPolicies:
    return await service.current()


@router.put(
    "/policies",
    operation_id="replacePolicies",
    response_model=schemas.TenantPolicies,
    responses=problem_responses(403, 409),
)
async def put_policies(body: schemas.TenantPoliciesUpdate, service: AdminService) -> schemas.TenantPolicies:
    """Replace the tenant's policies with a new version (first match wins; tenant rules before agent rules)."""
    return await service.replace(body)


@router.post(
    "/policies/simulate",
    operation_id="simulatePolicies",
    response_model=schemas.SimulationResult,
    responses=problem_responses(403),
)
async def simulate_policies(
    body: schemas.SimulationRequest, db: SessionDep, principal: AdminPrincipal
) -> schemas.SimulationResult:
    """Replay recorded decisions against a draft of the tenant's policies: nothing is written, no model is called."""
    return await PolicySimulation(db, principal).run(body)


@router.get(
    "/decisions/{decision_id}/explain",
    operation_id="explainDecision",
    response_model=schemas.DecisionExplanation,
    responses=problem_responses(404),
)
async def explain_decision(
    decision_id: uuid.UUID, db: SessionDep, principal: CurrentPrincipal
) -> schemas.DecisionExplanation:
    """The rules in force for one receipt, rebuilt, each judged on the recorded input in the gate's order."""
    return await DecisionExplainer(db, principal).explain(decision_id)


@router.get(
    "/turns/{turn_id}/decisions",
    operation_id="listTurnDecisions",
    response_model=schemas.DecisionPage,
    responses=problem_responses(404),
)
async def list_decisions(turn_id: uuid.UUID, service: ReaderService) -> schemas.DecisionPage:
    return await service.decisions(turn_id)
