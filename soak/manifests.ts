/**
 * What the shipped manifests say about running the server: its memory limit, its transport limits and heap
 * flags, the webhook's timeout. The soak runs `serve` as the Deployment does, so the memory bound it checks
 * is the one a cluster would enforce on that configuration.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { repoPath } from '../harness/repo.js';
import type { HelpFlag } from './server.js';

export interface Deployment {
  memory: string;
  memoryMiB: number;
  /** The Deployment's limit flags that this build of serve has, flag to value. */
  limits: Map<string, string>;
  nodeOptions: string | undefined;
  webhookTimeoutSeconds: number;
}

interface Container {
  args?: string[];
  env?: { name?: string; value?: string }[];
  resources?: { limits?: { memory?: string } };
}

/** Flags that limit what clients can make the server hold; the rest need a cluster or are set per phase. */
const LIMIT_FLAG = /^(?:max-|tls-min-version$|tls-cipher-suites$)|timeout/;

export async function readDeployment(help: Map<string, HelpFlag>): Promise<Deployment> {
  const manifest = parse(await readFile(repoPath('manifests/base/deployment.yaml'), 'utf8')) as {
    spec?: { template?: { spec?: { containers?: Container[] } } };
  };
  const container = manifest.spec?.template?.spec?.containers?.[0] ?? {};
  const memory = container.resources?.limits?.memory ?? '256Mi';
  const quantity = /^(\d+)(Mi|Gi)$/.exec(memory);
  const limits = new Map<string, string>();
  for (const arg of container.args ?? []) {
    const match = /^--([a-z0-9-]+)=(.*)$/.exec(arg);
    if (match?.[1] === undefined || match[2] === undefined) continue;
    if (help.has(match[1]) && LIMIT_FLAG.test(match[1]) && !/shutdown/.test(match[1])) limits.set(match[1], match[2]);
  }
  const webhook = parse(await readFile(repoPath('manifests/base/mutatingwebhookconfiguration.yaml'), 'utf8')) as {
    webhooks?: { timeoutSeconds?: number }[];
  };
  return {
    memory,
    memoryMiB: quantity === null ? 256 : Number(quantity[1]) * (quantity[2] === 'Gi' ? 1024 : 1),
    limits,
    nodeOptions: container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value,
    // Kubernetes' default when the field is absent.
    webhookTimeoutSeconds: webhook.webhooks?.[0]?.timeoutSeconds ?? 10,
  };
}
