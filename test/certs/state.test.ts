import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { coversNames, createCa, issueServing, serviceSubjectNames, type CertifiedKey } from '../../src/certs/pki.js';
import {
  ANNOTATIONS,
  SECRET_KEYS,
  secretFromState,
  stateFromSecret,
  trustBundle,
  type CertState,
} from '../../src/certs/state.js';

const NOW = new Date('2030-01-01T00:00:00Z');
const names = serviceSubjectNames('sandbox-injector', 'sandbox-system', [
  '127.0.0.1',
  '::1',
  'injector.example.test',
  ' ',
]);

let ca: CertifiedKey;
let nextCa: CertifiedKey;
let strangerCa: CertifiedKey;
let serving: CertifiedKey;
let full: CertState;

beforeAll(async () => {
  [ca, nextCa, strangerCa] = await Promise.all([createCa(NOW, 3650), createCa(NOW, 3650), createCa(NOW, 3650)]);
  serving = await issueServing(ca, names, NOW, 365);
  full = { ca, serving, next: { ca: nextCa, stagedAt: NOW }, previousCaPem: strangerCa.certPem, generation: 7 };
});

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

describe('serving certificate names', () => {
  it('covers the four Service names, the extra DNS names and the extra IPs', () => {
    expect(names).toEqual({
      commonName: 'sandbox-injector.sandbox-system.svc',
      dnsNames: [
        'sandbox-injector',
        'sandbox-injector.sandbox-system',
        'sandbox-injector.sandbox-system.svc',
        'sandbox-injector.sandbox-system.svc.cluster.local',
        'injector.example.test',
      ],
      ipAddresses: ['127.0.0.1', '::1'],
    });
    expect(coversNames(serving.cert, names)).toBe(true);
    expect(serving.cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(coversNames(serving.cert, serviceSubjectNames('other', 'sandbox-system'))).toBe(false);
  });

  it('signs with a CA that is a CA, and gives each CA its own subject', () => {
    // forge writes names as PrintableString; Go's x509 refuses characters outside its alphabet.
    for (const cert of [ca.cert, serving.cert]) expect(cert.subject).toMatch(/^CN=[A-Za-z0-9 '()+,\-./:=?]+$/);
    expect(ca.cert.ca).toBe(true);
    expect(serving.cert.ca).toBe(false);
    expect(ca.cert.subject).not.toBe(nextCa.cert.subject);
    expect(serving.cert.verify(ca.cert.publicKey)).toBe(true);
  });
});

describe('the Secret', () => {
  it('round-trips every key and annotation, in an Opaque Secret when it has no type yet', () => {
    const secret = secretFromState(full, 'sandbox-injector-tls', 'sandbox-system');
    expect(secret.type).toBe('Opaque');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(Object.values(SECRET_KEYS).sort());
    expect(secret.metadata?.annotations).toMatchObject({
      [ANNOTATIONS.generation]: '7',
      [ANNOTATIONS.nextCaStagedAt]: NOW.toISOString(),
    });
    const back = stateFromSecret(secret);
    expect(back.ca?.certPem).toBe(ca.certPem);
    expect(back.serving?.keyPem).toBe(serving.keyPem);
    expect(back.next?.ca.certPem).toBe(nextCa.certPem);
    expect(back.next?.stagedAt).toEqual(NOW);
    expect(back.previousCaPem).toBe(strangerCa.certPem);
    expect(back.generation).toBe(7);
  });

  it('keeps metadata others set, carries the resourceVersion, and drops managedFields', () => {
    const base: V1Secret = {
      metadata: {
        name: 'sandbox-injector-tls',
        resourceVersion: '42',
        annotations: { 'team/owner': 'platform', [ANNOTATIONS.nextCaStagedAt]: 'x' },
        labels: { tier: 'infra' },
        managedFields: [{ manager: 'kubectl' }],
      },
    };
    const secret = secretFromState({ ...full, next: undefined }, 'sandbox-injector-tls', 'sandbox-system', base);
    expect(secret.metadata?.resourceVersion).toBe('42');
    expect(secret.metadata?.managedFields).toBeUndefined();
    expect(secret.metadata?.annotations).toEqual({ 'team/owner': 'platform', [ANNOTATIONS.generation]: '7' });
    expect(secret.metadata?.labels).toEqual({ tier: 'infra' });
  });

  it('keeps the type the Secret was made with, which the API server never lets change', () => {
    for (const type of ['Opaque', 'kubernetes.io/tls']) {
      const base: V1Secret = { type, metadata: { name: 'sandbox-injector-tls', resourceVersion: '1' } };
      expect(secretFromState(full, 'sandbox-injector-tls', 'sandbox-system', base).type).toBe(type);
    }
  });

  it('reads damaged or mismatched entries as absent', () => {
    const data = secretFromState(full, 'n', 'ns').data ?? {};
    const damaged = stateFromSecret({ data: { ...data, [SECRET_KEYS.caKey]: b64(nextCa.keyPem) } });
    expect(damaged.ca).toBeUndefined();
    // Without its CA the serving pair cannot be checked, so it goes too.
    expect(damaged.serving).toBeUndefined();

    const foreignServing = stateFromSecret({
      data: { ...data, [SECRET_KEYS.ca]: b64(strangerCa.certPem), [SECRET_KEYS.caKey]: b64(strangerCa.keyPem) },
    });
    expect(foreignServing.ca?.certPem).toBe(strangerCa.certPem);
    expect(foreignServing.serving).toBeUndefined();

    const junk = stateFromSecret({
      data: { ...data, [SECRET_KEYS.previousCa]: b64('not a certificate'), [SECRET_KEYS.nextCaKey]: b64('') },
    });
    expect(junk.previousCaPem).toBeUndefined();
    expect(junk.next).toBeUndefined();
    expect(junk.serving).toBeDefined();

    // A serving certificate is not accepted as a CA.
    const leafAsCa = stateFromSecret({
      data: { [SECRET_KEYS.ca]: b64(serving.certPem), [SECRET_KEYS.caKey]: b64(serving.keyPem) },
    });
    expect(leafAsCa.ca).toBeUndefined();
    expect(stateFromSecret({}).generation).toBe(0);
  });

  it('dates a staged CA without a readable time at the epoch, so it gets promoted', () => {
    const secret = secretFromState(full, 'n', 'ns');
    const annotations = { ...(secret.metadata?.annotations ?? {}), [ANNOTATIONS.nextCaStagedAt]: 'soon' };
    expect(stateFromSecret({ ...secret, metadata: { annotations } }).next?.stagedAt.getTime()).toBe(0);
  });
});

describe('trustBundle', () => {
  it('lists previous, current and next CA, oldest first, without duplicates', () => {
    expect(trustBundle(full)).toEqual([strangerCa.certPem, ca.certPem, nextCa.certPem]);
    expect(trustBundle({ ...full, previousCaPem: ca.certPem.replace(/\n/g, '\r\n'), next: undefined })).toEqual([
      ca.certPem,
    ]);
    for (const pem of trustBundle(full)) expect(new X509Certificate(pem).ca).toBe(true);
  });
});
