/**
 * API clients whose calls share kept-alive connections.
 *
 * client-node 1.x builds a new `https.Agent` for every API call (`KubeConfig.applySecurityAuthentication`), so
 * every call opens a TCP connection and makes a full TLS handshake, on our side and on kube-apiserver's. A
 * controller that records an Event per delivery, or a webhook that reads a Sandbox on a cache miss, pays that
 * per call. Here the KubeConfig still authenticates each call (its headers are set per call, so a rotated token
 * is used at once), and only the agent it made is swapped for a kept-alive one with the same TLS options. The
 * pool is keyed by those options (CA, client certificate and key, server name, verification), so a rotated
 * client certificate gets connections of its own. A proxy agent, or plain HTTP, is left as client-node made it.
 */
import { createHash } from 'node:crypto';
import type { Agent as HttpAgent } from 'node:http';
import { Agent, type AgentOptions } from 'node:https';
import {
  createConfiguration,
  ServerConfiguration,
  type Configuration,
  type KubeConfig,
  type RequestContext,
  type SecurityAuthentication,
} from '@kubernetes/client-node';

/** Distinct TLS identities kept at once; past it the oldest pool is closed. */
const MAX_IDENTITIES = 4;

const TLS_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized'] as const;

export class KeptAliveAgents {
  private readonly agents = new Map<string, Agent>();

  /** The kept-alive agent for `made`'s TLS options, or `made` itself when it is not a plain HTTPS agent. */
  agentFor(made: HttpAgent): HttpAgent {
    if (!(made instanceof Agent) || made.constructor !== Agent) return made;
    const options = made.options;
    const key = identityOf(options);
    let agent = this.agents.get(key);
    if (agent === undefined) {
      agent = new Agent({ ...pick(options), keepAlive: true, maxFreeSockets: 16 });
      this.agents.set(key, agent);
      for (const [oldKey, old] of this.agents) {
        if (this.agents.size <= MAX_IDENTITIES) break;
        this.agents.delete(oldKey);
        old.destroy();
      }
    }
    made.destroy();
    return agent;
  }
}

/** `kubeConfig.makeApiClient(Api)`, with its calls on `agents`' kept-alive connections. */
export function keptAliveClient<T>(
  kubeConfig: KubeConfig,
  Api: new (configuration: Configuration) => T,
  agents: KeptAliveAgents,
): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const auth: SecurityAuthentication = {
    getName: () => kubeConfig.getName(),
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await kubeConfig.applySecurityAuthentication(context);
      const made = context.getAgent();
      if (made !== undefined) context.setAgent(agents.agentFor(made));
    },
  };
  return new Api(
    createConfiguration({ baseServer: new ServerConfiguration(cluster.server, {}), authMethods: { default: auth } }),
  );
}

function pick(options: AgentOptions): AgentOptions {
  const picked: Record<string, unknown> = {};
  for (const name of TLS_OPTIONS) if (options[name] !== undefined) picked[name] = options[name];
  return picked;
}

function identityOf(options: AgentOptions): string {
  const hash = createHash('sha256');
  for (const name of TLS_OPTIONS) {
    const value: unknown = options[name];
    hash.update(`${name}=`);
    if (value === undefined) hash.update('-');
    else if (typeof value === 'string' || Buffer.isBuffer(value)) hash.update(value);
    else hash.update(JSON.stringify(value));
    hash.update('\0');
  }
  return hash.digest('hex');
}
