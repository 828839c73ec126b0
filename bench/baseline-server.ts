/**
 * The yardstick: a bare Fastify HTTPS server with the webhook's TLS and body limit that only parses the
 * review and answers a minimal "allowed" response. Whatever the webhook spends beyond this is the cost of
 * injecting, logging and counting.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values } = parseArgs({
  options: { port: { type: 'string' }, cert: { type: 'string' }, key: { type: 'string' } },
});
if (values.port === undefined || values.cert === undefined || values.key === undefined) {
  throw new Error('usage: baseline-server --port N --cert FILE --key FILE');
}

interface ReviewLike {
  apiVersion?: unknown;
  request?: { uid?: unknown };
}

const app = Fastify({
  https: { cert: readFileSync(values.cert), key: readFileSync(values.key), minVersion: 'TLSv1.2' },
  logger: false,
  bodyLimit: 8 * 1024 * 1024,
});
app.post('/mutate', (request) => {
  const review = request.body as ReviewLike;
  return { apiVersion: review.apiVersion, kind: 'AdmissionReview', response: { uid: review.request?.uid, allowed: true } };
});
app.get('/readyz', () => ({ status: 'ready' }));

await app.listen({ host: '127.0.0.1', port: Number(values.port) });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close());
