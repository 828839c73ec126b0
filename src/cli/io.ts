import { open } from 'node:fs/promises';
import secureJson from 'secure-json-parse';
import { DEFAULT_TRANSPORT_LIMITS } from '../server/transport.js';
import { errorMessage } from '../errors/error-message.js';

/**
 * The most the CLI reads from one input: the server's default body limit, since `review` and `inject` must
 * answer what the server would (a larger input would only be refused there), and an unbounded read of a huge
 * file takes memory out of all proportion.
 */
export const MAX_INPUT_BYTES = DEFAULT_TRANSPORT_LIMITS.maxBodyBytes;

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * Reads a file, or standard input for `-`, up to MAX_INPUT_BYTES. Read errors become messages that name the
 * file.
 */
export async function readInput(path: string, io: CliIo): Promise<string> {
  if (path === '-') return readStream(io.stdin, 'standard input');
  let file;
  try {
    file = await open(path, 'r');
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${errorMessage(error)}`);
  }
  try {
    const { size } = await file.stat();
    if (size > MAX_INPUT_BYTES) throw tooLarge(path);
    return await readStream(file.createReadStream({ encoding: undefined }), path);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read ${path}: ${errorMessage(error)}`);
  } finally {
    await file.close();
  }
}

/** Stops reading as soon as the input passes the limit, so a huge pipe never sits in memory whole. */
async function readStream(stream: NodeJS.ReadableStream, origin: string): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    total += buffer.length;
    if (total > MAX_INPUT_BYTES) throw tooLarge(origin);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function tooLarge(origin: string): CliError {
  return new CliError(`${origin} is larger than ${MAX_INPUT_BYTES} bytes, the most the webhook accepts`);
}

/**
 * JSON as the server's body parser reads it: a `__proto__` key or a `constructor.prototype` is refused, not
 * taken as data, so `review` answers exactly what the server would.
 */
export function parseJsonInput(text: string, origin: string): unknown {
  try {
    return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }) as unknown;
  } catch (error) {
    throw new CliError(`${origin}: not valid JSON: ${errorMessage(error)}`);
  }
}

/** The same refusal for a value parsed some other way (a YAML manifest). */
export function refusePrototypeKeys(value: unknown, origin: string): void {
  if (value === null || typeof value !== 'object') return;
  try {
    secureJson.scan(value, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw new CliError(`${origin}: ${errorMessage(error)}`);
  }
}

export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(text.endsWith('\n') ? text : `${text}\n`);
}
