// kube-apiserver's audit log, for tests that need the order in which the API server did things. The log
// backend writes in blocking mode (the default): an event is on disk before its request's answer goes out, so
// the order of the lines is the order in which requests completed.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface AuditEvent {
  verb: string;
  stage: string;
  /** When the API server reached this stage, with microseconds (RFC 3339). */
  stageTimestamp?: string;
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestObject?: Record<string, unknown>;
}

/** Every create and delete at the Metadata level, webhook configurations with their request body. */
const CREATES_AND_DELETES: readonly object[] = [
  {
    level: 'Request',
    verbs: ['create', 'delete'],
    resources: [{ group: 'admissionregistration.k8s.io', resources: ['mutatingwebhookconfigurations'] }],
  },
  { level: 'Metadata', verbs: ['create', 'delete', 'deletecollection'] },
];

/**
 * Writes an audit policy into `dir` and returns the kube-apiserver flags that log to `<dir>/audit.log`: the
 * requests `rules` select (by default every create and delete), nothing else.
 */
export function auditFlags(
  dir: string,
  rules: readonly object[] = CREATES_AND_DELETES,
): { flags: string[]; logPath: string } {
  const policyPath = path.join(dir, 'audit-policy.yaml');
  const logPath = path.join(dir, 'audit.log');
  const policy = {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [...rules, { level: 'None' }],
  };
  writeFileSync(policyPath, JSON.stringify(policy));
  return {
    flags: [`--audit-policy-file=${policyPath}`, `--audit-log-path=${logPath}`, '--audit-log-mode=blocking'],
    logPath,
  };
}

/** Every completed request logged so far, in the order the API server completed them. */
export function readAuditEvents(logPath: string): AuditEvent[] {
  return readFileSync(logPath, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((event) => event.stage === 'ResponseComplete');
}
