/**
 * deliver-env's settings that its decision depends on, as explain takes them: the same flags, with deliver-env's
 * own defaults read from its option rows, so the two cannot disagree (src/cli/deliver-env/options.ts).
 */
import type { ClaimSettings } from '../../deliver/controller/claim.js';
import { RECYCLED_POD_MODES, type RecycledPodMode } from '../../deliver/controller/recycle.js';
import { UsageError } from '../command.js';
import { DELIVER_OPTION_ROWS, requiresRuntimeTls } from '../deliver-env/options.js';

/** explain's flags for deliver-env's settings, as deliver-env takes them. */
export interface DeliveryFlags {
  'runtime-port'?: string | undefined;
  'trust-runtime-url'?: boolean | undefined;
  'allow-host-network'?: boolean | undefined;
  'require-runtime-tls'?: boolean | undefined;
  'runtime-tls-secret'?: string | undefined;
  'recycled-pods'?: string | undefined;
  'lease-namespace'?: string | undefined;
  'lease-name'?: string | undefined;
}

export const DELIVERY_FLAG_NAMES = [
  'runtime-port',
  'trust-runtime-url',
  'allow-host-network',
  'require-runtime-tls',
  'runtime-tls-secret',
  'recycled-pods',
  'lease-namespace',
  'lease-name',
] as const satisfies readonly (keyof DeliveryFlags)[];

export interface DeliverySettings {
  claim: Omit<ClaimSettings, 'tls'>;
  /** NAMESPACE/NAME as given; delivery-reads.ts reads the Secret. */
  tlsSecret: string | undefined;
  recycledPods: RecycledPodMode;
  lease: { namespace: string; name: string };
}

const ROWS = DELIVER_OPTION_ROWS;

/** The settings the flags give, checked as deliver-env checks them (a bad value is a usage error, exit 2). */
export function deliverySettings(flags: DeliveryFlags): DeliverySettings {
  const port = flags['runtime-port'] === undefined ? ROWS.runtimePort.default : Number(flags['runtime-port']);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError(`--runtime-port: "${flags['runtime-port'] ?? ''}" is not a port (1 to 65535)`);
  const recycled = flags['recycled-pods'] ?? ROWS.recycledPods.default;
  if (!(RECYCLED_POD_MODES as readonly string[]).includes(recycled))
    throw new UsageError(`--recycled-pods: "${recycled}" is not one of ${RECYCLED_POD_MODES.join(', ')}`);
  const secretFlag = flags['runtime-tls-secret'];
  return {
    claim: {
      runtimePort: port,
      trustRuntimeUrl: flags['trust-runtime-url'] ?? ROWS.trustRuntimeUrl.default,
      allowHostNetwork: flags['allow-host-network'] ?? ROWS.allowHostNetwork.default,
      requireTls: requiresRuntimeTls({ requireRuntimeTls: flags['require-runtime-tls'], runtimeTlsSecret: secretFlag }),
    },
    tlsSecret: secretFlag,
    recycledPods: recycled as RecycledPodMode,
    lease: {
      namespace: flags['lease-namespace'] ?? ROWS.leaseNamespace.default,
      name: flags['lease-name'] ?? ROWS.leaseName.default,
    },
  };
}
