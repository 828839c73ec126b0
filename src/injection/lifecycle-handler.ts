import type { LifecycleHandler } from './types.js';

const HANDLER_KINDS = ['exec', 'httpGet', 'tcpSocket', 'sleep'] as const;

/** The spec's "valid lifecycle handler": it says what to run; `postStart: {}` counts as absent. */
export function isValidHandler(handler: LifecycleHandler | undefined): handler is LifecycleHandler {
  if (handler === undefined || handler === null || typeof handler !== 'object') return false;
  return HANDLER_KINDS.some((kind) => handler[kind] !== undefined && handler[kind] !== null);
}
