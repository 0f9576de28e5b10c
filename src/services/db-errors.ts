// PostgreSQL error codes, as both pg and PGlite report them (error.code).
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
