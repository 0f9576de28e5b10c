// The logging services do, in pino's call shapes: Fastify's logger (app.log) is one as it stands, so
// services log without depending on Fastify.
type LogFn = {
  (obj: object, msg?: string): void;
  (msg: string): void;
};

export interface ServiceLog {
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}
