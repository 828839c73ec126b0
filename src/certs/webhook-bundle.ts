/**
 * The MutatingWebhookConfiguration's `caBundle`, decided from the Secret. Pure: the caller reads and writes.
 *
 * Every webhook entry gets the same bundle (all the CAs of `trustBundle`). Replicas may hold different
 * versions of the Secret for a while, so the configuration records which Secret (uid) and write
 * (generation) its bundle came from, and a replica never replaces a bundle that came from a newer write:
 * otherwise a replica that has not yet seen a CA rotation could take the new CA out of the bundle again.
 */
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { ANNOTATIONS, normalizePem } from './state.js';

export interface BundleSource {
  secretUid: string;
  generation: number;
}

export type BundleDecision =
  | { kind: 'in-sync' }
  /** The configuration carries a bundle from a later write of the same Secret: leave it. */
  | { kind: 'newer'; source: BundleSource }
  | { kind: 'update'; body: V1MutatingWebhookConfiguration; changedWebhooks: number };

export function encodeBundle(pems: readonly string[]): string {
  return Buffer.from(pems.map(normalizePem).join(''), 'utf8').toString('base64');
}

export function decideBundle(
  config: V1MutatingWebhookConfiguration,
  pems: readonly string[],
  source: BundleSource,
): BundleDecision {
  const recorded = parseSource(config.metadata?.annotations?.[ANNOTATIONS.bundleSource]);
  if (recorded !== undefined && recorded.secretUid === source.secretUid && recorded.generation > source.generation) {
    return { kind: 'newer', source: recorded };
  }
  const wanted = encodeBundle(pems);
  const webhooks = config.webhooks ?? [];
  const changedWebhooks = webhooks.filter((webhook) => webhook.clientConfig.caBundle !== wanted).length;
  if (changedWebhooks === 0) return { kind: 'in-sync' };

  // The object as read, resourceVersion included: the update fails with 409 if anyone wrote in between.
  const body: V1MutatingWebhookConfiguration = {
    ...config,
    metadata: {
      ...config.metadata,
      annotations: { ...(config.metadata?.annotations ?? {}), [ANNOTATIONS.bundleSource]: formatSource(source) },
    },
    webhooks: webhooks.map((webhook) => ({ ...webhook, clientConfig: { ...webhook.clientConfig, caBundle: wanted } })),
  };
  if (body.metadata !== undefined) delete body.metadata.managedFields;
  return { kind: 'update', body, changedWebhooks };
}

/** Whether every webhook entry trusts `caPem`: then serving a certificate it signed breaks no client. */
export function bundleTrusts(config: V1MutatingWebhookConfiguration, caPem: string): boolean {
  const wanted = normalizePem(caPem);
  return (config.webhooks ?? []).every((webhook) => {
    const bundle = Buffer.from(webhook.clientConfig.caBundle ?? '', 'base64').toString('utf8');
    return splitPem(bundle).includes(wanted);
  });
}

export function splitPem(bundle: string): string[] {
  return (bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map(normalizePem);
}

function formatSource(source: BundleSource): string {
  return `${source.secretUid}/${source.generation}`;
}

function parseSource(value: string | undefined): BundleSource | undefined {
  const match = value === undefined ? null : /^([^/]+)\/(\d+)$/.exec(value);
  if (match === null || match[1] === undefined || match[2] === undefined) return undefined;
  return { secretUid: match[1], generation: Number(match[2]) };
}
