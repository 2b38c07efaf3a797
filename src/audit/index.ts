// The audit log (issue 25, docs/security.md): records written as JSON lines, decided at apply.
export { AuditLog, type AuditLogOptions, type AuditRecord } from './audit-log.js';
export { auditRecordsOf, isAuditedCommand } from './apply-events.js';
