import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../src/worker/ports';
import { waitFor } from './wait';

/** Debian's nginx (`tools/scripts/ensure-deps.sh --test` installs it), or null without it. */
export function nginxPath(): string | null {
  for (const candidate of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export type Certificates = {
  /** The CA that signed the server's and the client's certificates. */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Another CA, and a client certificate it signed: trusted by nobody here. */
  otherCa: string;
  otherClientCert: string;
  otherClientKey: string;
};

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA's key and self-signed certificate, `<name>.pem` and `<name>.key` in `dir`. */
function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  ]);
}

/** A leaf certificate `<name>.pem` (and its key) signed by the CA `ca`, with `<name>.ext`. */
function makeLeaf(dir: string, name: string, ca: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
}

/**
 * Certificates made with openssl in `dir` for one test run: a CA, a server certificate for
 * 127.0.0.1 and localhost, a client certificate, and another CA with a client certificate of its
 * own. Nothing is committed: each run makes its own.
 */
export async function makeCertificates(dir: string): Promise<Certificates> {
  await mkdir(dir, { recursive: true });
  makeCa(dir, 'ca');
  makeCa(dir, 'other-ca');
  const leaves: [string, string, string][] = [
    ['server', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', 'ca', 'extendedKeyUsage=clientAuth\n'],
    ['other-client', 'other-ca', 'extendedKeyUsage=clientAuth\n'],
  ];
  for (const [name, ca, extensions] of leaves) {
    await writeFile(path.join(dir, `${name}.ext`), extensions);
    makeLeaf(dir, name, ca);
  }
  const at = (file: string) => path.join(dir, file);
  return {
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    otherCa: at('other-ca.pem'),
    otherClientCert: at('other-client.pem'),
    otherClientKey: at('other-client.key'),
  };
}

export type TlsTerminator = {
  /** `127.0.0.1:port` of the mutual TLS listener: a client certificate of `ca` is required. */
  mtlsAddress: string;
  /** `127.0.0.1:port` of the TLS listener that requires `authorization: Bearer <apiKey>`. */
  apiKeyAddress: string;
  /** One line per call the API-key listener answered: `<status> "<authorization>" <uri>`. */
  apiKeyCalls: () => Promise<string[]>;
  stop: () => Promise<void>;
};

/**
 * nginx's gRPC proxy in front of a plaintext Temporal (`upstream`), as a child of the test (no
 * daemon, no master, everything in `dir`): the TLS terminator a secured Temporal presents.
 */
export async function startTlsTerminator(options: {
  nginx: string;
  dir: string;
  upstream: string;
  certificates: Certificates;
  apiKey: string;
}): Promise<TlsTerminator> {
  const { dir, certificates: c } = options;
  const [mtlsPort, apiKeyPort] = [await freePort(), await freePort()];
  const at = (file: string) => path.join(dir, file);
  const calls = at('api-key-calls.log');
  await writeFile(
    at('nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
pid ${at('nginx.pid')};
error_log ${at('error.log')} warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${at('body')};
  proxy_temp_path ${at('proxy')};
  fastcgi_temp_path ${at('fastcgi')};
  uwsgi_temp_path ${at('uwsgi')};
  scgi_temp_path ${at('scgi')};
  log_format calls '$status "$http_authorization" $request_uri';
  client_max_body_size 0;
  grpc_read_timeout 300s;
  grpc_send_timeout 300s;
  ssl_certificate ${c.serverCert};
  ssl_certificate_key ${c.serverKey};
  server {
    listen 127.0.0.1:${mtlsPort} ssl http2;
    ssl_client_certificate ${c.ca};
    ssl_verify_client on;
    location / { grpc_pass grpc://${options.upstream}; }
  }
  server {
    listen 127.0.0.1:${apiKeyPort} ssl http2;
    access_log ${calls} calls;
    location / {
      if ($http_authorization != "Bearer ${options.apiKey}") { return 403; }
      grpc_pass grpc://${options.upstream};
    }
  }
}
`,
  );
  let output = '';
  const child: ChildProcess = spawn(
    options.nginx,
    ['-p', dir, '-c', at('nginx.conf'), '-e', at('error.log')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  const listening = await waitFor(
    async () => child.exitCode !== null || (await accepts(mtlsPort)),
    10_000,
    100,
  );
  if (!listening || child.exitCode !== null) {
    await stop();
    const log = await readFile(at('error.log'), 'utf8').catch(() => '');
    throw new Error(`nginx did not start:\n${output}\n${log}`);
  }
  return {
    mtlsAddress: `127.0.0.1:${mtlsPort}`,
    apiKeyAddress: `127.0.0.1:${apiKeyPort}`,
    apiKeyCalls: async () =>
      (await readFile(calls, 'utf8').catch(() => '')).split('\n').filter(Boolean),
    stop,
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
