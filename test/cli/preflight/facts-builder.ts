// Facts as preflight reads them from a good install, and helpers to spoil one part at a time.
import type { Json, PreflightFacts, Read } from '../../../src/cli/preflight/facts.js';

export const NOW = Date.parse('2026-05-01T12:00:00Z');

export const found = <T = Json>(object: T): Read<T> => ({ state: 'found', object });
export const ABSENT = { state: 'absent' } as const;
export const unreadable = (error: string): Read<never> => ({ state: 'unreadable', error });

export function crd(versions: Json[] = [{ name: 'v1alpha1', served: true, storage: true }], established = true): Json {
  return {
    metadata: { name: 'sandboxes.agents.kruise.io' },
    spec: { versions },
    status: { conditions: [{ type: 'Established', status: established ? 'True' : 'False' }] },
  };
}

export const AGENT_KEY = JSON.stringify({ csiSidecar: [{ name: 'agent-runtime', image: 'r.example/a:1' }] });

export function deployment(namespace: string, name: string, spec: Json): Json {
  return { metadata: { namespace, name }, spec: { template: { spec } } };
}

export function injectorDeployment(args: string[], env: Json[] = [], image = 'ghcr.io/o/sandbox-injector:1'): Json {
  return deployment('sandbox-injector-system', 'sandbox-injector', {
    containers: [{ name: 'sandbox-injector', image, args: ['serve', ...args], env }],
  });
}

export function webhookConfiguration(caBundle = 'LS0tLS1CRUdJTg=='): Json {
  return {
    metadata: { name: 'sandbox-injector' },
    webhooks: [
      {
        name: 'sandbox-injector.agents.kruise.io',
        clientConfig: {
          service: { namespace: 'sandbox-injector-system', name: 'sandbox-injector', path: '/mutate' },
          ...(caBundle === '' ? {} : { caBundle }),
        },
      },
    ],
  };
}

export function slice(ready: boolean | undefined, addresses = ['10.0.0.7']): Json {
  return { endpoints: [{ addresses, ...(ready === undefined ? {} : { conditions: { ready } }) }] };
}

export function lease(holder: string, renewedAt: number, seconds = 15): Json {
  return {
    metadata: { namespace: 'sandbox-system', name: 'sandbox-injector-deliver-env' },
    spec: { holderIdentity: holder, leaseDurationSeconds: seconds, renewTime: new Date(renewedAt).toISOString() },
  };
}

export function sandbox(name: string, options: { auto?: boolean; pullSecret?: boolean; account?: string } = {}): Json {
  return {
    metadata: { namespace: 'team-a', name },
    spec: {
      ...(options.auto === true ? { envVarsInjectionPolicy: 'Auto' } : {}),
      template: {
        spec: {
          containers: [{ name: 'main', image: 'python:3.12' }],
          ...(options.pullSecret === true ? { imagePullSecrets: [{ name: 'regcred' }] } : {}),
          ...(options.account === undefined ? {} : { serviceAccountName: options.account }),
        },
      },
    },
  };
}

/** Every check passes on these. */
export function goodFacts(): PreflightFacts {
  return {
    now: NOW,
    version: found({ major: '1', minor: '31', gitVersion: 'v1.31.2' }),
    crd: found(crd()),
    configMap: {
      namespace: 'sandbox-system',
      name: 'sandbox-injection-config',
      read: found({ data: { 'agent-runtime': AGENT_KEY, csi: AGENT_KEY } }),
    },
    controller: {
      namespace: 'sandbox-system',
      name: 'sandbox-controller-manager',
      read: found(
        deployment('sandbox-system', 'sandbox-controller-manager', {
          serviceAccountName: 'sandbox-controller-manager',
        }),
      ),
    },
    trustedCreatorsFlag: undefined,
    webhookConfiguration: { name: 'sandbox-injector', read: found(webhookConfiguration()) },
    injector: {
      namespace: 'sandbox-injector-system',
      name: 'sandbox-injector',
      read: found(
        injectorDeployment(
          ['--trusted-creators=system:serviceaccount:sandbox-system:sandbox-controller-manager'],
          [{ name: 'SANDBOX_INJECTOR_WRAPPER_IMAGE', value: 'ghcr.io/o/sandbox-injector:1' }],
        ),
      ),
    },
    endpointSlices: { namespace: 'sandbox-injector-system', name: 'sandbox-injector', read: found([slice(true)]) },
    sandboxes: found([sandbox('plain'), sandbox('wrapped', { auto: true })]),
    autoFlag: false,
    lease: {
      namespace: 'sandbox-system',
      name: 'sandbox-injector-deliver-env',
      read: found(lease('pod-a_1', NOW - 3000)),
    },
    imageFlag: undefined,
    serviceAccounts: new Map(),
    beforeInstall: false,
  };
}
