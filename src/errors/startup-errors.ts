/** Startup errors: the process refuses to start (the status is its exit status), or refuses a file it reads. */
import { define } from './failure.js';

export const STARTUP_ERRORS = {
  optionsInvalid: define(
    'SI_OPTIONS_INVALID',
    2,
    'startup',
    'a flag or environment variable of serve or deliver-env is unknown, malformed or conflicts with another (exit 2)',
    (problems: readonly string[]) => problems.join('; '),
  ),
  configMapManifestInvalid: define(
    'SI_CONFIGMAP_MANIFEST_INVALID',
    1,
    'startup',
    'a --config-file is not exactly one ConfigMap with string values (serve keeps its last valid data)',
    // The problem starts with the file's name: the YAML reader words it so (src/kube-shapes/one-yaml-document.ts).
    (problem: string) => problem,
  ),
  configDirectoryMissing: define(
    'SI_CONFIG_DIR_MISSING',
    1,
    'startup',
    'the directory of --config-file does not exist or is not a directory (it is watched for the file to appear)',
    (file: string, dir: string, problem: string) => `--config-file ${file}: the directory ${dir} ${problem}`,
  ),
  tlsUnreadable: define(
    'SI_TLS_READ',
    1,
    'startup',
    'a certificate, key or client CA file cannot be read (a reload keeps the pair in use)',
    (path: string, reason: string) => `cannot read ${path}: ${reason}`,
  ),
  tlsCertificateInvalid: define(
    'SI_TLS_CERT',
    1,
    'startup',
    'the serving certificate is not valid PEM',
    (what: string, reason: string) => `${what} is not valid PEM: ${reason}`,
  ),
  tlsKeyInvalid: define(
    'SI_TLS_KEY',
    1,
    'startup',
    'the serving key is not valid PEM',
    (what: string, reason: string) => `${what} is not valid PEM: ${reason}`,
  ),
  tlsKeyMismatch: define(
    'SI_TLS_KEY_MISMATCH',
    1,
    'startup',
    'the key does not belong to the certificate',
    (key: string, cert: string) => `private key ${key} does not match certificate ${cert}`,
  ),
  tlsClientCaInvalid: define(
    'SI_TLS_CLIENT_CA',
    1,
    'startup',
    'the --tls-client-ca-file is not valid PEM',
    (what: string, reason: string) => `${what} is not valid PEM: ${reason}`,
  ),
  certificateConflict: define(
    'SI_CERT_CONFLICT',
    1,
    'startup',
    'self-managed certificates: the Secret or the caBundle kept changing under every read-modify-write attempt',
    (what: string, attempts: number) => `${what} kept changing under ${attempts} read-modify-write attempts`,
  ),
  certificateSecretMissing: define(
    'SI_CERT_SECRET_MISSING',
    1,
    'startup',
    'self-managed certificates: the Secret --cert-secret-name names does not exist; the install makes it, the webhook never creates it (retried until it exists)',
    (secret: string) =>
      `Secret ${secret} does not exist: self-managed certificates fill the Secret the install makes (manifests/base/certificate-secret.yaml, or the chart) and never create one; apply it, or check --cert-namespace and --cert-secret-name`,
  ),
} as const;
