import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigurationError, loadConfig, startFailure } from '../../src/config';
import { sdkConnectionOptions, temporalConnectionOptions } from '../../src/temporal/connection';
import { makeCertificates, type Certificates } from '../support/tls-terminator';

let dir = '';
let certs: Certificates;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'temporal-tls-config-'));
  certs = await makeCertificates(dir);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The one-line message a process prints for `env`, or null when the configuration loads. */
function refusal(env: Record<string, string>): string | null {
  try {
    loadConfig(env);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return startFailure(error);
  }
}

describe('the Temporal TLS settings', () => {
  it('connects in plaintext without any of them', () => {
    const options = temporalConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }));
    expect(sdkConnectionOptions(options)).toEqual({ address: 'temporal:7233' });
  });

  it('reads the certificate, the key and the CA once, as the bytes of the files', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'payments-live',
      TEMPORAL_TLS_CERT: certs.clientCert,
      TEMPORAL_TLS_KEY: certs.clientKey,
      TEMPORAL_TLS_CA: certs.ca,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    const options = temporalConnectionOptions(config);
    expect(options.namespace).toBe('payments-live');
    expect(sdkConnectionOptions(options)).toEqual({
      address: 'temporal.internal:7233',
      tls: {
        clientCertPair: { crt: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
        serverRootCACertificate: readFileSync(certs.ca),
        serverNameOverride: 'localhost',
      },
    });
  });

  it('turns TLS on with the system roots for an API key alone', () => {
    const config = loadConfig({ TEMPORAL_API_KEY: 'key-1' });
    expect(sdkConnectionOptions(temporalConnectionOptions(config))).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
      apiKey: 'key-1',
    });
  });

  it('refuses in one line naming the setting: unreadable, not PEM, half a pair, another key', () => {
    const notPem = path.join(dir, 'not-pem.txt');
    writeFileSync(notPem, 'hello');
    const missing = path.join(dir, 'missing.pem');
    expect(refusal({ TEMPORAL_TLS_CA: missing })).toBe(
      `Invalid configuration: TEMPORAL_TLS_CA: cannot read ${missing}: ENOENT`,
    );
    expect(refusal({ TEMPORAL_TLS_CA: notPem })).toMatch(
      new RegExp(`^Invalid configuration: TEMPORAL_TLS_CA: ${notPem} is not valid PEM: [^\\n]+$`),
    );
    expect(refusal({ TEMPORAL_TLS_CERT: certs.clientCert })).toBe(
      'Invalid configuration: TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT',
    );
    expect(refusal({ TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: notPem })).toMatch(
      /^Invalid configuration: TEMPORAL_TLS_KEY: .+ is not valid PEM: [^\n]+$/,
    );
    expect(
      refusal({ TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: certs.otherClientKey }),
    ).toBe(
      `Invalid configuration: TEMPORAL_TLS_KEY: ${certs.otherClientKey} is not the key of TEMPORAL_TLS_CERT ${certs.clientCert}`,
    );
  });
});
