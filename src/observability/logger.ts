import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * Structured JSON logs. Credentials and secrets never reach a log line: the paths below are
 * censored wherever they appear (request headers, bodies, errors).
 */
export const REDACT_PATHS = [
  'req.headers["api-key"]',
  'req.headers["secret-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["api-key"]',
  'headers["secret-key"]',
  '*.api_key',
  '*.secret_key',
  '*.secret',
  '*.password',
  'api_key',
  'secret_key',
  'secret',
  'password',
];

// Header names that may carry a credential, whatever a client calls them (`x-api-key`,
// `api_key`, `x-secret-key`, ...): a misnamed credential header is still a credential.
const SENSITIVE_HEADER = /secret|api[-_]?key|token|auth|cookie|passw|signature|session/i;

/** A copy of request headers fit for a log line: credential-like values replaced. */
export function redactHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = SENSITIVE_HEADER.test(name) ? '[REDACTED]' : value;
  }
  return out;
}

/** Query parameters whose values are personal data (users' search filters): never logged. */
const PERSONAL_QUERY_PARAMS = new Set(['q', 'email', 'phone_number']);

/** A request URL fit for a log line: the values of personal-data query parameters replaced. */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const pairs = url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals < 0 ? pair : pair.slice(0, equals);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = rawName;
      }
      return PERSONAL_QUERY_PARAMS.has(name) ? `${rawName}=[REDACTED]` : pair;
    });
  return `${url.slice(0, at)}?${pairs.join('&')}`;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ fd: 2, sync: false }),
  );
}
