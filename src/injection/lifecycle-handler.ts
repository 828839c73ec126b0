import { LIFECYCLE_HANDLER_KINDS } from '../shapes/kubernetes.js';
import type { LifecycleHandler } from './types.js';

/** The spec's "valid lifecycle handler": it says what to run; `postStart: {}` counts as absent. */
export function isValidHandler(handler: LifecycleHandler | undefined): handler is LifecycleHandler {
  if (handler === undefined || handler === null || typeof handler !== 'object') return false;
  return LIFECYCLE_HANDLER_KINDS.some((kind) => handler[kind] !== undefined && handler[kind] !== null);
}
