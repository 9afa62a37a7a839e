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
