// pino options: secrets never reach the log. Headers are not logged by Fastify's request serializer;
// what could still carry a secret (URLs with codes or tokens, objects we log) is redacted here.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { LoggerOptions } from 'pino';

const SECRET_FIELDS = [
  'password',
  'newPassword',
  'password_hash',
  'token',
  'code',
  'code_verifier',
  'access_token',
  'refresh_token',
  'id_token',
  'id_token_hint',
  'client_secret',
  'secretKey',
  'authorization',
  'cookie',
];

export const REDACT_PATHS = [
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
  ...SECRET_FIELDS.map((f) => `*.*.${f}`),
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.headers["set-cookie"]',
];

const SECRET_QUERY = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));

/** Masks secret query values and the token segment of reset links. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  let path = q === -1 ? url : url.slice(0, q);
  path = path.replace(/(\/reset-password\/)[^/?#]+/, '$1[REDACTED]');
  if (q === -1) return path;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = decodeURIComponentSafe(eq === -1 ? pair : pair.slice(0, eq)).toLowerCase();
      return eq !== -1 && SECRET_QUERY.has(name) ? `${pair.slice(0, eq)}=[REDACTED]` : pair;
    });
  return `${path}?${params.join('&')}`;
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      // Never the headers: they carry Authorization and cookies.
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: typeof request.url === 'string' ? redactUrl(request.url) : undefined,
          host: request.host,
          remoteAddress: request.ip,
          userAgent: request.headers?.['user-agent'],
        };
      },
    },
  };
}

// pino's default level values.
const VALUES: Record<string, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Infinity,
};
type LogFn = (...args: unknown[]) => void;

/** A request's logger that makes its pino child only when a call at an enabled level comes. */
class LazyChildLogger {
  #child: FastifyBaseLogger | undefined;
  #threshold: number;
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Record<string, unknown>,
    private readonly options: { level?: string },
  ) {
    this.#threshold = VALUES[options.level ?? parent.level] ?? 0;
  }
  #real(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }
  #log(value: number, name: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]) {
    if (this.#child) return (this.#child[name] as LogFn)(...args);
    if (value >= this.#threshold) (this.#real()[name] as LogFn)(...args);
  }
  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }
  set level(value: string) {
    this.#real().level = value; // from now on every call goes to the child, which applies its level
  }
  fatal(...args: unknown[]) {
    this.#log(60, 'fatal', args);
  }
  error(...args: unknown[]) {
    this.#log(50, 'error', args);
  }
  warn(...args: unknown[]) {
    this.#log(40, 'warn', args);
  }
  info(...args: unknown[]) {
    this.#log(30, 'info', args);
  }
  debug(...args: unknown[]) {
    this.#log(20, 'debug', args);
  }
  trace(...args: unknown[]) {
    this.#log(10, 'trace', args);
  }
  silent() {}
  child(bindings: Record<string, unknown>, options?: object) {
    return this.#real().child(bindings, options);
  }
}

/**
 * Fastify's childLoggerFactory: the request's logger is made only when something is logged at an
 * enabled level. pino serializes (and redacts) a child's bindings when the child is made, which on a
 * route that logs nothing (every request at LOG_LEVEL=warn) was a tenth of the request's CPU.
 */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: { level?: string },
): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}

// ---------------------------------------------------------------------------------- development output
export type LogFormat = 'auto' | 'pretty' | 'json';

/** LOG_FORMAT: pretty lines on a developer's terminal (auto), JSON lines elsewhere (production, tests, pipes). */
export function usePrettyLogs(format: LogFormat, env: string, tty: boolean): boolean {
  if (format !== 'auto') return format === 'pretty';
  return env === 'development' && tty;
}

type Paint = (text: string) => string;
interface Colors {
  gray: Paint;
  red: Paint;
  yellow: Paint;
  green: Paint;
  cyan: Paint;
  bgRed: Paint;
}
// pino-pretty's own filter, for the parts of a line this function writes itself.
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
const UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
const LABELS: Record<number, string> = { 10: 'TRACE ', 20: 'DEBUG ', 40: 'WARN ', 50: 'ERROR ', 60: 'FATAL ' };

/**
 * One short line: `12:03:04 GET /login/sign-in 200 3.1ms` for a request, `12:03:04 WARN message` otherwise;
 * warnings yellow, errors red. The record was redacted by pino before it got here.
 */
export function prettyMessage(log: Record<string, unknown>, colors: Colors): string {
  const level = typeof log.level === 'number' ? log.level : 30;
  const paint: Paint =
    level >= 60 ? colors.bgRed : level >= 50 ? colors.red : level >= 40 ? colors.yellow : (s: string) => s;
  const d = new Date(typeof log.time === 'number' ? log.time : Date.now());
  const clock = [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  let text = typeof log.msg === 'string' ? log.msg.replace(UNSAFE, '') : '';
  const req = log.req as { method?: unknown; url?: unknown } | undefined;
  if (req && typeof req === 'object' && typeof req.method === 'string') {
    const parts = [req.method, String(req.url ?? '').replace(UNSAFE, '')];
    const status = (log.res as { statusCode?: unknown } | undefined)?.statusCode;
    if (typeof status === 'number') {
      const color =
        status >= 500 ? colors.red : status >= 400 ? colors.yellow : status >= 300 ? colors.cyan : colors.green;
      parts.push(color(String(status)));
    }
    if (typeof log.responseTime === 'number') parts.push(`${log.responseTime.toFixed(1)}ms`);
    text = parts.join(' ') + (text === 'request completed' ? '' : ` ${text}`);
  }
  return `${colors.gray(clock)} ${paint(`${LABELS[level] ?? ''}${text}`)}`;
}

/**
 * Where pino writes in pretty mode (pino-pretty, loaded only then): each JSON line, already redacted,
 * becomes prettyMessage's line plus the record's other fields on the same line (an error's stack below).
 */
export async function prettyDestination(
  out: { write(text: string): unknown },
  colorize: boolean,
): Promise<{ write(line: string): void }> {
  const { prettyFactory } = await import('pino-pretty');
  const pretty = prettyFactory({
    colorize,
    customColors: 'message:reset',
    singleLine: true,
    ignore: 'time,level,pid,hostname,reqId,traceId,req,res,responseTime',
    messageFormat: (log, _key, _label, { colors }) => prettyMessage(log, colors as unknown as Colors),
  });
  return {
    write(line: string) {
      const text = pretty(line);
      if (text) out.write(text);
    },
  };
}
