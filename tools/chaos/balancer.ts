import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { portInUse, waitFor } from '../harness/processes';

/** Debian's nginx (`apt-get install nginx-light`), which the split shape puts before its APIs. */
export const NGINX = '/usr/sbin/nginx';

/** Why the split shape cannot run here, or null when nginx is installed. */
export function balancerMissing(): string | null {
  return existsSync(NGINX)
    ? null
    : `nginx is not installed at ${NGINX} (apt-get install nginx-light): the split shape runs its APIs behind it`;
}

export type Balancer = {
  url: string;
  pid: number;
  running: () => boolean;
  /** How many answered requests each upstream port answered (the last one tried), from its log. */
  answeredBy: () => Promise<Map<number, number>>;
  /** SIGTERM (nginx's fast shutdown), then SIGKILL; resolves once it has exited. */
  stop: () => Promise<void>;
};

/**
 * nginx before the APIs, two ports an API (its replacement's on the other) so that the upstream
 * list never changes; what it passes on and why: docs/testing.md, "Rolling restarts".
 */
export function balancerConfig(options: { dir: string; port: number; upstreams: number[] }) {
  const { dir, port, upstreams } = options;
  return `daemon off;
master_process off;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log ${path.join(dir, 'error.log')} warn;
events { worker_connections 2048; }
http {
  log_format upstream '$status $upstream_addr';
  access_log ${path.join(dir, 'access.log')} upstream;
  client_body_temp_path ${path.join(dir, 'body')};
  proxy_temp_path ${path.join(dir, 'proxy')};
  upstream engine {
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=0;`).join('\n')}
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 20m;
    location / {
      proxy_pass http://engine;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_next_upstream error timeout http_502 http_503;
      proxy_next_upstream_tries ${upstreams.length * 2};
      proxy_connect_timeout 2s;
      proxy_read_timeout 60s;
      proxy_buffering off;
    }
  }
}
`;
}

/** nginx as a child process (one process, no daemon) on `port`, its files under `dir`. */
export async function startBalancer(options: {
  dir: string;
  port: number;
  upstreams: number[];
}): Promise<Balancer> {
  const missing = balancerMissing();
  if (missing) throw new Error(missing);
  const { dir, port } = options;
  await mkdir(dir, { recursive: true });
  const conf = path.join(dir, 'nginx.conf');
  await writeFile(conf, balancerConfig(options));
  const child = spawn(NGINX, ['-p', dir, '-c', conf, '-e', path.join(dir, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      output += error.message;
      resolve();
    });
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  const killAtExit = () => child.kill('SIGKILL');
  process.once('exit', killAtExit);
  void exited.then(() => process.off('exit', killAtExit));
  const stop = async () => {
    if (!running()) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 15_000;
  while (running() && Date.now() < deadline && !(await portInUse(port))) {
    await waitFor(() => !running(), 100);
  }
  if (!running() || !(await portInUse(port))) {
    await stop();
    const log = await readFile(path.join(dir, 'error.log'), 'utf8').catch(() => '');
    throw new Error(`nginx did not start:\n${output}${log}`);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid ?? 0,
    running,
    answeredBy: async () => {
      const counts = new Map<number, number>();
      const log = await readFile(path.join(dir, 'access.log'), 'utf8').catch(() => '');
      for (const line of log.split('\n')) {
        // "200 127.0.0.1:4001, 127.0.0.1:4003": the last server tried answered.
        const last = /:(\d+)\s*$/.exec(line);
        if (last) counts.set(Number(last[1]), (counts.get(Number(last[1])) ?? 0) + 1);
      }
      return counts;
    },
    stop,
  };
}
