/**
 * The yardsticks: a bare Fastify HTTPS server with the webhook's TLS and body limit that parses the review with
 * the same JSON parser and answers it. What the webhook spends beyond this is the cost of its own work.
 *
 * - Without --answer, the parse-only floor: a minimal "allowed" response.
 * - With --answer FILE, the same-answer floor: FILE holds the webhook's own answer to the injecting review, and
 *   every request gets those bytes with its own uid, so the webhook and this server put the same bytes on the
 *   wire and only the work of injecting is left between them.
 * - With --answer FILE --same-work, the same-work floor: the answer's patch operations are read from FILE once,
 *   as plain objects, and every request makes its answer from them as any webhook must: stringify the
 *   operations, UTF-8 and base64 them, and stringify the envelope with the request's uid. It decides nothing,
 *   so it is the least work any webhook does to give this answer on this stack.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    cert: { type: 'string' },
    key: { type: 'string' },
    answer: { type: 'string' },
    uid: { type: 'string' },
    'same-work': { type: 'boolean' },
    ciphers: { type: 'string' },
  },
});
if (values.port === undefined || values.cert === undefined || values.key === undefined) {
  throw new Error(
    'usage: baseline-server --port N --cert FILE --key FILE [--ciphers LIST] [--answer FILE --uid UID [--same-work]]',
  );
}

interface ReviewLike {
  apiVersion?: unknown;
  request?: { uid?: unknown };
}

/**
 * The answer cut around its uid. Only the uid is spliced: re-serializing the rest would add work the webhook
 * does not do (it splices its patch the same way), and would not promise the same bytes.
 */
function answerTemplate(file: string, uid: string | undefined): { head: string; tail: string } {
  if (uid === undefined) throw new Error('--answer needs --uid, the uid the answer was given for');
  const text = readFileSync(file, 'utf8');
  const field = `"uid":${JSON.stringify(uid)}`;
  const at = text.indexOf(field);
  if (at < 0 || text.indexOf(field, at + 1) >= 0)
    throw new Error(`${file}: ${field} is not in the answer exactly once`);
  return { head: text.slice(0, at + '"uid":'.length), tail: text.slice(at + field.length) };
}

interface Answer {
  apiVersion: string;
  kind: string;
  response: { uid: string; patch: string } & Record<string, unknown>;
}

/** The answer's envelope and its patch operations, parsed once: what the same-work floor makes every answer from. */
function answerParts(file: string): { envelope: Answer; operations: unknown[] } {
  const envelope = JSON.parse(readFileSync(file, 'utf8')) as Answer;
  const operations = JSON.parse(Buffer.from(envelope.response.patch, 'base64').toString('utf8')) as unknown[];
  if (!Array.isArray(operations) || operations.length === 0)
    throw new Error(`${file}: the answer carries no patch operations`);
  return { envelope, operations };
}

const sameWork = values['same-work'] === true;
if (sameWork && values.answer === undefined) throw new Error('--same-work needs --answer');
const template = values.answer === undefined || sameWork ? undefined : answerTemplate(values.answer, values.uid);
const parts = sameWork && values.answer !== undefined ? answerParts(values.answer) : undefined;

const app = Fastify({
  // --ciphers: the suite the webhook negotiated, so the bytes are encrypted the same way on both sides.
  https: {
    cert: readFileSync(values.cert),
    key: readFileSync(values.key),
    minVersion: 'TLSv1.2',
    ...(values.ciphers === undefined ? {} : { ciphers: values.ciphers }),
  },
  logger: false,
  bodyLimit: 8 * 1024 * 1024,
});
if (parts !== undefined) {
  const { envelope, operations } = parts;
  app.post('/mutate', (request, reply) => {
    const uid = (request.body as ReviewLike).request?.uid;
    const patch = Buffer.from(JSON.stringify(operations), 'utf8').toString('base64');
    // Spread over the parsed answer, so the fields keep the webhook's order and the bytes can be the same.
    const response = { ...envelope.response, uid: typeof uid === 'string' ? uid : '', patch };
    reply.type('application/json; charset=utf-8');
    return JSON.stringify({ ...envelope, response });
  });
} else if (template === undefined) {
  app.post('/mutate', (request) => {
    const review = request.body as ReviewLike;
    return {
      apiVersion: review.apiVersion,
      kind: 'AdmissionReview',
      response: { uid: review.request?.uid, allowed: true },
    };
  });
} else {
  const { head, tail } = template;
  app.post('/mutate', (request, reply) => {
    const uid = (request.body as ReviewLike).request?.uid;
    // The type the webhook sets, so the headers match too; a string body goes out as it is.
    reply.type('application/json; charset=utf-8');
    return `${head}${JSON.stringify(typeof uid === 'string' ? uid : '')}${tail}`;
  });
}
app.get('/readyz', () => ({ status: 'ready' }));

await app.listen({ host: '127.0.0.1', port: Number(values.port) });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close());
