/**
 * A client-node Watch whose requests the test drives: each watch request is recorded and resolves at once; the
 * test sends its events and ends it. A new request is an event the test can wait for.
 */
import { KubeConfig, Watch } from '@kubernetes/client-node';

export interface ScriptedRequest {
  path: string;
  params: Record<string, unknown>;
  event(phase: string, object: unknown): void;
  end(error: unknown): void;
  controller: AbortController;
}

/** A kubeconfig whose server is a loopback port nothing listens on: clients made from it are scripted, never sent. */
export function unreachableKubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return config;
}

export class ScriptedWatch extends Watch {
  readonly requests: ScriptedRequest[] = [];
  private readonly waiters: { path: string | undefined; resolve: (request: ScriptedRequest) => void }[] = [];

  constructor() {
    super(unreachableKubeConfig());
  }

  override watch(
    path: string,
    params: Record<string, unknown>,
    callback: (phase: string, object: unknown) => void,
    done: (error: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    const request = { path, params, event: callback, end: done, controller };
    this.requests.push(request);
    const waiters = this.waiters.filter((w) => w.path === undefined || w.path === path);
    for (const waiter of waiters) this.waiters.splice(this.waiters.indexOf(waiter), 1);
    // Told once the promise chain that asked has taken the controller (ListWatch keeps it to abort on stop).
    setImmediate(() => {
      for (const waiter of waiters) waiter.resolve(request);
    });
    return Promise.resolve(controller);
  }

  /** Resolves with the next watch request made (of `path`, when given), once its caller holds it. */
  nextRequest(path?: string): Promise<ScriptedRequest> {
    return new Promise((resolve) => this.waiters.push({ path, resolve }));
  }
}
