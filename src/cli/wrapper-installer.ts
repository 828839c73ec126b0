import type { WrapperInstaller } from '../injection/index.js';
import { ENV_DIR } from '../wrapper/env-dir.js';

/**
 * How the injector's own image puts run_with_envs.sh into a pod: the init container that Auto adds runs the
 * CLI's install-wrapper at the path the Dockerfile installs it (the image has no shell or `cp`). Kept at the
 * edge, not in the pure injection core, which only learns "run this command in this image".
 */
export const IMAGE_INSTALL_COMMAND: readonly string[] = [
  'node',
  '/app/dist/cli/main.js',
  'install-wrapper',
  '--dir',
  ENV_DIR,
];

/** `{ wrapper }` for reviews when an image is given, else nothing: serve and inject build it the same way. */
export function wrapperFromImage(image: string | undefined): { wrapper?: WrapperInstaller } {
  return image === undefined ? {} : { wrapper: { image, command: IMAGE_INSTALL_COMMAND } };
}
