"""All ORM tables, one file each; importing this package registers them on `Base.metadata`."""

from app.models.a2a_push_config import A2aPushConfig
from app.models.agent import Agent
from app.models.agent_version import AgentVersion
from app.models.approval import Approval
from app.models.audit_record import AuditRecord
from app.models.base import Base
from app.models.credential import Credential
from app.models.credential_setting import CredentialSetting
from app.models.dataset import Dataset, DatasetItem
from app.models.eval_run import EvalResult, EvalRun
from app.models.file import File
from app.models.memory_item import MemoryItem
from app.models.message import Message
from app.models.policy_decision import PolicyDecision
from app.models.quota_ledger import QuotaLedger
from app.models.quota_reservation import QuotaReservation
from app.models.runner import Runner
from app.models.schedule import Schedule, ScheduleFiring
from app.models.session import SESSION_STATUSES, Session
from app.models.summary import Summary
from app.models.tenant_limits import TenantLimits
from app.models.tenant_policy import TenantPolicy
from app.models.tool_execution import ToolExecution
from app.models.turn import ACTIVE_STATUSES, Turn
from app.models.turn_event import TurnEvent
from app.models.usage import Usage
from app.models.webhook import Webhook
from app.models.webhook_delivery import WebhookDelivery

__all__ = [
    "A2aPushConfig",
    "ACTIVE_STATUSES",
    "Agent",
    "AgentVersion",
    "Approval",
    "AuditRecord",
    "Base",
    "Credential",
    "CredentialSetting",
    "Dataset",
    "DatasetItem",
    "EvalResult",
    "EvalRun",
    "File",
    "MemoryItem",
    "Message",
    "PolicyDecision",
    "QuotaLedger",
    "QuotaReservation",
    "Runner",
    "SESSION_STATUSES",
    "Schedule",
    "ScheduleFiring",
    "Session",
    "TenantLimits",
    "Summary",
    "TenantPolicy",
    "ToolExecution",
    "Turn",
    "TurnEvent",
    "Usage",
    "Webhook",
    "WebhookDelivery",
]
