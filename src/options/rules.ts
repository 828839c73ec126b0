/** The rules more than one command's rows use (src/options/option-row.ts says what a rule is). */
export const NON_EMPTY = { minLength: 1 } as const;
export const PORT = { minimum: 0, maximum: 65535 } as const;
export const DNS_LABEL = { pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } as const;
export const DNS_SUBDOMAIN = { pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' } as const;
/** pino's levels, which both long-running commands log at. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
