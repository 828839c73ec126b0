/**
 * The env folder, the contract between run_with_envs.sh (beside this file) and whatever writes a claim's
 * environment: where the folder is in a pod and what its files are called (docs/env-file.md). The webhook mounts
 * the folder and puts the wrapper in front of commands, install-wrapper copies the script into it, and env-file
 * and deliver-env write into it, all with these names; the script spells its own defaults, and
 * test/wrapper/env-dir.test.ts runs it under bash to check that they are these.
 */
import { flatJoin } from '../json/fast-json.js';

/**
 * Where every wrapped pod has the folder. The injection rules fix it (docs/policy.md, "The injection rules"):
 * the webhook mounts the env volume here and wraps commands with the script here, so a writer aimed at any
 * other folder would never release a wrapped command.
 */
export const ENV_DIR = '/var/sandbox';
/** The variable that moves the folder for the script (tests, and tools run outside a pod). */
export const ENV_DIR_VARIABLE = 'SANDBOX_ENV_DIR';

/**
 * The script, in the folder. Run as root, it makes the folder root's and 1755 and itself root's and 0555 before
 * anything else (docs/env-file.md, "Who can change the folder").
 */
export const WRAPPER_SCRIPT = 'run_with_envs.sh';
/**
 * The script as the webhook puts it in front of a wrapped command or exec probe (run by /bin/bash). Every wrapped
 * command in every patch carries it, so it is one flat string.
 */
export const WRAPPER_PATH = flatJoin([ENV_DIR, WRAPPER_SCRIPT], '/');

/** The claim's variables, as shell assignments. */
export const ENV_FILE_NAME = 'env.sh';
/** Exists once env.sh is complete: the wrapper sources env.sh only after it appears. */
export const READY_FILE_NAME = '.env_ready';
/** The FIFO a waiting wrapper blocks on; one byte into it once .env_ready exists starts it at once. */
export const WAKE_FILE_NAME = '.env_wake';
/**
 * Left by deliver-env when it clears a claim from a pod that goes on living (a recycle): the pod has served a
 * claim, and its processes may still hold that claim's variables, so the next claim is not delivered into it
 * unless the operator says their recycler restarts the sandbox (docs/deliver-env.md, "Recycle").
 */
export const RECYCLED_FILE_NAME = '.env_recycled';
