/** serve's options: flags over env over defaults, validated once, frozen, with problems that name the flag. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CONFIG_FILE,
  injectionSettings,
  parseServeOptions,
  serveUsage,
  tlsPolicyOf,
  transportLimits,
  type ServeOptions,
} from '../../../src/cli/serve/options.js';
import { IMAGE_INSTALL_COMMAND } from '../../../src/cli/wrapper-installer.js';

function options(argv: string[], env: NodeJS.ProcessEnv = {}, fileExists = noFileLookups): Readonly<ServeOptions> {
  const parsed = parseServeOptions(argv, env, fileExists);
  if (parsed.kind !== 'options') throw new Error(`expected options, got ${JSON.stringify(parsed)}`);
  return parsed.options;
}

// Outside a pod the parser has no reason to look at the filesystem; a test that expects a lookup passes its own.
function noFileLookups(path: string): boolean {
  throw new Error(`unexpected lookup of ${path}`);
}

function problemsOf(argv: string[], env: NodeJS.ProcessEnv = {}, fileExists = noFileLookups): readonly string[] {
  const parsed = parseServeOptions(argv, env, fileExists);
  if (parsed.kind !== 'refused') throw new Error(`expected the options refused, got ${JSON.stringify(parsed)}`);
  return parsed.problems;
}

describe('parseServeOptions', () => {
  it('has working defaults with no flags and no env', () => {
    expect(options([])).toEqual({
      host: '0.0.0.0',
      port: 8443,
      metricsPort: 9090,
      configFile: DEFAULT_CONFIG_FILE,
      selfSignedDir: 'certs',
      logLevel: 'info',
      shutdownDelayMs: 0,
      shutdownTimeoutMs: 25_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 120_000,
      maxConnections: 256,
      slowClientGraceMs: 1000,
      maxBodyBytes: 4 * 1024 * 1024,
      maxInflightBytes: 16 * 1024 * 1024,
      maxUnreadBytes: 64 * 1024,
      tlsMinVersion: 'VersionTLS12',
      tlsCipherSuites:
        'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,' +
        'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,' +
        'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
      configNamespace: 'sandbox-system',
      configName: 'sandbox-injection-config',
      allowAnnotationRuntimes: false,
      agentRuntimeHasWrapper: false,
      postStartConflict: 'skip',
      certMode: 'auto',
      certNamespace: 'sandbox-injector-system',
      certSecretName: 'sandbox-injector-tls',
      serviceName: 'sandbox-injector',
      webhookConfigName: 'sandbox-injector',
      certDir: 'certs/self-managed',
      certPollMs: 60_000,
      mode: 'local',
      trusted: undefined,
      warnUnwrapped: false,
    });
    expect(DEFAULT_CONFIG_FILE).toMatch(/\/manifests\/components\/injection-config\/injection-config\.yaml$/);
  });

  it('parses the cluster-mode flags and checks the certificate mode against the files given', () => {
    expect(
      options([
        '--kubeconfig',
        '/k',
        '--allow-annotation-runtimes',
        '--cert-mode',
        'self-managed',
        '--cert-extra-sans',
        '127.0.0.1',
      ]),
    ).toMatchObject({
      kubeconfig: '/k',
      allowAnnotationRuntimes: true,
      certMode: 'self-managed',
      certExtraSans: '127.0.0.1',
    });
    expect(problemsOf(['--cert-mode', 'files']).join('\n')).toMatch(
      /--cert-mode \(SANDBOX_INJECTOR_CERT_MODE\) files needs --tls-cert-file/,
    );
    expect(problemsOf(['--cert-mode', 'self-managed']).join('\n')).toMatch(
      /--cert-mode \(SANDBOX_INJECTOR_CERT_MODE\) self-managed needs cluster mode: give --kubeconfig/,
    );
    expect(problemsOf(['--cert-mode', 'magic']).join('\n')).toMatch(
      /--cert-mode .*must be equal to one of the allowed values \(auto, files, self-managed\)/,
    );
    expect(problemsOf(['--config-namespace', 'Bad_NS']).join('\n')).toMatch(/--config-namespace/);
  });

  it('chooses cluster mode for a kubeconfig, or in a pod whose service-account token is mounted', () => {
    const token = '/var/run/secrets/kubernetes.io/serviceaccount/token';
    const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    const asked: string[] = [];
    const tokenMounted = (path: string): boolean => {
      asked.push(path);
      return true;
    };
    expect(options([]).mode).toBe('local');
    expect(options(['--kubeconfig', '/k']).mode).toBe('cluster');
    expect(options([], { SANDBOX_INJECTOR_KUBECONFIG: '/k', ...pod }).mode).toBe('cluster');
    expect(options([], pod, tokenMounted).mode).toBe('cluster');
    expect(asked).toEqual([token]);
    // automountServiceAccountToken: false leaves the variable but no token to authenticate with.
    expect(options([], pod, () => false).mode).toBe('local');
    expect(problemsOf(['--port', 'x'], pod)).toEqual(['--port (SANDBOX_INJECTOR_PORT): must be integer']);
  });

  it('parses how reviews inject: --poststart-conflict, and --agent-runtime-has-wrapper over --wrapper-image', () => {
    expect(injectionSettings(options([]))).toEqual({ postStartConflict: 'skip', warnUnwrapped: false });
    expect(injectionSettings(options(['--poststart-conflict=merge', '--wrapper-image', 'inj:1']))).toEqual({
      postStartConflict: 'merge',
      warnUnwrapped: false,
      wrapper: { image: 'inj:1', command: IMAGE_INSTALL_COMMAND },
    });
    expect(injectionSettings(options(['--wrapper-image', 'inj:1', '--agent-runtime-has-wrapper']))).toEqual({
      postStartConflict: 'skip',
      warnUnwrapped: false,
    });
    expect(injectionSettings(options(['--warn-unwrapped'])).warnUnwrapped).toBe(true);
    expect(problemsOf(['--poststart-conflict', 'chain']).join('\n')).toMatch(
      /--poststart-conflict .*allowed values \(skip, merge\)/,
    );
  });

  it('turns the limit flags into the transport limits, in milliseconds and bytes', () => {
    const parsed = options(
      [
        '--request-timeout',
        '12s',
        '--idle-timeout=1m35s',
        '--max-connections',
        '64',
        '--max-unread-bytes',
        '0',
        '--slow-client-grace',
        '250ms',
      ],
      { SANDBOX_INJECTOR_MAX_BODY_BYTES: '2097152', SANDBOX_INJECTOR_MAX_INFLIGHT_BYTES: '8388608' },
    );
    expect(transportLimits(parsed)).toEqual({
      requestTimeoutMs: 12_000,
      idleTimeoutMs: 95_000,
      maxConnections: 64,
      slowClientGraceMs: 250,
      maxBodyBytes: 2_097_152,
      maxInflightBytes: 8_388_608,
      maxUnreadBytes: 0,
    });
    expect(problemsOf(['--max-body-bytes', '8388608', '--max-inflight-bytes', '4194304']).join('\n')).toMatch(
      /--max-inflight-bytes \(SANDBOX_INJECTOR_MAX_INFLIGHT_BYTES\) must be at least --max-body-bytes/,
    );
    expect(problemsOf(['--request-timeout', '0']).join('\n')).toMatch(/--request-timeout .*must be at least 1s/);
  });

  it('takes every duration as a Go duration, from a flag or its env var, into milliseconds', () => {
    expect(
      options(['--shutdown-delay=5s', '--shutdown-timeout', '1m30s', '--cert-poll', '1h'], {
        SANDBOX_INJECTOR_REQUEST_TIMEOUT: '10s',
        SANDBOX_INJECTOR_SLOW_CLIENT_GRACE: '1500ms',
      }),
    ).toMatchObject({
      shutdownDelayMs: 5000,
      shutdownTimeoutMs: 90_000,
      certPollMs: 3_600_000,
      requestTimeoutMs: 10_000,
      slowClientGraceMs: 1500,
    });
    expect(problemsOf(['--request-timeout', '10'])).toEqual([
      '--request-timeout (SANDBOX_INJECTOR_REQUEST_TIMEOUT): "10" has no unit: add one, such as 10s or 10ms',
    ]);
    expect(problemsOf([], { SANDBOX_INJECTOR_CERT_POLL: '2d' })).toEqual([
      expect.stringMatching(/^--cert-poll \(SANDBOX_INJECTOR_CERT_POLL\): "2d" has an unknown unit "d"/),
    ]);
    expect(problemsOf(['--shutdown-delay', '11m'])).toEqual([
      '--shutdown-delay (SANDBOX_INJECTOR_SHUTDOWN_DELAY): must be at most 10m',
    ]);
  });

  it.each([
    ['--shutdown-delay-seconds', '5', '--shutdown-delay, which takes a duration such as 5s'],
    ['--shutdown-timeout-seconds', '25', '--shutdown-timeout, which takes a duration such as 25s'],
    ['--request-timeout-seconds', '10', '--request-timeout, which takes a duration such as 10s'],
    ['--idle-timeout-seconds', '120', '--idle-timeout, which takes a duration such as 120s'],
    ['--slow-client-grace-milliseconds', '250', '--slow-client-grace, which takes a duration such as 250ms'],
    ['--cert-poll-seconds', '60', '--cert-poll, which takes a duration such as 60s'],
  ])('refuses the old %s, naming its new form', (flag, value, now) => {
    expect(problemsOf([flag, value])).toEqual([`${flag} is now ${now}`]);
    const oldEnv = `SANDBOX_INJECTOR_${flag.slice(2).toUpperCase().replaceAll('-', '_')}`;
    const newEnv = `SANDBOX_INJECTOR_${now.split(',')[0]?.slice(2).toUpperCase().replaceAll('-', '_')}`;
    expect(problemsOf([], { [oldEnv]: value })).toEqual([`${oldEnv} is now ${newEnv}${now.slice(now.indexOf(','))}`]);
  });

  it('maps --tls-min-version and --tls-cipher-suites from kube-apiserver names to OpenSSL ones', () => {
    expect(tlsPolicyOf(options([]))).toMatchObject({
      minVersion: 'TLSv1.2',
      ciphers:
        'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:' +
        'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:' +
        'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
    });
    const narrow = options([
      '--tls-min-version',
      'VersionTLS13',
      '--tls-cipher-suites',
      'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305, TLS_AES_128_GCM_SHA256,',
    ]);
    expect(tlsPolicyOf(narrow)).toMatchObject({
      minVersion: 'TLSv1.3',
      ciphers: 'ECDHE-RSA-CHACHA20-POLY1305:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
    });
  });

  it.each([
    [
      ['--tls-cipher-suites', 'TLS_RSA_WITH_AES_128_GCM_SHA256'],
      'cipher suite TLS_RSA_WITH_AES_128_GCM_SHA256 is refused: static RSA key exchange (no forward secrecy)',
    ],
    [
      ['--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA'],
      'cipher suite TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA is refused: not an AEAD cipher',
    ],
    [
      ['--tls-cipher-suites', 'TLS_RSA_WITH_AES_128_CBC_SHA'],
      'static RSA key exchange (no forward secrecy), not an AEAD cipher',
    ],
    [
      ['--tls-cipher-suites', 'ECDHE-RSA-AES128-GCM-SHA256'],
      'unknown cipher suite ECDHE-RSA-AES128-GCM-SHA256; allowed: TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
    ],
    [['--tls-cipher-suites', 'TLS_AES_128_GCM_SHA256'], 'no TLS 1.2 cipher suite left'],
    [
      ['--tls-min-version', 'VersionTLS11'],
      '--tls-min-version (SANDBOX_INJECTOR_TLS_MIN_VERSION): must be equal to one of the allowed values (VersionTLS12, VersionTLS13)',
    ],
  ])('refuses TLS options %j, saying why', (argv, expected) => {
    const problems = problemsOf(argv).join('\n');
    expect(problems).toContain(expected);
    if (argv[0] === '--tls-cipher-suites')
      expect(problems).toContain('--tls-cipher-suites (SANDBOX_INJECTOR_TLS_CIPHER_SUITES): ');
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(options([]))).toBe(true);
  });

  it('reads env vars, and flags win over them', () => {
    const env = { SANDBOX_INJECTOR_PORT: '9443', SANDBOX_INJECTOR_LOG_LEVEL: 'debug', SANDBOX_INJECTOR_HOST: '::' };
    expect(options([], env)).toMatchObject({ port: 9443, logLevel: 'debug', host: '::' });
    expect(options(['--port', '10443', '--log-level=warn'], env)).toMatchObject({ port: 10443, logLevel: 'warn' });
  });

  it('keeps 0 as a value: port 0 picks a free port, metrics port 0 disables', () => {
    expect(options(['--port', '0', '--metrics-port', '0'])).toMatchObject({ port: 0, metricsPort: 0 });
    expect(options([], { SANDBOX_INJECTOR_METRICS_PORT: '0' }).metricsPort).toBe(0);
  });

  it('treats an empty env var as unset', () => {
    const parsed = options([], { SANDBOX_INJECTOR_PORT: '', SANDBOX_INJECTOR_TLS_CERT_FILE: '' });
    expect(parsed.port).toBe(8443);
    expect(parsed).not.toHaveProperty('tlsCertFile');
  });

  it('takes the TLS files together, and the client CA on its own', () => {
    const parsed = options(['--tls-cert-file', 'a.crt', '--tls-key-file', 'a.key', '--tls-client-ca-file', 'ca.crt']);
    expect(parsed).toMatchObject({ tlsCertFile: 'a.crt', tlsKeyFile: 'a.key', tlsClientCaFile: 'ca.crt' });
  });

  it.each([
    [['--port', '70000'], '--port (SANDBOX_INJECTOR_PORT): must be <= 65535'],
    [['--port', 'http'], '--port (SANDBOX_INJECTOR_PORT): must be integer'],
    [['--metrics-port=-1'], '--metrics-port (SANDBOX_INJECTOR_METRICS_PORT): must be >= 0'],
    [['--log-level', 'loud'], '--log-level (SANDBOX_INJECTOR_LOG_LEVEL): must be equal to one of the allowed values'],
    [['--tls-cert-file', 'a.crt'], 'must be given together'],
    [['--port', '9000', '--metrics-port', '9000'], '--metrics-port (SANDBOX_INJECTOR_METRICS_PORT) must differ'],
    [['--config-file', ''], '--config-file (SANDBOX_INJECTOR_CONFIG_FILE): must NOT have fewer than 1 characters'],
    [['--shutdown-timeout', '0s'], '--shutdown-timeout (SANDBOX_INJECTOR_SHUTDOWN_TIMEOUT): must be at least 1s'],
  ])('refuses %j, naming the flag and its env var', (argv, expected) => {
    expect(problemsOf(argv).join('\n')).toContain(expected);
  });

  it('names the env var when the bad value came from the environment', () => {
    expect(problemsOf([], { SANDBOX_INJECTOR_PORT: 'abc' })).toEqual([
      '--port (SANDBOX_INJECTOR_PORT): must be integer',
    ]);
  });

  it('reports every problem at once', () => {
    expect(problemsOf(['--port', 'x', '--log-level', 'y'])).toHaveLength(2);
  });

  it('refuses unknown flags and positionals', () => {
    expect(problemsOf(['--prot', '1'])[0]).toMatch(/Unknown option '--prot'/);
    expect(problemsOf(['extra'])[0]).toMatch(/positional/i);
  });

  it('answers --help, and the usage lists every flag with its env var', () => {
    expect(parseServeOptions(['--help'], {})).toEqual({ kind: 'help' });
    const usage = serveUsage();
    for (const flag of ['--port', '--metrics-port', '--config-file', '--tls-client-ca-file', '--log-level', '--host']) {
      expect(usage).toContain(flag);
    }
    expect(usage).toContain('SANDBOX_INJECTOR_TLS_CERT_FILE');
    expect(usage).toContain('[default: 8443]');
  });
});
