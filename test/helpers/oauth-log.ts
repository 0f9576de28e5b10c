// The "oauth error" lines a refused protocol request writes (plugins/infra/error-handlers.ts logOAuthError),
// found by the response's request id among the log lines a test app captured (test/helpers/app.ts).
export interface OAuthErrorLine {
  level: number;
  reqId: string;
  oauthError: string;
  error_description: string;
  detail?: string;
}

export function oauthErrorLines(
  logs: { lines: string[] },
  res: { headers: Record<string, unknown> },
): OAuthErrorLine[] {
  const id = res.headers['x-request-id'];
  return logs.lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.reqId === id && line.msg === 'oauth error') as unknown as OAuthErrorLine[];
}
