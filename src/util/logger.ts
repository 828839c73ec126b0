/** What the server, the watchers and the certificate manager log through; a pino logger satisfies it. */
export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}
