// Errors of the first-party JSON endpoints: `{ "error": "CODE", "message": "...", "details"?: [...] }`.
// Protocol endpoints get their own OAuthError (RFC 6749 §5.2) in a later module.

export interface FieldProblem {
  field: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: FieldProblem[],
  ) {
    super(message);
    this.name = 'AppError';
  }

  toJSON() {
    return { error: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) };
  }
}

export const validationError = (details: FieldProblem[]) =>
  new AppError(
    400,
    'VALIDATION_ERROR',
    details.length === 1 ? `${details[0]!.field}: ${details[0]!.message}` : `${details.length} fields are invalid`,
    details,
  );

export const notFound = (code: string, message: string) => new AppError(404, code, message);
export const conflict = (code: string, message: string) => new AppError(409, code, message);
