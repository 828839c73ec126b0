/**
 * A request the env-file writer refuses or cannot carry out. Its message is meant for the person or
 * controller that made the request, so callers (the CLI) print it as-is instead of a stack trace.
 */
export class EnvFileError extends Error {
  override readonly name = 'EnvFileError';
}
