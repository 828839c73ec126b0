import { request, type RequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../../errors/error-message.js';
import { CliError, parseJsonInput } from '../io.js';

/** More than any object explain reads (a pod is at most the webhook's body limit); a bigger answer is refused. */
const MAX_OBJECT_BYTES = 16 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * One-off GETs through the kubeconfig's credentials and agent (TLS, proxy-url), as client-node applies them.
 * The objects are kept as the API server sent them: client-node's typed readers turn timestamps into Dates and
 * drop fields they do not know, and explain must review the very pod the server would see.
 */
export class ClusterReads {
  private constructor(private readonly kubeConfig: KubeConfig) {}

  static fromFile(path: string): ClusterReads {
    const kubeConfig = new KubeConfig();
    try {
      kubeConfig.loadFromFile(path);
    } catch (error) {
      throw new CliError(`--kubeconfig ${path}: ${errorMessage(error)}`);
    }
    return new ClusterReads(kubeConfig);
  }

  /** The current context's namespace, as kubectl takes it for objects that name none. */
  defaultNamespace(): string {
    return this.kubeConfig.getContextObject(this.kubeConfig.getCurrentContext())?.namespace ?? 'default';
  }

  /** The object at `path` (e.g. `/api/v1/namespaces/x`), or undefined when the API server answers 404. */
  async get(path: string): Promise<Record<string, unknown> | undefined> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null) throw new CliError('the kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/$/, '') + path);
    if (url.protocol !== 'https:')
      throw new CliError(`${cluster.server}: the CLI talks to the API server over https only`);
    const options: RequestOptions = {
      method: 'GET',
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? 443 : Number(url.port),
      path: url.pathname + url.search,
      headers: { Accept: 'application/json' },
      timeout: REQUEST_TIMEOUT_MS,
    };
    await this.kubeConfig.applyToHTTPSOptions(options);
    const { status, body } = await send(options, url.href);
    if (status === 404) return undefined;
    if (status < 200 || status > 299) throw new CliError(`GET ${path}: ${status}: ${statusMessage(body)}`);
    const value = parseJsonInput(body, `GET ${path}`);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new CliError(`GET ${path}: not an object`);
    return value as Record<string, unknown>;
  }
}

function send(options: RequestOptions, href: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      let total = 0;
      res.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > MAX_OBJECT_BYTES) {
          req.destroy(new CliError(`GET ${href}: the answer is larger than ${MAX_OBJECT_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new CliError(`GET ${href}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
    req.on('error', (error) =>
      reject(error instanceof CliError ? error : new CliError(`GET ${href}: ${errorMessage(error)}`)),
    );
    req.end();
  });
}

/** A Status object's message, else the start of the body. */
function statusMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: shown as it is
  }
  return body.slice(0, 200);
}
