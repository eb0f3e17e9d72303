"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30 02:40:34.548995
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('agents',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('current_version', sa.Integer(), nullable=False),
    sa.Column('created_by', sa.String(length=256), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('archived_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agents'))
    )
    op.create_index('ix_agents_tenant_created', 'agents', ['tenant_id', 'created_at', 'id'], unique=False)
    op.create_index(op.f('ix_agents_tenant_id'), 'agents', ['tenant_id'], unique=False)
    op.create_table('tenant_policies',
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('policies', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('policy_hash', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.String(length=256), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tenant_policies')),
    sa.UniqueConstraint('tenant_id', 'version', name=op.f('uq_tenant_policies_tenant_id_version'))
    )
    op.create_index(op.f('ix_tenant_policies_tenant_id'), 'tenant_policies', ['tenant_id'], unique=False)
    op.create_table('agent_versions',
    sa.Column('agent_id', sa.Uuid(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('config', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_by', sa.String(length=256), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_agent_versions_agent_id_agents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_versions')),
    sa.UniqueConstraint('agent_id', 'version', name=op.f('uq_agent_versions_agent_id_version'))
    )
    op.create_index(op.f('ix_agent_versions_tenant_id'), 'agent_versions', ['tenant_id'], unique=False)
    op.create_table('sessions',
    sa.Column('agent_id', sa.Uuid(), nullable=False),
    sa.Column('agent_version', sa.Integer(), nullable=False),
    sa.Column('owner_sub', sa.String(length=256), nullable=False),
    sa.Column('snapshot', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('model_calls', sa.Integer(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_sessions_agent_id_agents'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sessions'))
    )
    op.create_index('ix_sessions_agent_id', 'sessions', ['agent_id'], unique=False)
    op.create_index(op.f('ix_sessions_tenant_id'), 'sessions', ['tenant_id'], unique=False)
    op.create_index('ix_sessions_tenant_owner_created', 'sessions', ['tenant_id', 'owner_sub', 'created_at', 'id'], unique=False)
    op.create_table('turns',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('status', sa.String(length=24), nullable=False),
    sa.Column('input', sa.Text(), nullable=False),
    sa.Column('final_output', sa.Text(), nullable=True),
    sa.Column('error', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('loop_count', sa.Integer(), nullable=False),
    sa.Column('max_loops', sa.Integer(), nullable=False),
    sa.Column('max_output_tokens', sa.Integer(), nullable=False),
    sa.Column('last_seq', sa.Integer(), nullable=False),
    sa.Column('owner_sub', sa.String(length=256), nullable=False),
    sa.Column('resumed_by', sa.Uuid(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_turns_session_id_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_turns'))
    )
    op.create_index('ix_turns_session_created', 'turns', ['session_id', 'created_at'], unique=False)
    op.create_index('ix_turns_status', 'turns', ['status'], unique=False)
    op.create_index(op.f('ix_turns_tenant_id'), 'turns', ['tenant_id'], unique=False)
    op.create_index('uq_turns_one_active_per_session', 'turns', ['session_id'], unique=True, postgresql_where=sa.text("status IN ('running', 'interrupted')"), sqlite_where=sa.text("status IN ('running', 'interrupted')"))
    op.create_table('approvals',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('owner_sub', sa.String(length=256), nullable=False),
    sa.Column('loop', sa.Integer(), nullable=False),
    sa.Column('tool_call_id', sa.String(length=128), nullable=False),
    sa.Column('tool_name', sa.String(length=256), nullable=False),
    sa.Column('arguments', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('arguments_hash', sa.String(length=64), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('rule_id', sa.String(length=128), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('decision_reason', sa.Text(), nullable=True),
    sa.Column('edited_arguments', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('decided_by', sa.String(length=256), nullable=True),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_approvals_session_id_sessions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_approvals_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approvals')),
    sa.UniqueConstraint('turn_id', 'tool_call_id', name=op.f('uq_approvals_turn_id_tool_call_id'))
    )
    op.create_index('ix_approvals_session_id', 'approvals', ['session_id'], unique=False)
    op.create_index(op.f('ix_approvals_tenant_id'), 'approvals', ['tenant_id'], unique=False)
    op.create_index('ix_approvals_tenant_status', 'approvals', ['tenant_id', 'status', 'created_at'], unique=False)
    op.create_table('audit_records',
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('detail', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_audit_records_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_records'))
    )
    op.create_index(op.f('ix_audit_records_tenant_id'), 'audit_records', ['tenant_id'], unique=False)
    op.create_index(op.f('ix_audit_records_turn_id'), 'audit_records', ['turn_id'], unique=False)
    op.create_table('messages',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('tool_calls', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('tool_call_id', sa.String(length=128), nullable=True),
    sa.Column('name', sa.String(length=256), nullable=True),
    sa.Column('is_error', sa.Boolean(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_messages_session_id_sessions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_messages_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_messages'))
    )
    op.create_index('ix_messages_session_id_id', 'messages', ['session_id', 'id'], unique=False)
    op.create_index(op.f('ix_messages_tenant_id'), 'messages', ['tenant_id'], unique=False)
    op.create_index(op.f('ix_messages_turn_id'), 'messages', ['turn_id'], unique=False)
    op.create_table('policy_decisions',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('point', sa.String(length=16), nullable=False),
    sa.Column('tool_call_id', sa.String(length=128), nullable=True),
    sa.Column('tool_name', sa.String(length=256), nullable=True),
    sa.Column('verdict', sa.String(length=24), nullable=False),
    sa.Column('rule_id', sa.String(length=128), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('policy_hash', sa.String(length=64), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_policy_decisions_session_id_sessions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_policy_decisions_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_policy_decisions'))
    )
    op.create_index(op.f('ix_policy_decisions_tenant_id'), 'policy_decisions', ['tenant_id'], unique=False)
    op.create_index('ix_policy_decisions_turn_created', 'policy_decisions', ['turn_id', 'created_at'], unique=False)
    op.create_table('tool_executions',
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('loop', sa.Integer(), nullable=False),
    sa.Column('tool_call_id', sa.String(length=128), nullable=False),
    sa.Column('tool_name', sa.String(length=256), nullable=False),
    sa.Column('arguments', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('result', sa.Text(), nullable=False),
    sa.Column('is_error', sa.Boolean(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_tool_executions_session_id_sessions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_tool_executions_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tool_executions')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_tool_executions_idempotency_key'))
    )
    op.create_index(op.f('ix_tool_executions_tenant_id'), 'tool_executions', ['tenant_id'], unique=False)
    op.create_index(op.f('ix_tool_executions_turn_id'), 'tool_executions', ['turn_id'], unique=False)
    op.create_table('turn_events',
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('type', sa.String(length=40), nullable=False),
    sa.Column('data', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_turn_events_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('turn_id', 'seq', name=op.f('pk_turn_events'))
    )
    op.create_index(op.f('ix_turn_events_tenant_id'), 'turn_events', ['tenant_id'], unique=False)
    op.create_table('usage',
    sa.Column('session_id', sa.Uuid(), nullable=False),
    sa.Column('turn_id', sa.Uuid(), nullable=False),
    sa.Column('agent_id', sa.Uuid(), nullable=False),
    sa.Column('model', sa.String(length=128), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_usage_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_usage_session_id_sessions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], name=op.f('fk_usage_turn_id_turns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_usage'))
    )
    op.create_index(op.f('ix_usage_session_id'), 'usage', ['session_id'], unique=False)
    op.create_index(op.f('ix_usage_tenant_id'), 'usage', ['tenant_id'], unique=False)
    op.create_index(op.f('ix_usage_turn_id'), 'usage', ['turn_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_usage_turn_id'), table_name='usage')
    op.drop_index(op.f('ix_usage_tenant_id'), table_name='usage')
    op.drop_index(op.f('ix_usage_session_id'), table_name='usage')
    op.drop_table('usage')
    op.drop_index(op.f('ix_turn_events_tenant_id'), table_name='turn_events')
    op.drop_table('turn_events')
    op.drop_index(op.f('ix_tool_executions_turn_id'), table_name='tool_executions')
    op.drop_index(op.f('ix_tool_executions_tenant_id'), table_name='tool_executions')
    op.drop_table('tool_executions')
    op.drop_index('ix_policy_decisions_turn_created', table_name='policy_decisions')
    op.drop_index(op.f('ix_policy_decisions_tenant_id'), table_name='policy_decisions')
    op.drop_table('policy_decisions')
    op.drop_index(op.f('ix_messages_turn_id'), table_name='messages')
    op.drop_index(op.f('ix_messages_tenant_id'), table_name='messages')
    op.drop_index('ix_messages_session_id_id', table_name='messages')
    op.drop_table('messages')
    op.drop_index(op.f('ix_audit_records_turn_id'), table_name='audit_records')
    op.drop_index(op.f('ix_audit_records_tenant_id'), table_name='audit_records')
    op.drop_table('audit_records')
    op.drop_index('ix_approvals_tenant_status', table_name='approvals')
    op.drop_index(op.f('ix_approvals_tenant_id'), table_name='approvals')
    op.drop_index('ix_approvals_session_id', table_name='approvals')
    op.drop_table('approvals')
    op.drop_index('uq_turns_one_active_per_session', table_name='turns', postgresql_where=sa.text("status IN ('running', 'interrupted')"), sqlite_where=sa.text("status IN ('running', 'interrupted')"))
    op.drop_index(op.f('ix_turns_tenant_id'), table_name='turns')
    op.drop_index('ix_turns_status', table_name='turns')
    op.drop_index('ix_turns_session_created', table_name='turns')
    op.drop_table('turns')
    op.drop_index('ix_sessions_tenant_owner_created', table_name='sessions')
    op.drop_index(op.f('ix_sessions_tenant_id'), table_name='sessions')
    op.drop_index('ix_sessions_agent_id', table_name='sessions')
    op.drop_table('sessions')
    op.drop_index(op.f('ix_agent_versions_tenant_id'), table_name='agent_versions')
    op.drop_table('agent_versions')
    op.drop_index(op.f('ix_tenant_policies_tenant_id'), table_name='tenant_policies')
    op.drop_table('tenant_policies')
    op.drop_index(op.f('ix_agents_tenant_id'), table_name='agents')
    op.drop_index('ix_agents_tenant_created', table_name='agents')
    op.drop_table('agents')
