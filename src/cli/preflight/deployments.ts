/**
 * What preflight reads off the two Deployments it looks at: the service account upstream's controller runs as,
 * and the options our webhook's `serve` container is given, read by serve's own rows (flags over literal env
 * values over defaults), so that preflight takes the trusted creators and the wrapper image exactly as serve
 * does.
 */
import { readOptions } from '../../options/read-rows.js';
import { SERVE_OPTION_ROWS } from '../serve/option-rows.js';
import { field, type Json, listField, stringField } from './facts.js';

/**
 * The trusted creators manifests/base/deployment.yaml gives serve (a test keeps the two equal): what the check
 * compares with before the webhook is installed, when no `--trusted-creators` is given.
 */
export const INSTALL_TRUSTED_CREATORS = 'system:serviceaccount:sandbox-system:sandbox-controller-manager';

/** How kube-apiserver authenticates a pod's service account: its user name and groups. */
export interface ServiceAccountUser {
  username: string;
  groups: string[];
}

/** The user upstream's controller creates pods as: its pod template's service account, `default` if none. */
export function controllerUser(deployment: Json, fallbackNamespace: string): ServiceAccountUser {
  const namespace = stringField(deployment, 'metadata', 'namespace') ?? fallbackNamespace;
  const template = field(deployment, 'spec', 'template', 'spec');
  const account = stringField(template, 'serviceAccountName') ?? stringField(template, 'serviceAccount') ?? '';
  return {
    username: `system:serviceaccount:${namespace}:${account === '' ? 'default' : account}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

export interface ServeSettings {
  /** The container's image. */
  image: string | undefined;
  trustedCreators: string | undefined;
  wrapperImage: string | undefined;
  agentRuntimeHasWrapper: boolean;
}

export type ServeReading = { ok: true; settings: ServeSettings } | { ok: false; problem: string };

/**
 * The options of the container that runs `serve` (its command and args hold the word). An env value from a
 * Secret or ConfigMap reference is not known here and counts as unset.
 */
export function serveSettings(deployment: Json): ServeReading {
  for (const container of listField(deployment, 'spec', 'template', 'spec', 'containers')) {
    const argv = [...listField(container, 'command'), ...listField(container, 'args')].filter(
      (arg): arg is string => typeof arg === 'string',
    );
    const at = argv.indexOf('serve');
    if (at < 0) continue;
    const env: NodeJS.ProcessEnv = {};
    for (const entry of listField(container, 'env')) {
      const name = stringField(entry, 'name');
      const value = stringField(entry, 'value');
      if (name !== undefined && value !== undefined) env[name] = value;
    }
    const read = readOptions(SERVE_OPTION_ROWS, argv.slice(at + 1), env);
    if (read.kind === 'help') return { ok: false, problem: 'its serve container is given --help' };
    if (read.kind === 'refused') return { ok: false, problem: `its serve options: ${read.problems.join('; ')}` };
    const { trustedCreators, wrapperImage, agentRuntimeHasWrapper } = read.options;
    return {
      ok: true,
      settings: { image: stringField(container, 'image'), trustedCreators, wrapperImage, agentRuntimeHasWrapper },
    };
  }
  return { ok: false, problem: 'no container runs serve' };
}
