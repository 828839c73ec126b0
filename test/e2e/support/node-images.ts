// The e2e node's images. There is no registry: each is built here with buildah (on the image test's storage and
// its stand-in bases, test/e2e/image/stand-in-bases.sh), saved as a docker archive and imported into the node's
// containerd (`ctr -n k8s.io images import`); pods name them with `imagePullPolicy: Never`.
//
// - pause: our own static binary (tools-node/pause), the pod sandbox's process;
// - the project's image, from the Dockerfile as it is: the wrapper init container runs its install-wrapper;
// - app: the Debian stand-in base with bash; its own entrypoint prints a line and stays up;
// - agent-runtime: a stand-in whose sidecar copies envd and envd-run.sh into the shared volume as upstream's
//   does (test/e2e/node/agent-runtime); its envd is our double of envd's file API, not the real envd.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { repoRoot } from './binaries.js';
import type { Containerd } from './containerd.js';
import { PAUSE_IMAGE } from './containerd.js';
import { buildImage, standInBuildah, type Buildah } from './image-build.js';

export const IMAGES = {
  pause: PAUSE_IMAGE,
  injector: 'localhost/sandbox-injector:node-e2e',
  app: 'localhost/app:e2e',
  agentRuntime: 'localhost/agent-runtime:e2e',
} as const;

/** What the app image's own entrypoint prints first. */
export const APP_ENTRYPOINT_LINE = 'app image entrypoint';

const STAND_IN_BASE = 'docker.io/library/node:26-trixie-slim';
const AGENT_RUNTIME_DIR = path.join(repoRoot, 'test', 'e2e', 'node', 'agent-runtime');
/** The double's modules: itself and the local modules it imports, each imported as `./<name>.js`. */
const ENVD_MODULES = ['envd-double', 'multipart-reader', 'wait-until'];

// The double's own module, run by the stand-in's envd in the main container; /var/sandbox is the pod's volume.
const ENVD_MAIN = `import { startEnvdDouble } from './envd-double.mjs';
const port = Number(process.env.ENVD_PORT ?? '49983');
const envd = await startEnvdDouble({ root: '/var/sandbox', port });
process.stdout.write('envd stand-in listening on ' + envd.url + '\\n');
`;

async function fromBase(buildah: Buildah, base: string): Promise<string> {
  return (await buildah(['from', '--pull=never', '--quiet', base])).trim();
}

async function commit(buildah: Buildah, container: string, tag: string): Promise<void> {
  await buildah(['rmi', '--force', tag]).catch(() => undefined);
  await buildah(['commit', '--quiet', '--rm', container, tag]);
}

async function buildPause(buildah: Buildah, pauseBinary: string): Promise<void> {
  const ctr = await fromBase(buildah, 'scratch');
  await buildah(['copy', '--quiet', '--chmod', '0755', ctr, pauseBinary, '/pause']);
  await buildah(['config', '--entrypoint', '["/pause"]', '--cmd', '', ctr]);
  await commit(buildah, ctr, IMAGES.pause);
}

async function buildApp(buildah: Buildah): Promise<void> {
  const ctr = await fromBase(buildah, STAND_IN_BASE);
  const entrypoint = JSON.stringify(['/bin/bash', '-c', `echo "${APP_ENTRYPOINT_LINE}"; exec sleep infinity`]);
  await buildah(['config', '--entrypoint', entrypoint, '--cmd', '', ctr]);
  await commit(buildah, ctr, IMAGES.app);
}

async function buildAgentRuntime(buildah: Buildah, scratch: string): Promise<void> {
  const files = path.join(scratch, 'agent-runtime');
  mkdirSync(path.join(files, 'envd-js'), { recursive: true });
  for (const name of ['entrypoint.sh', 'envd-run.sh', 'envd']) {
    copyFileSync(path.join(AGENT_RUNTIME_DIR, name), path.join(files, name));
  }
  // The double is TypeScript with type annotations only: stripped, it runs on the image's node as it is, its
  // modules as .mjs (the folder has no package.json to make .js a module) and its imports of them to match.
  for (const name of ENVD_MODULES) {
    const source = readFileSync(path.join(repoRoot, 'test', 'support', `${name}.ts`), 'utf8');
    let stripped = stripTypeScriptTypes(source, { mode: 'strip' });
    for (const local of ENVD_MODULES) stripped = stripped.replaceAll(`'./${local}.js'`, `'./${local}.mjs'`);
    writeFileSync(path.join(files, 'envd-js', `${name}.mjs`), stripped);
  }
  writeFileSync(path.join(files, 'envd-js', 'main.mjs'), ENVD_MAIN);
  const ctr = await fromBase(buildah, STAND_IN_BASE);
  await buildah(['copy', '--quiet', ctr, files, '/workspace']);
  await buildah(['config', '--workingdir', '/workspace', '--entrypoint', '["sh","/workspace/entrypoint.sh"]', ctr]);
  await buildah(['config', '--cmd', '', ctr]);
  await commit(buildah, ctr, IMAGES.agentRuntime);
}

/** Builds every image and imports it into the node's containerd. */
export async function loadNodeImages(containerd: Containerd, pauseBinary: string): Promise<void> {
  const buildah = await standInBuildah();
  const scratch = mkdtempSync(path.join(buildah.storage, '..', 'node-images-'));
  try {
    await buildPause(buildah, pauseBinary);
    await buildApp(buildah);
    await buildAgentRuntime(buildah, scratch);
    const built = await buildImage(buildah, IMAGES.injector);
    if (!built.ok) throw new Error(`the Dockerfile did not build:\n${built.output}`);
    for (const tag of Object.values(IMAGES)) {
      const archive = path.join(scratch, `${tag.replace(/[^a-z0-9]+/g, '-')}.tar`);
      await buildah(['push', '--quiet', tag, `docker-archive:${archive}:${tag}`], { timeoutMs: 300_000 });
      await containerd.ctr(['images', 'import', archive]);
      rmSync(archive);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
